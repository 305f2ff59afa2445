"""helpers.workbook.exercises: the exercises' layout in a notebook file, and the answer-filled copy."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
import pytest

from helpers.paths import repo_root
from helpers.workbook import executor, exercise_layout

if TYPE_CHECKING:
    from conftest import ExecuteNotebook

SOLUTION = "<details><summary>Solution</summary>\n\n```python\nanswer = 42\n```\n\n</details>"
CHECK = (
    "from helpers import exercises\n"
    'with exercises.check("Exercise 1", hint="h"):\n'
    "    exercises.answered(answer)\n"
    '    assert isinstance(answer, int), "a whole number, please"\n'
    '    assert answer >= 42, "too small"\n'
    '    assert answer <= 42, "too large"'
)
WRONG = [
    {exercise_layout.CODE_KEY: "answer = 41", exercise_layout.MISTAKE_KEY: "too small"},
    {exercise_layout.CODE_KEY: "answer = 43", exercise_layout.MISTAKE_KEY: "too large"},
    {exercise_layout.CODE_KEY: "answer = '42'", exercise_layout.MISTAKE_KEY: "a whole number"},
]
RIGHT = ["answer = 6 * 7"]


def _entry(wrong: list[Any] | None = None, right: list[Any] | None = None) -> dict[str, Any]:
    return {
        exercise_layout.POINTS_KEY: 2,
        exercise_layout.WRONG_ANSWERS_KEY: copy.deepcopy(WRONG if wrong is None else wrong),
        exercise_layout.RIGHT_ANSWERS_KEY: list(RIGHT if right is None else right),
    }


def _exercise_notebook(check: str = CHECK, entry: dict[str, Any] | None = None, solution: str = SOLUTION) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell("SEED = 0")
    parameters.metadata["tags"] = ["parameters"]
    stub = nbformat.v4.new_code_cell("answer = ...")
    stub.metadata["tags"] = [exercise_layout.STUB_TAG]
    check_cell = nbformat.v4.new_code_cell(check)
    check_cell.metadata["tags"] = [exercise_layout.CHECK_TAG]
    solution_cell = nbformat.v4.new_markdown_cell(solution)
    solution_cell.metadata["tags"] = [exercise_layout.SOLUTION_TAG]
    solution_cell.metadata[exercise_layout.EXERCISE_KEY] = _entry() if entry is None else entry
    notebook.cells = [parameters, nbformat.v4.new_markdown_cell("**Exercise 1.** Find it."), stub, check_cell, solution_cell]
    return notebook


def test_find_reads_the_layout() -> None:
    [exercise] = exercise_layout.find(_exercise_notebook())
    assert (exercise.number, exercise.stub, exercise.check, exercise.solution) == (1, 2, 3, 4)
    assert exercise.solution_code == "answer = 42\n"
    assert exercise.wrong_answers == tuple(exercise_layout.WrongAnswer(item["code"], item["mistake"]) for item in WRONG)
    assert exercise.right_answers == ("answer = 42\n", "answer = 6 * 7"), "the solution is the first right answer"
    assert exercise.points == 2


def _metadata(notebook: nbformat.NotebookNode) -> Any:
    return notebook.cells[4].metadata


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda nb: _metadata(nb).pop(exercise_layout.EXERCISE_KEY), "needs metadata 'exercise'"),
        (lambda nb: _metadata(nb).update(wrong_answer="answer = 41"), "'wrong_answer' is retired"),
        (lambda nb: _metadata(nb).update(exercise=["answer = 41"]), "a dict of 'wrong_answers' and 'right_answers'"),
        (lambda nb: _metadata(nb).exercise.update(hints=[]), r"unknown keys \['hints'\]"),
        (lambda nb: _metadata(nb).exercise.pop("points"), "needs 'points', a positive int .* not None"),
        (lambda nb: _metadata(nb).exercise.update(points=0), "needs 'points', a positive int .* not 0"),
        (lambda nb: _metadata(nb).exercise.update(points=True), "needs 'points', a positive int .* not True"),
        (lambda nb: _metadata(nb).exercise.update(points="2"), "needs 'points', a positive int .* not '2'"),
        (lambda nb: _metadata(nb).exercise.wrong_answers.pop(), r"at least 3 wrong answers \(found 2\)"),
        (lambda nb: _metadata(nb).exercise.pop("wrong_answers"), r"at least 3 wrong answers \(found none\)"),
        (lambda nb: _metadata(nb).exercise.update(right_answers=[]), r"at least 1 right answer besides the solution \(found 0\)"),
        (lambda nb: _metadata(nb).exercise.wrong_answers[1].update(mistake=" "), "wrong answer 2 needs a non-empty 'mistake'"),
        (lambda nb: _metadata(nb).exercise.wrong_answers[1].pop("mistake"), "wrong answer 2 must be a dict with exactly the keys"),
        (lambda nb: _metadata(nb).exercise.wrong_answers[0].update(code=41), "wrong answer 1's 'code' must be non-empty Python source"),
        (lambda nb: _metadata(nb).exercise.right_answers.append(""), "right answer 3 must be non-empty Python source"),
        (lambda nb: _metadata(nb).exercise.wrong_answers[2].update(mistake="too small"), "name the same mistake"),
        (lambda nb: _metadata(nb).exercise.right_answers.append("answer = 42  \n\n"), "repeats the solution"),
        (lambda nb: _metadata(nb).exercise.wrong_answers[0].update(code="answer = 6 * 7"), "also listed as a right answer"),
        (lambda nb: nb.cells[4].update(source="```python\nanswer = 42\n```"), "<details>"),
        (lambda nb: nb.cells[4].update(source=SOLUTION + "\n```python\nx = 1\n```"), "exactly one"),
        (lambda nb: nb.cells[3].metadata.update(tags=[]), "tagged 'exercise-check'"),
        (lambda nb: nb.cells.pop(), "followed by its check and solution"),
        (lambda nb: nb.cells[2].metadata.update(tags=[]), "follows no exercise stub"),
    ],
    ids=[
        "no-answers",
        "retired-key",
        "not-a-dict",
        "unknown-key",
        "no-points",
        "zero-points",
        "bool-points",
        "points-as-text",
        "two-wrong-answers",
        "no-wrong-answers",
        "no-other-right-answer",
        "blank-mistake",
        "no-mistake",
        "code-not-a-string",
        "empty-right-answer",
        "same-mistake-twice",
        "right-answer-is-the-solution",
        "wrong-answer-is-right",
        "not-collapsed",
        "two-blocks",
        "no-check",
        "no-solution",
        "orphan-check",
    ],
)
def test_find_names_the_exercise_and_what_breaks_its_layout(change, message: str) -> None:
    notebook = _exercise_notebook()
    change(notebook)
    with pytest.raises(exercise_layout.ExerciseLayoutError, match=message) as raised:
        exercise_layout.find(notebook)
    if "follows no exercise stub" not in message:
        assert str(raised.value).startswith("exercise 1 (cell 2): "), "the error names the exercise"


def test_the_answer_filled_copy_runs_the_stub_then_tries_every_answer_in_its_place() -> None:
    stored = _exercise_notebook()
    copied = exercise_layout.with_answers(stored)
    sources = [cell.source for cell in copied.cells]
    tried = [source for source in sources if source.startswith("answer =")]
    assert tried == ["answer = ...", "answer = 41", "answer = 43", "answer = '42'", "answer = 42\n", "answer = 6 * 7"]
    assert sources.count(CHECK) == 6, "the check runs on the stub and after every answer"
    added = [cell for cell in copied.cells if cell not in stored.cells]
    assert added and all(cell.metadata["tags"] == [exercise_layout.ANSWER_TAG] for cell in added), "nbval runs the answers without comparing them"


def _run(execute_notebook: ExecuteNotebook, notebook: nbformat.NotebookNode, tmp_path: Path) -> executor.Result:
    """The answer-filled copy of ``notebook``, executed in a fresh kernel."""
    source = tmp_path / "00_exercise.ipynb"
    nbformat.write(exercise_layout.with_answers(notebook), source)
    return execute_notebook(source, tmp_path / "executed.ipynb", {}, progress=False, cwd=repo_root())


def test_the_answer_filled_copy_passes_when_the_check_tells_wrong_from_right(execute_notebook: ExecuteNotebook, tmp_path: Path) -> None:
    result = _run(execute_notebook, _exercise_notebook(), tmp_path)
    assert result.ok, result.failure
    executed = nbformat.read(result.output, as_version=4)
    printed = "".join(output.get("text", "") for cell in executed.cells for output in cell.get("outputs", []))
    assert printed == (
        "Exercise 1: not solved yet. Hint: h\n"
        "Exercise 1: not yet. too small\nExercise 1: not yet. too large\nExercise 1: not yet. a whole number, please\n"
        "Exercise 1: solved.\nExercise 1: solved.\n"
    )


def test_the_answer_filled_copy_fails_when_a_check_accepts_a_wrong_answer(execute_notebook: ExecuteNotebook, tmp_path: Path) -> None:
    lenient = CHECK.replace('    assert answer <= 42, "too large"', "    pass")
    result = _run(execute_notebook, _exercise_notebook(check=lenient), tmp_path)
    assert not result.ok
    assert "exercise 1: the check did not say 'rejected' for wrong answer 2; it said: 'Exercise 1: solved.'" in result.failure


def test_the_answer_filled_copy_fails_when_the_feedback_names_another_mistake(execute_notebook: ExecuteNotebook, tmp_path: Path) -> None:
    misleading = CHECK.replace('"too large"', '"too small"')  # rejects 43, but blames the wrong mistake
    result = _run(execute_notebook, _exercise_notebook(check=misleading), tmp_path)
    assert not result.ok
    assert "the feedback for wrong answer 2 does not name its mistake 'too large'; it said: 'Exercise 1: not yet. too small'" in result.failure


def test_the_answer_filled_copy_fails_when_a_check_rejects_another_right_answer(execute_notebook: ExecuteNotebook, tmp_path: Path) -> None:
    picky = CHECK + '\n    assert "factors" not in globals(), "no helper variables, please"'  # refuses a right answer written another way
    entry = _entry(right=["factors = (6, 7)\nanswer = factors[0] * factors[1]"])
    result = _run(execute_notebook, _exercise_notebook(check=picky, entry=entry), tmp_path)
    assert not result.ok
    assert "exercise 1: the check did not say 'solved' for right answer 2; it said: 'Exercise 1: not yet. no helper variables, please'" in result.failure
