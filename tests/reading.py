"""What a reader meets in a chapter, measured: visible code and its share of checks, cell length, prose, figures.

The definitions are those of the issues' measuring tool (``../shared/tools/reader_stats.py``, outside the
repository; ``tests/test_reading.py`` compares the two where it exists):

- a code cell is *hidden* when JupyterLab folds its input (``metadata.jupyter.source_hidden``) or the book hides it
  (a tag in :data:`HIDING_TAGS`); a cell is *folded* when it lies under a heading stored folded
  (``jp-MarkdownHeadingCollapsed``), up to the next heading of the same or a higher level; the rest is *visible*;
- verification lines: in visible code, the lines of ``assert`` statements and of the header of a
  ``with ...expect_error(...)`` / ``with ...check(...)`` block, and every line of a visible ``exercise-check`` cell;
- prose: visible markdown without fenced code, display math, HTML tags, images and link targets, a code span
  one word; a sentence ends at ``. ! ?`` before white space, at a list item and at a heading;
- figures: image outputs of code cells and images in markdown, folded or not.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HIDING_TAGS = frozenset({"hide-input", "hide-cell", "remove-input", "remove-cell"})
_IMAGE_KINDS = ("image/png", "image/jpeg", "image/svg+xml")
_WORD = re.compile(r"[\w'’-]+")
_YOU = re.compile(r"\byou(?:r|rs|rself)?\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """One chapter's measures (the names of the issues' targets)."""

    chapter: str
    visible_code_lines: int
    verification_lines: int
    longest_visible_cell: int
    cells_over_25_lines: int
    prose_words: int
    folded_words: int
    sentence_lengths: tuple[int, ...]
    you: int
    figures: int

    @property
    def verification_share(self) -> float:
        return self.verification_lines / self.visible_code_lines if self.visible_code_lines else 0.0

    @property
    def mean_sentence_words(self) -> float:
        return self.prose_words / len(self.sentence_lengths) if self.sentence_lengths else 0.0

    @property
    def long_sentence_share(self) -> float:
        lengths = self.sentence_lengths
        return sum(length > 30 for length in lengths) / len(lengths) if lengths else 0.0

    @property
    def you_per_1000_words(self) -> float:
        return 1000 * self.you / self.prose_words if self.prose_words else 0.0


def is_hidden(cell: dict[str, Any]) -> bool:
    metadata = cell.get("metadata", {})
    return bool(metadata.get("jupyter", {}).get("source_hidden")) or bool(HIDING_TAGS & set(metadata.get("tags", [])))


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def checking_lines(source: str) -> set[int]:
    """The 1-based lines of ``source`` that verify: asserts, and the headers of expect_error/check blocks."""
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return set()
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            found |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(node, ast.With) and any(re.search(r"(expect_error|\bcheck)\(", ast.unparse(item.context_expr)) for item in node.items):
            body_starts = node.body[0].lineno if node.body else node.lineno + 1
            found |= set(range(node.lineno, max(node.lineno, body_starts - 1) + 1))
    return found


def prose(markdown: str) -> str:
    """The words a reader reads in a markdown cell: no fenced code, math, HTML tag, image or link target."""
    for pattern, replacement in (
        (r"```.*?```", " "),
        (r"\$\$.*?\$\$", " "),
        (r"<[^>]+>", " "),
        (r"!\[[^\]]*\]\([^)]*\)", " "),
        (r"\[([^\]]*)\]\([^)]*\)", r"\1"),
        (r"`[^`]+`", "CODE"),
    ):
        markdown = re.sub(pattern, replacement, markdown, flags=re.DOTALL)
    return markdown


def sentence_lengths(markdown: str) -> list[int]:
    """The number of words of each sentence of a markdown cell's prose."""
    lengths = []
    for block in re.split(r"\n\s*(?=[-*+] |\d+\. |#)|\n\s*\n", prose(markdown)):
        block = re.sub(r"^\s*(#+|[-*+]|\d+\.)\s*", "", block.strip())
        for sentence in re.split(r"(?<=[.!?])\s+(?=\S)", block):
            words = _WORD.findall(sentence)
            if words:
                lengths.append(len(words))
    return lengths


def _heading_level(markdown: str) -> int | None:
    match = re.match(r"\s*(#{1,6})\s", markdown)
    return len(match.group(1)) if match else None


def read(path: Path) -> Reading:
    """Measure one chapter notebook as a reader meets it."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    visible = checking = longest = over_25 = folded_words = you = figures = 0
    lengths: list[int] = []
    folded_under: int | None = None  # the level of the folded heading above, while inside its section
    for cell in cells:
        source = "".join(cell.get("source", ""))
        level = _heading_level(source) if cell["cell_type"] == "markdown" else None
        if folded_under is not None and level is not None and level <= folded_under:
            folded_under = None
        if folded_under is None and level is not None and cell.get("metadata", {}).get("jp-MarkdownHeadingCollapsed"):
            folded_under = level
            lengths += sentence_lengths(source)  # the folded heading itself is in sight
            continue
        if cell["cell_type"] == "markdown":
            figures += len(re.findall(r"!\[|<img\b", source))
            if folded_under is not None:
                folded_words += sum(sentence_lengths(source))
            else:
                lengths += sentence_lengths(source)
                you += len(_YOU.findall(prose(source)))
            continue
        if cell["cell_type"] != "code":
            continue
        figures += sum(any(kind in output.get("data", {}) for kind in _IMAGE_KINDS) for output in cell.get("outputs", []))
        if folded_under is not None or is_hidden(cell):
            continue
        nonblank = {number for number, line in enumerate(source.splitlines(), 1) if line.strip()}
        visible += len(nonblank)
        longest = max(longest, len(nonblank))
        over_25 += len(nonblank) > 25
        is_exercise_check = "exercise-check" in cell.get("metadata", {}).get("tags", [])
        checking += len(nonblank) if is_exercise_check else len(checking_lines(source) & nonblank)
    return Reading(path.stem, visible, checking, longest, over_25, sum(lengths), folded_words, tuple(lengths), you, figures)
