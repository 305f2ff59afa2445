"""Reading the Markdown the workbook is written in: headings outside fenced code, and the sections they fold.

The one fence-aware scanner is :func:`prose_lines` (which lines of a Markdown text are prose, not fenced
code); :func:`heading_levels` reads headings through it, and
:func:`split_fenced` cuts a text into prose and fenced blocks for code that rewrites the prose only
(:func:`helpers.workbook.translated_copies.translate_markdown`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from helpers.workbook.editions import FOLDED

_HEADING = re.compile(r"^(#{1,6})\s")
_FENCE = "```"
#: A whole fenced block: from a line opening a fence to the line closing it.
_FENCED_BLOCK = re.compile(r"(^[ \t]*```.*?^[ \t]*```[ \t]*$)", re.MULTILINE | re.DOTALL)


def prose_lines(markdown: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``markdown`` with whether it is prose: False for a fence line and the code between two fences."""
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith(_FENCE):
            fenced = not fenced
            yield line, False
        else:
            yield line, not fenced


def split_fenced(markdown: str) -> list[str]:
    """``markdown`` cut into prose and fenced blocks, alternating: the even items are prose, the odd ones fenced code."""
    return _FENCED_BLOCK.split(markdown)


def heading_levels(cell: Any) -> list[int]:
    """The level of each Markdown heading in a notebook cell (``## x`` is 2), outside fenced code; none for a code cell."""
    if cell.cell_type != "markdown":
        return []
    return [len(match.group(1)) for line, prose in prose_lines(cell.source) if prose and (match := _HEADING.match(line))]


def folded_sections(notebook: Any) -> list[tuple[int, int]]:
    """``(first, last)`` cell indices of the body of each section whose heading is stored folded.

    A heading cell whose metadata holds ``jp-MarkdownHeadingCollapsed: true`` (:data:`~helpers.workbook.editions.FOLDED`)
    opens folded in JupyterLab, hiding every cell up to the next heading of the same or a higher level; the book
    hides the same cells in a closed ``<details>`` under the heading. A folded heading with nothing
    under it gives no section.
    """
    cells = notebook.cells
    sections = []
    for start, cell in enumerate(cells):
        levels = heading_levels(cell)
        if not (levels and cell.metadata.get(FOLDED)):
            continue
        end = start + 1
        while end < len(cells) and not any(level <= levels[0] for level in heading_levels(cells[end])):
            end += 1
        if end > start + 1:
            sections.append((start + 1, end - 1))
    return sections
