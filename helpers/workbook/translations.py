"""The Chinese edition's translations: gettext catalogs kept up to date, and checked so they cannot go stale silently.

    python -m helpers.workbook translations update   # after an English edit (make translations): new and changed messages
    python -m helpers.workbook translations check [FILE.po ...]

``update`` extracts the book's messages from the stored notebooks and pages (``sphinx-build -b gettext``)
and merges them into ``notebooks/locales/zh_CN/LC_MESSAGES/*.po`` with ``sphinx-intl update``: a new
message arrives untranslated, a changed one keeps its old translation marked fuzzy. ``check`` lists every
message that is untranslated or fuzzy, and every translation that drops or changes an inline code span,
a number, a URL or a link target of its English, or that gives a glossary term another Chinese word than
the glossary's (:func:`helpers.workbook.glossary.terms`). Both exit 1 while a problem remains (:mod:`helpers.workbook.commands`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po

from helpers.paths import NOTEBOOKS_DIR, display_path
from helpers.workbook import glossary
from helpers.workbook.editions import TRANSLATED_LANGUAGE, TRANSLATIONS_DIR
from helpers.workbook.glossary import Term
from helpers.workbook.markdown import split_fenced

_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
_URL = re.compile(r"https?://[^\s)>\]`，。：；！？）」]+?(?=[.,:;!?]*(?:[\s)>\]`，。：；！？）」]|$))")
#: A number in digits: a whole word, or the number of a ratio such as ``30.3x``; ``v2.16`` or ``3rd`` hold none.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?=x\b|[^\w.]|\.(?!\d)|$)")
#: Where a glossary term's English form counts: not inside a dotted or called name (``optimizer.iterations``, ``tf.losses``).
_TERM_BEFORE, _TERM_AFTER = r"(?<![\w\-./(])", r"(?:s|es)?(?![\w\-(/]|\.\w)"


@dataclass(frozen=True)
class Problem:
    """One message that needs a translator: the catalog, the start of its English, and what is wrong."""

    catalog: Path
    msgid: str
    reason: str

    def __str__(self) -> str:
        start = " ".join(self.msgid.split())
        return f"{display_path(self.catalog, keep_outside=True)}: {self.reason}: \"{start[:70]}{'...' if len(start) > 70 else ''}\""


def catalogs(language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> list[Path]:
    """Every ``.po`` file of ``language``, sorted."""
    return sorted((locales / language / "LC_MESSAGES").glob("*.po"))


def read(path: Path) -> Catalog:
    """A ``.po`` file as babel's catalog."""
    with path.open("rb") as handle:
        return read_po(handle)


def code_spans(text: str) -> list[str]:
    """The inline code spans of Markdown text, backticks included, in order."""
    return [match.group(0) for match in _CODE.finditer(text)]


def _prose(text: str) -> str:
    """Text without its code spans and link targets (what a translator rewrites)."""
    return _LINK_TARGET.sub("]()", _CODE.sub(" ", text))


def link_targets(text: str) -> list[str]:
    """The targets of Markdown links ``[text](target)``, outside code spans."""
    return _LINK_TARGET.findall(_CODE.sub(" ", text))


def urls(text: str) -> list[str]:
    """The URLs in text, outside code spans (a link's target counts)."""
    return _URL.findall(_CODE.sub(" ", text))


def numbers(text: str) -> list[str]:
    """The numbers written in digits in the prose (not in code spans or link targets)."""
    return _NUMBER.findall(_URL.sub(" ", _prose(text)))


def _missing(source: Iterable[str], translation: Iterable[str]) -> list[str]:
    return sorted((Counter(source) - Counter(translation)).elements())


def message_problems(msgid: str, msgstr: str) -> list[str]:
    """What a translation drops or changes of its English: code spans, URLs, link targets, numbers."""
    problems = []
    if missing := _missing(code_spans(msgid), code_spans(msgstr)):
        problems.append(f"code span {', '.join(missing)} changed or missing")
    if extra := _missing(code_spans(msgstr), code_spans(msgid)):
        problems.append(f"code span {', '.join(extra)} not in the English")
    if missing := _missing(link_targets(msgid), link_targets(msgstr)):
        problems.append(f"link target {', '.join(missing)} changed or missing")
    if missing := _missing(urls(msgid), urls(msgstr)):
        problems.append(f"URL {', '.join(missing)} changed or missing")
    if missing := _missing(numbers(msgid), numbers(msgstr)):
        problems.append(f"number {', '.join(missing)} changed or missing")
    return problems


def term_problems(msgid: str, msgstr: str, terms: Sequence[Term] | None = None) -> list[str]:
    """Glossary terms of the English that the translation gives under another word than the glossary's Chinese.

    A term counts where one of its English forms (a plural too) stands in the prose, outside code spans,
    link targets and URLs, and not inside a dotted or called name (``optimizer.iterations``) or inside a
    longer term's form ("graph" in "object graph"); the translation must then hold one of the term's
    Chinese words.
    """
    english, chinese = _URL.sub(" ", _prose(msgid)), _prose(msgstr)
    spans: list[tuple[int, int, Term]] = []  # (start, end, term) of every form found, longest forms first
    all_terms = list(glossary.terms() if terms is None else terms)
    forms = sorted(((form, term) for term in all_terms for form in term.english), key=lambda pair: -len(pair[0]))
    for form, term in forms:
        for match in re.finditer(_TERM_BEFORE + re.escape(form) + _TERM_AFTER, english, re.IGNORECASE):
            if not any(start <= match.start() and match.end() <= end and other is not term for start, end, other in spans):
                spans.append((match.start(), match.end(), term))
    found = []
    for term in all_terms:
        # an alternative English form that is a name (logdir) may stay as it is in the translation
        kept = any(" " not in form and form in chinese for form in term.english[1:])
        if any(other is term for _, _, other in spans) and not kept and not any(word in chinese for word in term.chinese):
            found.append(f"'{term.english[0]}' is not translated as the glossary's {' / '.join(term.chinese)}")
    return found


def problems(paths: Sequence[Path] | None = None, *, check_terms: bool = True) -> list[Problem]:
    """Every problem of the given catalogs (default: all of :data:`~helpers.workbook.editions.TRANSLATED_LANGUAGE`)."""
    terms = glossary.terms() if check_terms else []
    found = []
    for path in catalogs() if paths is None else paths:
        for message in read(path):
            if not message.id:
                continue
            found += _problems_of(path, message, terms)
    return found + inconsistencies(catalogs() if paths is None else paths)


def inconsistencies(paths: Sequence[Path]) -> list[Problem]:
    """An English message that several pages share (a heading such as "Setup", a recurring sentence) translated differently.

    Each page after the first whose translation differs from the first page's is named.
    """
    first: dict[str, tuple[Path, str]] = {}
    found = []
    for path in paths:
        for message in read(path):
            if not (message.id and message.string) or message.fuzzy:
                continue
            msgid, msgstr = str(message.id), str(message.string)
            if msgstr == msgid:  # kept as it is on purpose where it stands (the glossary's English term column)
                continue
            earlier = first.setdefault(msgid, (path, msgstr))
            if earlier[1] != msgstr:
                found.append(Problem(path, msgid, f"translated differently in {earlier[0].name} ({earlier[1][:30]}...): use one translation"))
    return found


def _problems_of(path: Path, message: Message, terms: Sequence[Term]) -> list[Problem]:
    msgid, msgstr = str(message.id), str(message.string or "")
    if not msgstr:
        return [Problem(path, msgid, "untranslated")]
    reasons = ["fuzzy: the English changed, check the translation and remove the fuzzy flag"] if message.fuzzy else []
    reasons += message_problems(msgid, msgstr)
    if msgstr != msgid:  # a message kept as it is (code, a name, the glossary's English term column) has no term to translate
        reasons += term_problems(msgid, msgstr, terms)
    return [Problem(path, msgid, reason) for reason in reasons]


def extract(out_dir: Path) -> Path:
    """The book's messages as ``.pot`` files in ``out_dir``, extracted from the stored notebooks and pages."""
    from helpers.workbook import book, executor

    with tempfile.TemporaryDirectory(prefix="workbook-gettext-") as folder:
        sources = Path(folder) / "sources"
        book.stage([book.Chapter(path) for path in executor.notebooks()], sources, notebooks_dir=NOTEBOOKS_DIR)
        book.sphinx("gettext", sources, out_dir, doctrees=Path(folder) / "doctrees")
    return out_dir


def update(locales: Path = TRANSLATIONS_DIR, language: str = TRANSLATED_LANGUAGE) -> None:
    """Merge the messages of today's sources into the catalogs (sphinx-intl: new ones untranslated, changed ones fuzzy)."""
    with tempfile.TemporaryDirectory(prefix="workbook-pot-") as folder:
        pot = extract(Path(folder) / "pot")
        command = [sys.executable, "-m", "sphinx_intl", "update", "-p", str(pot), "-l", language, "-d", str(locales), "-w", "0", "--no-obsolete"]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode:
            raise RuntimeError(f"sphinx-intl update failed: {result.stderr.strip() or result.stdout.strip()}")
        for path in (locales / language / "LC_MESSAGES").glob("*.po"):
            if not (pot / f"{path.stem}.pot").is_file():  # a page that is gone
                path.unlink()
    shutil.rmtree(locales / language / "LC_MESSAGES" / "__pycache__", ignore_errors=True)


#: What may stand before a message on its line: indentation, a heading's marks, a list or quote marker, a table's bar.
_BEFORE = r"(?P<before>^[ \t]*(?:(?:#{1,6}|[-*+]|\d+[.)]|>)[ \t]+)*|\|[ \t]*)"
#: What may follow a message: the end of its line, or a table cell's bar.
_AFTER = r"(?=[ \t]*(?:\||$))"


def _pattern(msgid: str) -> re.Pattern[str]:
    """The message as it may be laid out in Markdown: any run of white space (a line break, indentation) between its words."""
    words = [re.escape(word) for word in msgid.split()]
    return re.compile(_BEFORE + r"\s+".join(words) + _AFTER, re.MULTILINE)


def _keeping_before(translation: str) -> Callable[[re.Match[str]], str]:
    """A replacement for :func:`_pattern`'s match: what stood before the message on its line, then ``translation``."""
    return lambda match: match["before"] + translation


def translate_markdown(source: str, messages: dict[str, str]) -> tuple[str, set[str]]:
    """``source`` with each message replaced by its translation (outside fenced code), and the messages it held.

    Longer messages go first, so a short one (a heading, ``</details>``) cannot match inside a longer one.
    """
    parts = split_fenced(source)
    used: set[str] = set()
    for msgid in sorted(messages, key=len, reverse=True):
        pattern, msgstr = _pattern(msgid), messages[msgid].strip()
        for index in range(0, len(parts), 2):  # the odd parts are fenced code
            parts[index], count = pattern.subn(_keeping_before(msgstr), parts[index])
            if count:
                used.add(msgid)
    return "".join(parts), used


def translated_messages(page: str, language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> dict[str, str]:
    """A page's translated messages (msgid → msgstr), untranslated and fuzzy ones left out."""
    path = locales / language / "LC_MESSAGES" / f"{page}.po"
    if not path.is_file():
        return {}
    return {str(message.id): str(message.string) for message in read(path) if message.id and message.string and not message.fuzzy}


def translate_notebook(path: Path, language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> tuple[object, set[str]]:
    """A translated copy of a notebook: its markdown cells from the ``.po`` file, code cells and outputs as stored.

    Returns the notebook and the messages of its ``.po`` file that no markdown cell held (none when the
    catalog is up to date).
    """
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    messages = translated_messages(path.stem, language, locales)
    used: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source, found = translate_markdown(cell.source, messages)
            used |= found
    notebook.metadata["language_info_translation"] = language
    return notebook, set(messages) - used


def build_translated_copies(out_dir: Path, language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> list[Path]:
    """Write a translated copy of every chapter (and of the seed map and glossary) into ``out_dir``; return the notebooks' paths.

    The copies are built from the stored notebooks each time and never edited: change the English or the
    ``.po`` file, then build again.
    """
    import nbformat

    from helpers.workbook import executor
    from helpers.workbook.book import EXTRA_PAGES

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in executor.notebooks():
        notebook, _ = translate_notebook(path, language, locales)
        target = out_dir / path.name
        nbformat.write(notebook, target)
        written.append(target)
    for name in EXTRA_PAGES:
        source = NOTEBOOKS_DIR / name
        if source.is_file():
            text, _ = translate_markdown(source.read_text(encoding="utf-8"), translated_messages(Path(name).stem, language, locales))
            (out_dir / name).write_text(text, encoding="utf-8")
    return written
