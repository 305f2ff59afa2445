"""The translated copies ``make lab ARGS="--lang zh_CN"`` opens: the notebooks with their markdown from the ``.po`` files.

Code cells and their outputs are the stored ones. The copies are built from the stored notebooks each time
(:func:`build_translated_copies`) and never edited: change the English or the ``.po`` file, then build again.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook.catalogs import read
from helpers.workbook.editions import TRANSLATED_LANGUAGE, TRANSLATIONS_DIR
from helpers.workbook.markdown import split_fenced

#: What may stand before a message on its line: indentation, a heading's marks, a list or quote marker, a table's bar.
_BEFORE = r"(?P<before>^[ \t]*(?:(?:#{1,6}|[-*+]|\d+[.)]|>)[ \t]+)*|\|[ \t]*)"
#: What may follow a message: the end of its line, or a table cell's bar.
_AFTER = r"(?=[ \t]*(?:\||$))"
#: A Markdown image, ``![alt text](images/NAME.png)``: Sphinx extracts its alt text as a message of its own, beside its paragraph's.
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")


@functools.cache  # a notebook tries every message of its catalog on every markdown cell: compile each once
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
        first_word = msgid.split(maxsplit=1)[0] if msgid.strip() else ""
        pattern, msgstr = _pattern(msgid), messages[msgid].strip()
        for index in range(0, len(parts), 2):  # the odd parts are fenced code
            if first_word not in parts[index]:  # cannot match: skip the regular expression
                continue
            parts[index], count = pattern.subn(_keeping_before(msgstr), parts[index])
            if count:
                used.add(msgid)
    used |= {alt for msgid in used for alt in _IMAGE.findall(msgid) if alt in messages}  # translated with its image's paragraph
    return "".join(parts), used


def translated_messages(page: str, language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> dict[str, str]:
    """A page's translated messages (msgid → msgstr), untranslated and fuzzy ones left out."""
    path = locales / language / "LC_MESSAGES" / f"{page}.po"
    if not path.is_file():
        return {}
    return {str(message.id): str(message.string) for message in read(path) if message.id and message.string and not message.fuzzy}


def translate_notebook(path: Path, language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> tuple[object, set[str]]:
    """A translated copy of a notebook: its markdown cells and its figures' alt texts from the ``.po`` file, code and outputs as stored.

    Returns the notebook and the messages of its ``.po`` file that no markdown cell or alt text held (none when the
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
        elif (alt := cell.metadata.get("mystnb", {}).get("image", {}).get("alt")) in messages:  # a figure's description
            cell.metadata["mystnb"]["image"]["alt"] = messages[alt]
            used.add(alt)
    notebook.metadata["language_info_translation"] = language
    return notebook, set(messages) - used


def build_translated_copies(out_dir: Path, language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> list[Path]:
    """Write a translated copy of every chapter (and of the seed map and glossary) into ``out_dir``; return the notebooks' paths.

    The copies are built from the stored notebooks each time and never edited: change the English or the
    ``.po`` file, then build again.
    """
    import shutil

    import nbformat

    from helpers.workbook import executor
    from helpers.workbook.book import EXTRA_PAGES, IMAGES

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
    if (NOTEBOOKS_DIR / IMAGES).is_dir():  # the chapters' images, so that images/NAME.png resolves beside the copies
        shutil.copytree(NOTEBOOKS_DIR / IMAGES, out_dir / IMAGES, dirs_exist_ok=True)
    return written
