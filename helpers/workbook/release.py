"""The students' copy of a chapter, as a teacher hands it out: a header that says what is graded, by when and how to return it;
no sentence about the solutions it lacks; links that work in its folder.

Each chapter is released alone, in ``release/<chapter>/``, with what its notebook links to (:func:`bundled_files`):
the licences, and the seed map and the glossary (:data:`~helpers.workbook.book.EXTRA_PAGES`). Links to other
chapters cannot resolve there, so :func:`rewrite_links` points them at the served book
(``--book-url URL``: ``URL/<chapter>.html#<heading>``, the book's anchors being JupyterLab's,
:mod:`helpers.workbook.anchors`) or, without one, turns them into plain text that names the chapter. The
bundled seed map and glossary get the same treatment, per chapter: their links to the released chapter stay.

The header (:func:`header_text`) is the notebook's first cell, locked by nbgrader (:mod:`helpers.workbook.course`
writes its metadata): the exercises and their points, the due date and the late policy
(:mod:`helpers.workbook.deadlines`), and how to return the notebook. The settings it states are kept from one
build to the next (:class:`Settings`), so building one chapter again changes nothing the teacher set.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from helpers.failures import UsageError
from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook.book import EXTRA_PAGES, LICENSE_FILES
from helpers.workbook.deadlines import days_to_nothing, local_time
from helpers.workbook.markdown import split_fenced

#: The header cell's id, and its ``grade_id`` for nbgrader.
HEADER_ID = "course-header"
#: The section of ``nbgrader_config.py`` that keeps :attr:`Settings.book_url` for the next build (nbgrader ignores it).
SETTINGS_SECTION = "CourseRelease"
#: The word that clears ``--book-url``.
NO_BOOK_URL = "none"


class Keep(enum.Enum):
    """An option not given: the value the last build set stays."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


@dataclass(frozen=True)
class Settings:
    """What the teacher chooses for the whole course when building it; each stays until changed."""

    late_penalty: float = 0.0  #: percent of a late notebook's score lost per started day late (:func:`helpers.workbook.deadlines.late_penalty`)
    book_url: str = ""  #: where the book's English edition is served (the folder of ``<chapter>.html``); "" for none


def parse_book_url(text: str) -> str:
    """``--book-url``'s value: an http(s) URL without its trailing ``/`` (or ``/index.html``); "" for ``none``; :class:`UsageError` otherwise."""
    url = text.strip()
    if url.lower() == NO_BOOK_URL:
        return ""
    url = url.removesuffix("/index.html").rstrip("/")
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
        raise UsageError(f"--book-url {text!r} is not an http(s) URL: give the address of the book's English edition (https://host/path/en), or none")
    return url


def kept_settings(config: Any, *, late_penalty: float | Keep = KEEP, book_url: str | Keep = KEEP) -> Settings:
    """The settings of a build: each option given, else the one the last build wrote in ``config`` (its ``nbgrader_config.py``), else the default."""
    default = Settings()
    if late_penalty is KEEP:
        late_penalty = float(config.LatePenalty.get("percent_per_day", default.late_penalty)) if "LatePenalty" in config else default.late_penalty
    if book_url is KEEP:
        book_url = str(config[SETTINGS_SECTION].get("book_url", default.book_url)) if SETTINGS_SECTION in config else default.book_url
    return Settings(late_penalty=late_penalty, book_url=book_url)


# --- the header --------------------------------------------------------------------------------------------


def title(notebook: Any) -> str:
    """The chapter's title: its first ``# `` heading (``03 · Gradient clipping``)."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.get("id") != HEADER_ID:
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def late_policy(percent_per_day: float) -> str:
    """The late policy in a sentence, for a student."""
    if percent_per_day <= 0:
        return "Work returned after that time is marked late and keeps its points."
    if percent_per_day >= 100:
        return "Work returned after that time earns no points."
    days = days_to_nothing(percent_per_day) or 1
    examples = [f"{percent_per_day:g}% for a minute late"]
    if days > 2:
        examples.append(f"{2 * percent_per_day:g}% for a day and a minute")
    examples.append(f"all of them after {days - 1} day{'s' if days > 2 else ''}")
    return f"Work returned late loses {percent_per_day:g}% of the points it earns for each day or part of a day past that time: {', '.join(examples)}."


def header_text(name: str, chapter_title: str, exercises: Sequence[tuple[str, int]], due: datetime | None, settings: Settings) -> str:
    """The header of the graded copy of chapter ``name``: ``exercises`` as (name, points), the due date, the late policy, how to return it."""
    rows = [f"| {exercise} | {points} |" for exercise, points in exercises]
    total = sum(points for _, points in exercises)
    when = (
        f"**Due:** {local_time(due)}. {late_policy(settings.late_penalty)}"
        if due is not None
        else "**Due:** no due date is set for this chapter; your teacher will tell you when to return it."
    )
    others = (
        "Links to other chapters open them in the workbook's book."
        if settings.book_url
        else "Where it refers to another chapter, this copy names it: that chapter is not in this folder."
    )
    return "\n".join(
        [
            f"**The graded copy of chapter {chapter_title or name}.** It is the chapter as you know it, without the solutions. "
            "Fill in each exercise's cell: the check below it decides, when your work is graded, whether the exercise earns its points.",
            "",
            "| exercise | points |",
            "|---|---:|",
            *rows,
            f"| **total** | **{total}** |",
            "",
            when,
            "",
            '**Before you return it**, run every cell from the top (*Kernel ▸ Restart Kernel and Run All Cells*) and save. A check says "not yet" '
            "while its exercise is not solved, and nbgrader's *Validate* button fails, naming the exercise.",
            "",
            "**To return it:** if this chapter came from JupyterLab's *Assignments* tab, press *Submit* beside it there. You may submit "
            f"again: your last submission is the one graded, and its time says whether it is late. Otherwise return this file, `{name}.ipynb`, "
            "under its own name.",
            "",
            f"The [seed map](seed_map.md) and the [glossary](glossary.md) are in this folder. {others}",
        ]
    )


# --- links -------------------------------------------------------------------------------------------------

#: An inline link: ``[text](target)``, the target bare (one level of parentheses in it) or in angle brackets; not an image.
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*)\]\((?P<target><[^<>\n]*>|(?:[^()\s]|\([^()\s]*\))+)\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


#: A Markdown image of the chapter's folder of images: ``![alt](images/NAME.png)`` (chapter 06's screenshots).
_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<path>images/[^)\s]+)\)")


def shown_images(notebook: Any) -> list[str]:
    """The images a chapter's markdown cells show from ``notebooks/images/``, as relative paths (``images/NAME.png``), in order."""
    found = [match["path"] for cell in notebook.cells if cell.cell_type == "markdown" for match in _IMAGE.finditer(cell.source)]
    return list(dict.fromkeys(found))


def bundled_files(chapter: str) -> list[str]:
    """The files of ``release/<chapter>/`` a link may point at: the notebook, the licences, the seed map and the glossary."""
    return [f"{chapter}.ipynb", *(path.name for path in LICENSE_FILES), *EXTRA_PAGES]


def _plain(text: str, other: str, before: str) -> str:
    """A link to chapter ``other`` as text that names the chapter: the link's text, with ``(chapter NN)`` unless it or the words before say so."""
    number = match.group(0) if (match := re.match(r"\d+", other)) else other
    named = text.lstrip().startswith(f"{number} ") or re.search(rf"\bchapter {re.escape(number)}\b", before[-40:], re.IGNORECASE)
    return text if named else f"{text} (chapter {number})"


def _link(match: re.Match[str], chapter: str, book_url: str, before: str) -> str:
    text, target = match["text"], match["target"]
    bracketed = target.startswith("<")
    bare = target[1:-1] if bracketed else target
    path, hash_, anchor = bare.partition("#")
    if _SCHEME.match(bare) or not path or path in bundled_files(chapter):
        return match.group(0)  # a URL, a heading of this page, or a file the folder holds
    if not path.endswith(".ipynb"):
        return text  # a file the folder lacks (the repository's): its name stays in the text
    other = Path(path).stem
    if not book_url:
        return _plain(text, other, before)  # no page to point at: the text alone, naming the chapter
    url = f"{book_url}/{other}.html{hash_}{anchor}"
    return f"[{text}]({f'<{url}>' if bracketed else url})"


def rewrite_links(markdown: str, chapter: str, book_url: str = "") -> str:
    """``markdown`` as it reads in ``release/<chapter>/``: links to other chapters at ``book_url`` (or as text naming the chapter),
    links to files the folder lacks as text; links in code (spans, fenced blocks) untouched."""
    parts = split_fenced(markdown)
    for index in range(0, len(parts), 2):  # the odd parts are fenced code
        prose = parts[index]
        code = [span.span() for span in _CODE_SPAN.finditer(prose)]

        def replace(match: re.Match[str], prose: str = prose, code: list[tuple[int, int]] = code) -> str:
            if any(start <= match.start() < end for start, end in code):
                return match.group(0)
            return _link(match, chapter, book_url, prose[: match.start()])

        parts[index] = _LINK.sub(replace, prose)
    return "".join(parts)


def bundled_pages(chapter: str, book_url: str = "", notebooks_dir: Path = NOTEBOOKS_DIR) -> dict[str, str]:
    """The seed map and the glossary (those of ``notebooks_dir`` that exist) as ``release/<chapter>/`` holds them: name → text."""
    pages = {name: notebooks_dir / name for name in EXTRA_PAGES}
    return {name: rewrite_links(path.read_text(encoding="utf-8"), chapter, book_url) for name, path in pages.items() if path.is_file()}
