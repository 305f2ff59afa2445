"""The exercises' layout in a notebook file: finding each exercise's cells, checking them, and filling in answers.

The layout is described, and the self-check the notebooks call is defined, in :mod:`helpers.exercises`,
the only part of the exercises the chapters import. :func:`find` reads and validates the layout
(``tests/test_notebooks.py`` runs it on every notebook); :func:`with_answers` makes the copy of a
notebook in which every exercise gets its wrong answer and then its solution, which the tests execute.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from helpers.exercises import Outcome

STUB_TAG = "exercise"
CHECK_TAG = "exercise-check"
SOLUTION_TAG = "solution"
#: Key of the solution cell's metadata holding a plausible wrong answer (Python source).
WRONG_ANSWER_KEY = "wrong_answer"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


class ExerciseLayoutError(ValueError):
    """A notebook's exercise cells do not follow the layout :mod:`helpers.exercises` describes."""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook: the indices of its cells, its solution and its wrong answer."""

    number: int  #: 1-based, in reading order
    stub: int  #: index of the cell tagged ``exercise``
    check: int  #: index of the cell tagged ``exercise-check``
    solution: int  #: index of the markdown cell tagged ``solution``
    solution_code: str
    wrong_answer: str


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def solution_code(markdown: str) -> str:
    """The one fenced ``python`` block of a solution cell (``ExerciseLayoutError`` if not exactly one)."""
    blocks = _PYTHON_BLOCK.findall(markdown)
    if len(blocks) != 1:
        raise ExerciseLayoutError(f"a solution cell holds exactly one ```python block, found {len(blocks)}")
    if not markdown.lstrip().startswith("<details>") or "</details>" not in markdown:
        raise ExerciseLayoutError("a solution cell is a collapsed <details> block, so it stays hidden until opened")
    return blocks[0]


def find(notebook: Any) -> list[Exercise]:
    """The exercises of a notebook (an ``nbformat`` notebook or its JSON as a dict), in order.

    Each cell tagged ``exercise`` must be followed by a code cell tagged ``exercise-check`` and then
    a markdown cell tagged ``solution`` with a ``wrong_answer`` in its metadata; a check or solution
    cell anywhere else is an error too.
    """
    cells = notebook["cells"]
    found: list[Exercise] = []
    claimed: set[int] = set()
    for index, cell in enumerate(cells):
        if STUB_TAG not in _tags(cell):
            continue
        number = len(found) + 1
        where = f"exercise {number} (cell {index})"
        if cell["cell_type"] != "code":
            raise ExerciseLayoutError(f"{where}: the stub must be a code cell")
        if index + 2 >= len(cells):
            raise ExerciseLayoutError(f"{where}: the stub must be followed by its check and solution cells")
        check_cell, solution_cell = cells[index + 1], cells[index + 2]
        if check_cell["cell_type"] != "code" or CHECK_TAG not in _tags(check_cell):
            raise ExerciseLayoutError(f"{where}: the next cell must be a code cell tagged {CHECK_TAG!r}")
        if solution_cell["cell_type"] != "markdown" or SOLUTION_TAG not in _tags(solution_cell):
            raise ExerciseLayoutError(f"{where}: the cell after the check must be markdown tagged {SOLUTION_TAG!r}")
        wrong = solution_cell.get("metadata", {}).get(WRONG_ANSWER_KEY)
        if not isinstance(wrong, str) or not wrong.strip():
            raise ExerciseLayoutError(f"{where}: the solution cell needs metadata {WRONG_ANSWER_KEY!r} (Python source)")
        try:
            code = solution_code(solution_cell["source"])
        except ExerciseLayoutError as error:
            raise ExerciseLayoutError(f"{where}: {error}") from None
        found.append(Exercise(number, index, index + 1, index + 2, code, wrong))
        claimed.update({index + 1, index + 2})
    for index, cell in enumerate(cells):
        if index not in claimed and {CHECK_TAG, SOLUTION_TAG} & set(_tags(cell)):
            raise ExerciseLayoutError(f"cell {index} is tagged as a check or solution but follows no exercise stub")
    return found


def _assert_outcome_cell(number: int, expected: Outcome, what: str) -> Any:
    import nbformat

    message = f"exercise {number}: the check did not say {expected!r} for {what}"
    return nbformat.v4.new_code_cell(
        "import helpers.exercises as _exercises_under_test\n"
        f"assert _exercises_under_test.last_outcome() == {expected!r}, {message!r}"
    )


def with_answers(notebook: Any) -> Any:
    """A copy of ``notebook`` that tries each exercise's wrong answer, then its solution.

    Per exercise, the stub is replaced by the wrong answer, the check runs and a new cell asserts
    it said ``rejected``; then the solution code, the check again, and an assert that it said
    ``solved``. Executing the copy tests every check against a wrong and a right answer.
    """
    import nbformat

    result = copy.deepcopy(notebook)
    exercises = find(notebook)
    for exercise in reversed(exercises):  # splice from the end so earlier indices stay valid
        check_cell = result.cells[exercise.check]
        result.cells[exercise.stub] = nbformat.v4.new_code_cell(exercise.wrong_answer)
        after_check = [
            _assert_outcome_cell(exercise.number, "rejected", "the wrong answer in the solution's metadata"),
            nbformat.v4.new_code_cell(exercise.solution_code),
            nbformat.v4.new_code_cell(check_cell.source),
            _assert_outcome_cell(exercise.number, "solved", "the solution"),
        ]
        result.cells[exercise.check + 1 : exercise.check + 1] = after_check
    return result
