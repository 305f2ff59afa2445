"""Exercises a learner does: a stub to fill in, and a check that says "not yet" without failing the run.

Every notebook ends with exercises laid out the same way (``tests/test_notebooks.py`` relies on it):

1. a markdown cell with the task, ``**Exercise N.** ...``;
2. a code cell tagged ``exercise``: the stub. Answers start as ``...`` (Ellipsis); functions the
   learner writes raise ``NotImplementedError``. The stub runs without error as stored;
3. a code cell tagged ``exercise-check``::

       with exercises.check("Exercise 1", hint="a hint that does not give the answer away"):
           exercises.answered(answer)   # while `answer` is still `...`: "not solved yet" + the hint
           assert <property of a right answer>, "what is wrong, in a learner's words"

4. a markdown cell tagged ``solution``: a collapsed ``<details>`` block holding one fenced
   ``python`` block (the code that replaces the stub), and in its metadata ``wrong_answer``: a
   plausible wrong answer that the check must reject.

:func:`check` never raises for the learner's mistakes: the stored notebook, ``make run``,
papermill and nbval all pass while the stubs are unsolved. It prints one verdict line and records
it; :func:`last_outcome` returns the latest one, so a test can fill in the solutions (and the wrong
answers) and assert what each check decided.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

Outcome = Literal["unsolved", "rejected", "solved"]

STUB_TAG = "exercise"
CHECK_TAG = "exercise-check"
SOLUTION_TAG = "solution"
#: Key of the solution cell's metadata holding a plausible wrong answer (Python source).
WRONG_ANSWER_KEY = "wrong_answer"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

#: Every verdict so far in this process, as (exercise name, outcome), oldest first.
OUTCOMES: list[tuple[str, Outcome]] = []


class NotAnswered(Exception):
    """Raised by :func:`answered` while an answer is still the stub's ``...``."""


def answered(*answers: object) -> None:
    """Stop the check (as "not solved yet") if any answer is still ``...``."""
    if any(answer is Ellipsis for answer in answers):
        raise NotAnswered


@contextmanager
def check(name: str, *, hint: str) -> Iterator[None]:
    """Run a self-check block and print ``name: solved.``, ``not yet. <why>`` or ``not solved yet``.

    - :class:`NotAnswered` or ``NotImplementedError`` (the stub is untouched): "not solved yet"
      and the hint;
    - an ``AssertionError``: "not yet." and the assertion's message;
    - any other exception raised by the learner's code: "not yet." and the exception;
    - no exception: "solved.".

    ``KeyboardInterrupt`` and other non-``Exception`` errors propagate.
    """
    if not name or not hint:
        raise ValueError("an exercise check needs a name and a hint")
    outcome: Outcome
    try:
        yield
    except (NotAnswered, NotImplementedError):
        outcome = "unsolved"
        print(f"{name}: not solved yet. Hint: {hint}")
    except AssertionError as error:
        outcome = "rejected"
        reason = str(error).strip() or "a check failed"
        print(f"{name}: not yet. {reason}")
    except Exception as error:  # the learner's code raised: say what, do not stop the notebook
        outcome = "rejected"
        first_line = (str(error).strip().splitlines() or [""])[0]
        print(f"{name}: not yet. Your code raised {type(error).__name__}: {first_line}")
    else:
        outcome = "solved"
        print(f"{name}: solved.")
    OUTCOMES.append((name, outcome))


def last_outcome() -> Outcome:
    """The outcome of the most recent :func:`check` (``ValueError`` if none ran yet)."""
    if not OUTCOMES:
        raise ValueError("no exercise check has run in this process")
    return OUTCOMES[-1][1]


# --- The layout in a notebook file (used by the tests and by tools that render the workbook) ---


class ExerciseLayoutError(ValueError):
    """A notebook's exercise cells do not follow the layout described in this module's docstring."""


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
