"""The Chinese edition's translations checked, so they cannot go stale silently.

    python -m helpers.workbook translations update   # after an English edit (make translations): new and changed messages
    python -m helpers.workbook translations check [FILE.po ...]

``update`` first brings the catalogs up to date with the English (:mod:`helpers.workbook.catalogs`); ``check`` lists every
message that is untranslated or fuzzy, and every translation that drops or changes an inline code span,
a number, a URL or a link target of its English, or that gives a glossary term another Chinese word than
the glossary's (:func:`helpers.workbook.glossary.terms`). Both exit 1 while a problem remains (:mod:`helpers.workbook.commands`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Message

from helpers.paths import display_path
from helpers.workbook import glossary
from helpers.workbook.catalogs import catalogs, read
from helpers.workbook.glossary import Term

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


