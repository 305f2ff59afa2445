"""The exercises' layout in a notebook file: finding each exercise's cells, checking them, and filling in answers.

The layout is described, and the self-check the notebooks call is defined, in :mod:`helpers.exercises`,
the only part of the exercises the chapters import. :func:`find` reads and validates the layout
(``tests/test_notebooks.py`` runs it on every notebook); :func:`with_answers` makes the copy of a
notebook in which every exercise runs as stored, then gets each of its wrong answers and each of its right
answers, which the test suite executes under nbval (``tests/chapter_runs.py``).

The answers live in the solution cell's metadata, under :data:`EXERCISE_KEY`::

    "exercise": {
        "points": 2,
        "wrong_answers": [{"code": "<source replacing the stub>", "mistake": "<phrase the feedback must contain>"}, ...],
        "right_answers": ["<source of another right answer, written differently from the solution>", ...]
    }

``points`` is what the exercise is worth when a course grades it (:mod:`helpers.workbook.course`): a
positive int, 1 for an exercise that applies one idea of the chapter, 2 for a transfer task that
combines several or applies them to a new case.

At least :data:`MIN_WRONG_ANSWERS` wrong answers, each a different mistake, and at least
:data:`MIN_RIGHT_ANSWERS` right answers besides the solution's own code, which is always the first
right answer.

A sentence that tells the reader where the solutions are ("The solution is folded away under the check")
stands alone in a markdown cell tagged :data:`CHAPTER_ONLY_TAG` (:func:`chapter_only_cells`): the course's
copy, which holds no solution, leaves that cell out.
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
#: A markdown cell only the chapter has: the course's copy (:mod:`helpers.workbook.course`), which holds no solution, leaves it
#: out. It holds what speaks of the solutions ("The solution is folded away under the check"), and no heading (a link target).
CHAPTER_ONLY_TAG = "chapter-only"
#: Key of the solution cell's metadata holding the exercise's answers (a dict, the schema above).
EXERCISE_KEY = "exercise"
#: In the :data:`EXERCISE_KEY` dict: the list of wrong answers, each a dict of :data:`CODE_KEY` and :data:`MISTAKE_KEY`.
WRONG_ANSWERS_KEY = "wrong_answers"
#: In the :data:`EXERCISE_KEY` dict: the list of right answers (Python source) besides the solution's code.
RIGHT_ANSWERS_KEY = "right_answers"
#: In the :data:`EXERCISE_KEY` dict: what the exercise is worth when graded (a positive int).
POINTS_KEY = "points"
#: In a wrong answer: the Python source that replaces the stub.
CODE_KEY = "code"
#: In a wrong answer: a phrase naming its mistake, which the check's feedback must contain.
MISTAKE_KEY = "mistake"
#: The solution cell metadata key that held the single wrong answer before :data:`EXERCISE_KEY`; refused.
RETIRED_WRONG_ANSWER_KEY = "wrong_answer"
MIN_WRONG_ANSWERS = 3
MIN_RIGHT_ANSWERS = 1
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


class ExerciseLayoutError(ValueError):
    """A notebook's exercise cells do not follow the layout :mod:`helpers.exercises` describes."""


@dataclass(frozen=True)
class WrongAnswer:
    """A classic wrong answer to an exercise, and the phrase naming its mistake that the check must print."""

    code: str
    mistake: str


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook: the indices of its cells, its solution and its other answers."""

    number: int  #: 1-based, in reading order
    stub: int  #: index of the cell tagged ``exercise``
    check: int  #: index of the cell tagged ``exercise-check``
    solution: int  #: index of the markdown cell tagged ``solution``
    solution_code: str
    wrong_answers: tuple[WrongAnswer, ...]
    other_right_answers: tuple[str, ...]  #: besides the solution's code
    points: int = 1  #: what it is worth when graded

    @property
    def right_answers(self) -> tuple[str, ...]:
        """Every right answer, the solution's code first."""
        return (self.solution_code, *self.other_right_answers)


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


def _code(text: str) -> str:
    """Source compared for sameness: the lines without trailing blanks, blank lines dropped."""
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def _source(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ExerciseLayoutError(f"{what} must be non-empty Python source (a string), not {value!r}")
    return value


def points(metadata: Any) -> int:
    """What the exercise in a solution cell's metadata is worth (``ExerciseLayoutError`` unless a positive int)."""
    value = metadata.get(EXERCISE_KEY, {}).get(POINTS_KEY) if isinstance(metadata.get(EXERCISE_KEY), dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ExerciseLayoutError(f"metadata {EXERCISE_KEY!r} needs {POINTS_KEY!r}, a positive int (what the exercise is worth when graded), not {value!r}")
    return value


def answers(metadata: Any, solution: str) -> tuple[tuple[WrongAnswer, ...], tuple[str, ...]]:
    """The wrong answers and the other right answers in a solution cell's metadata, validated.

    ``ExerciseLayoutError`` says what is missing or malformed; the caller prefixes the exercise.
    """
    if RETIRED_WRONG_ANSWER_KEY in metadata:
        raise ExerciseLayoutError(
            f"metadata {RETIRED_WRONG_ANSWER_KEY!r} is retired: put the wrong answers under {EXERCISE_KEY!r} -> {WRONG_ANSWERS_KEY!r}"
        )
    entry = metadata.get(EXERCISE_KEY)
    if not isinstance(entry, dict):
        raise ExerciseLayoutError(f"the solution cell needs metadata {EXERCISE_KEY!r}: a dict of {WRONG_ANSWERS_KEY!r} and {RIGHT_ANSWERS_KEY!r}")
    unknown = sorted(set(entry) - {WRONG_ANSWERS_KEY, RIGHT_ANSWERS_KEY, POINTS_KEY})
    if unknown:
        raise ExerciseLayoutError(f"metadata {EXERCISE_KEY!r} has unknown keys {unknown}")
    min_wrong, min_right = MIN_WRONG_ANSWERS, MIN_RIGHT_ANSWERS
    wrong_entries, right_entries = entry.get(WRONG_ANSWERS_KEY), entry.get(RIGHT_ANSWERS_KEY)
    if not isinstance(wrong_entries, list) or len(wrong_entries) < min_wrong:
        found = len(wrong_entries) if isinstance(wrong_entries, list) else "none"
        raise ExerciseLayoutError(f"{WRONG_ANSWERS_KEY!r} must list at least {min_wrong} wrong answers (found {found})")
    if not isinstance(right_entries, list) or len(right_entries) < min_right:
        found = len(right_entries) if isinstance(right_entries, list) else "none"
        raise ExerciseLayoutError(f"{RIGHT_ANSWERS_KEY!r} must list at least {min_right} right answer besides the solution (found {found})")
    wrong: list[WrongAnswer] = []
    for position, item in enumerate(wrong_entries, start=1):
        what = f"wrong answer {position}"
        if not isinstance(item, dict) or set(item) != {CODE_KEY, MISTAKE_KEY}:
            raise ExerciseLayoutError(f"{what} must be a dict with exactly the keys {CODE_KEY!r} and {MISTAKE_KEY!r}")
        mistake = item[MISTAKE_KEY]
        if not isinstance(mistake, str) or not mistake.strip():
            raise ExerciseLayoutError(f"{what} needs a non-empty {MISTAKE_KEY!r} phrase naming its mistake")
        wrong.append(WrongAnswer(_source(item[CODE_KEY], f"{what}'s {CODE_KEY!r}"), mistake))
    right = tuple(_source(item, f"right answer {position}") for position, item in enumerate(right_entries, start=2))
    if len({answer.mistake for answer in wrong}) < len(wrong):
        raise ExerciseLayoutError("two wrong answers name the same mistake: each wrong answer is a different mistake")
    sources = [_code(solution), *(_code(answer) for answer in right)]
    if len(set(sources)) < len(sources):
        raise ExerciseLayoutError("a right answer repeats the solution or another right answer: write each one differently")
    if set(sources) & {_code(answer.code) for answer in wrong}:
        raise ExerciseLayoutError("a wrong answer's code is also listed as a right answer")
    return tuple(wrong), right


def find(notebook: Any) -> list[Exercise]:
    """The exercises of a notebook (an ``nbformat`` notebook or its JSON as a dict), in order.

    Each cell tagged ``exercise`` must be followed by a code cell tagged ``exercise-check`` and then
    a markdown cell tagged ``solution`` with its answers (:func:`answers`) in its metadata; a check or
    solution cell anywhere else is an error too.
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
        try:
            code = solution_code(solution_cell["source"])
            wrong, right = answers(solution_cell.get("metadata", {}), code)
            worth = points(solution_cell.get("metadata", {}))
        except ExerciseLayoutError as error:
            raise ExerciseLayoutError(f"{where}: {error}") from None
        found.append(Exercise(number, index, index + 1, index + 2, code, wrong, right, worth))
        claimed.update({index + 1, index + 2})
    for index, cell in enumerate(cells):
        if index not in claimed and {CHECK_TAG, SOLUTION_TAG} & set(_tags(cell)):
            raise ExerciseLayoutError(f"cell {index} is tagged as a check or solution but follows no exercise stub")
    return found


def chapter_only_cells(notebook: Any) -> list[int]:
    """The indices of the cells tagged :data:`CHAPTER_ONLY_TAG`; ``ExerciseLayoutError`` for one that is not markdown or holds a heading."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if CHAPTER_ONLY_TAG not in _tags(cell):
            continue
        if cell["cell_type"] != "markdown" or re.search(r"^#{1,6} ", cell["source"], re.MULTILINE):
            raise ExerciseLayoutError(f"cell {index} is tagged {CHAPTER_ONLY_TAG!r}: it must be markdown without a heading (the course leaves it out)")
        found.append(index)
    return found


def _assert_cell(number: int, expected: Outcome, what: str, mistake: str | None = None) -> Any:
    """A cell asserting the latest check's outcome (and, for a wrong answer, that its feedback names the mistake)."""
    import nbformat

    lines = [
        "import helpers.exercises as _exercises_under_test",
        "_feedback_under_test = _exercises_under_test.last_feedback()",
        f"assert _exercises_under_test.last_outcome() == {expected!r}, "
        f"{f'exercise {number}: the check did not say {expected!r} for {what}; it said: '!r} + repr(_feedback_under_test)",
    ]
    if mistake is not None:
        lines.append(
            f"assert {mistake!r} in _feedback_under_test, "
            f"{f'exercise {number}: the feedback for {what} does not name its mistake {mistake!r}; it said: '!r} + repr(_feedback_under_test)"
        )
    return nbformat.v4.new_code_cell("\n".join(lines))


#: The tag every cell :func:`with_answers` adds carries: nbval runs the cell but does not compare its outputs.
ANSWER_TAG = "nbval-ignore-output"


def with_answers(notebook: Any) -> Any:
    """A copy of ``notebook`` that runs each exercise as stored, then tries its wrong answers and its right answers.

    Per exercise, the stub and the check run first, untouched, with their stored outputs (the check prints
    its "not solved yet"). Then each wrong answer in turn takes the stub's place, the check runs again, and
    a new cell asserts that it said ``rejected`` and that its feedback contains the answer's mistake phrase;
    then each right answer (the solution first), the check again, and an assert that it said ``solved``.
    The asserts' messages show the feedback the check gave. Every added cell is tagged :data:`ANSWER_TAG`,
    so nbval validates the stored cells strictly and runs the added ones without comparing them. A check
    must not depend on what a previous answer left behind.
    """
    import nbformat

    result = copy.deepcopy(notebook)
    exercises = find(notebook)
    for exercise in reversed(exercises):  # splice from the end so earlier indices stay valid
        check_source = result.cells[exercise.check].source
        tries: list[Any] = []
        for position, wrong in enumerate(exercise.wrong_answers, start=1):
            tries += [
                nbformat.v4.new_code_cell(wrong.code),
                nbformat.v4.new_code_cell(check_source),
                _assert_cell(exercise.number, "rejected", f"wrong answer {position}", wrong.mistake),
            ]
        for position, right in enumerate(exercise.right_answers, start=1):
            what = "the solution" if position == 1 else f"right answer {position}"
            tries += [nbformat.v4.new_code_cell(right), nbformat.v4.new_code_cell(check_source), _assert_cell(exercise.number, "solved", what)]
        for cell in tries:
            cell.metadata["tags"] = [ANSWER_TAG]
        result.cells[exercise.check + 1 : exercise.check + 1] = tries
    return result
