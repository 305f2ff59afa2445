"""Reader first: check cells folded and counted, and each rewritten chapter held to the issues' reading targets.

:data:`REWRITTEN` lists the chapters rewritten reader first; a chapter joins it in the commit that rewrites it,
so a later edit cannot slide back. The measures are :mod:`tests.reading`'s.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.checks import count_claims
from helpers.workbook import executor
from helpers.workbook.editions import BOOK_TOGGLE, CHECK
from tests import reading

NOTEBOOKS = executor.notebooks()
#: The chapters rewritten reader first (issues 33 and 34), held to :data:`TARGETS`.
REWRITTEN: frozenset[str] = frozenset(
    {
        "00_start_here",
        "01_global_step",
        "02_train_ops",
        "03_gradient_clipping",
        "04_learning_rate_schedules",
        "05_checkpoints",
        "06_tensorboard",
        "07_gradient_checking",
        "08_capstone",
        "09_distribute",
        "10_inside_fit",
        "11_tf1_training_code",
        "99_how_this_workbook_is_checked",
    }
)
#: The issues' measuring tool, beside the repository where the issues are worked on (not in a clone).
READER_STATS = Path(__file__).resolve().parents[2] / "shared" / "tools" / "reader_stats.py"
#: A visible assert that is the lesson itself (the bit-identical resume) carries this comment on its first line.
LESSON = "# the lesson"


@dataclass(frozen=True)
class Targets:
    max_verification_share: float = 0.05
    max_cell_lines: int = 25
    max_prose_words: int = 2_500
    max_mean_sentence: float = 17.0
    max_long_sentences: float = 0.05
    min_you_per_1000: float = 10.0
    min_figures: int = 2


TARGETS = {"00_start_here": Targets(max_prose_words=1_000)}


def _cells(path: Path, tag: str) -> list[tuple[int, Any]]:
    notebook = nbformat.read(path, as_version=4)
    return [(index, cell) for index, cell in enumerate(notebook.cells) if tag in cell.metadata.get("tags", [])]


def _folded_both_ways(cell: Any) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden")) and BOOK_TOGGLE in cell.metadata.get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_check_cells_are_folded_and_print_one_line(path: Path) -> None:
    for index, cell in _cells(path, CHECK):
        where = f"{path.name} cell {index}"
        assert cell.cell_type == "code", f"{where}: only a code cell is a check"
        assert _folded_both_ways(cell), f"{where}: a check is stored folded (metadata.jupyter.source_hidden) and tagged {BOOK_TOGGLE}"
        assert cell.source.rstrip().endswith("helpers.checked()"), f"{where}: a check ends with helpers.checked()"
        assert count_claims(cell.source) >= 1, f"{where}: a check holds at least one assert or expect_error block"
        text = "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")
        assert re.fullmatch(r"✓ \d+ claims? checked\n", text), f"{where}: its stored output is the one line helpers.checked() prints"


@pytest.mark.parametrize("chapter", sorted(REWRITTEN))
def test_a_rewritten_chapter_meets_the_reading_targets(chapter: str) -> None:
    path = next(path for path in NOTEBOOKS if path.stem == chapter)
    measured, wanted = reading.read(path), TARGETS.get(chapter, Targets())
    missed = [
        f"{name} {value:.3g} (target {op} {limit})"
        for name, value, op, limit, ok in [
            (
                "visible verification share",
                measured.verification_share,
                "<=",
                wanted.max_verification_share,
                measured.verification_share <= wanted.max_verification_share,
            ),
            ("longest visible code cell", measured.longest_visible_cell, "<=", wanted.max_cell_lines, measured.longest_visible_cell <= wanted.max_cell_lines),
            ("visible prose words", measured.prose_words, "<=", wanted.max_prose_words, measured.prose_words <= wanted.max_prose_words),
            ("mean sentence words", measured.mean_sentence_words, "<=", wanted.max_mean_sentence, measured.mean_sentence_words <= wanted.max_mean_sentence),
            (
                "share of sentences over 30 words",
                measured.long_sentence_share,
                "<=",
                wanted.max_long_sentences,
                measured.long_sentence_share <= wanted.max_long_sentences,
            ),
            ("'you' per 1,000 words", measured.you_per_1000_words, ">=", wanted.min_you_per_1000, measured.you_per_1000_words >= wanted.min_you_per_1000),
            ("figures", measured.figures, ">=", wanted.min_figures, measured.figures >= wanted.min_figures),
        ]
        if not ok
    ]
    assert not missed, f"{chapter}: " + "; ".join(missed)


@pytest.mark.parametrize("chapter", sorted(REWRITTEN))
def test_a_rewritten_chapter_folds_its_exercise_checks_and_marks_its_visible_asserts(chapter: str) -> None:
    path = next(path for path in NOTEBOOKS if path.stem == chapter)
    for index, cell in _cells(path, "exercise-check"):
        assert _folded_both_ways(cell), f"{path.name} cell {index}: an exercise check is stored folded like a check"
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code" or reading.is_hidden(cell) or "exercise-check" in cell.metadata.get("tags", []):
            continue
        lines = cell.source.splitlines()
        for number in sorted(reading.checking_lines(cell.source)):
            if lines[number - 1].lstrip().startswith("assert"):
                assert LESSON in lines[number - 1], (
                    f"{path.name} cell {index}: a visible assert is the lesson ({LESSON!r}) or goes into the check cell after it"
                )


def test_every_rewritten_chapter_exists() -> None:
    assert REWRITTEN <= {path.stem for path in NOTEBOOKS}


def test_the_measures_match_the_issues_tool() -> None:
    if not READER_STATS.is_file():
        pytest.skip(f"{READER_STATS} is not beside this clone")
    spec = importlib.util.spec_from_file_location("reader_stats", READER_STATS)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for path in NOTEBOOKS:
        theirs, ours = tool.chapter(str(path)), reading.read(path)
        assert (ours.visible_code_lines, round(ours.verification_share, 3), ours.longest_visible_cell, ours.prose_words, ours.folded_words, ours.figures) == (
            theirs["visible_code_lines"],
            theirs["visible_verification_share"],
            theirs["longest_visible_cell"],
            theirs["prose_words"],
            theirs["folded_words"],
            theirs["figures"],
        ), path.name
        assert (round(ours.mean_sentence_words, 1), round(ours.long_sentence_share, 3), round(ours.you_per_1000_words, 1)) == (
            theirs["mean_sentence_words"],
            theirs["sentences_over_30_words_share"],
            theirs["you_per_1000_words"],
        ), path.name
