"""helpers.workbook.exercises: the exercises' layout in a notebook file, and the answer-filled copy."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from helpers.paths import repo_root
from helpers.workbook import exercises, runner

SOLUTION = "<details><summary>Solution</summary>\n\n```python\nanswer = 42\n```\n\n</details>"
CHECK = 'from helpers import exercises\nwith exercises.check("Exercise 1", hint="h"):\n    exercises.answered(answer)\n    assert answer == 42, "no"'


def _exercise_notebook(check: str = CHECK, wrong: str = "answer = 41", solution: str = SOLUTION) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    parameters = nbformat.v4.new_code_cell("SEED = 0")
    parameters.metadata["tags"] = ["parameters"]
    stub = nbformat.v4.new_code_cell("answer = ...")
    stub.metadata["tags"] = [exercises.STUB_TAG]
    check_cell = nbformat.v4.new_code_cell(check)
    check_cell.metadata["tags"] = [exercises.CHECK_TAG]
    solution_cell = nbformat.v4.new_markdown_cell(solution)
    solution_cell.metadata.update(tags=[exercises.SOLUTION_TAG], wrong_answer=wrong)
    notebook.cells = [parameters, nbformat.v4.new_markdown_cell("**Exercise 1.** Find it."), stub, check_cell, solution_cell]
    return notebook


def test_find_reads_the_layout() -> None:
    [exercise] = exercises.find(_exercise_notebook())
    assert (exercise.number, exercise.stub, exercise.check, exercise.solution) == (1, 2, 3, 4)
    assert exercise.solution_code == "answer = 42\n" and exercise.wrong_answer == "answer = 41"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda nb: nb.cells[4].metadata.pop("wrong_answer"), "wrong_answer"),
        (lambda nb: nb.cells[4].update(source="```python\nanswer = 42\n```"), "<details>"),
        (lambda nb: nb.cells[4].update(source=SOLUTION + "\n```python\nx = 1\n```"), "exactly one"),
        (lambda nb: nb.cells[3].metadata.update(tags=[]), "tagged 'exercise-check'"),
        (lambda nb: nb.cells.pop(), "followed by its check and solution"),
        (lambda nb: nb.cells[2].metadata.update(tags=[]), "follows no exercise stub"),
    ],
    ids=["no-wrong-answer", "not-collapsed", "two-blocks", "no-check", "no-solution", "orphan-check"],
)
def test_find_names_what_breaks_the_layout(change, message: str) -> None:
    notebook = _exercise_notebook()
    change(notebook)
    with pytest.raises(exercises.ExerciseLayoutError, match=message):
        exercises.find(notebook)


def _run(notebook: nbformat.NotebookNode, tmp_path: Path) -> runner.Result:
    source = tmp_path / "00_exercise.ipynb"
    nbformat.write(exercises.with_answers(notebook), source)
    return runner.execute(source, tmp_path / "executed.ipynb", {}, progress=False, cwd=repo_root())


def test_the_answer_filled_copy_passes_when_the_check_tells_wrong_from_right(tmp_path: Path) -> None:
    result = _run(_exercise_notebook(), tmp_path)
    assert result.ok, result.failure
    executed = nbformat.read(result.output, as_version=4)
    printed = "".join(output.get("text", "") for cell in executed.cells for output in cell.get("outputs", []))
    assert printed == "Exercise 1: not yet. no\nExercise 1: solved.\n"


def test_the_answer_filled_copy_fails_when_a_check_accepts_a_wrong_answer(tmp_path: Path) -> None:
    lenient = CHECK.replace("answer == 42", "answer > 0")
    result = _run(_exercise_notebook(check=lenient), tmp_path)
    assert not result.ok and "the check did not say 'rejected'" in result.failure
