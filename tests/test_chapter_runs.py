"""tests/chapter_runs.py: the prepared copies nbval executes, their keys, and the plugin run for real on a tiny chapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.paths import NOTEBOOKS_DIR, repo_root
from helpers.workbook import cache, exercise_layout
from helpers.workbook.exercise_layout import EXERCISE_KEY
from tests.chapter_runs import RUNS, ChapterRun, prepared, validation_key

CHAPTER = NOTEBOOKS_DIR / "03_gradient_clipping.ipynb"
DEFAULT, OTHER = RUNS


def _tags(cell: Any) -> list[str]:
    return list(cell.metadata.get("tags", []))


def test_the_two_runs_cover_both_seeds_both_modes_and_both_kernel_families() -> None:
    stored = cache.notebook_parameters(nbformat.read(CHAPTER, as_version=4))
    values = [{**stored, **run.parameters} for run in RUNS]
    assert {value["SEED"] for value in values} == {stored["SEED"], 1234} and {value["FAST"] for value in values} == {False, True}
    assert [run.other_kernels for run in RUNS] == [False, True] and [run.strict for run in RUNS] == [True, False]


@pytest.mark.parametrize("run", RUNS, ids=[run.name for run in RUNS])
def test_the_copy_keeps_every_stored_cell_injects_the_run_and_adds_the_answers_uncompared(run: ChapterRun) -> None:
    stored = nbformat.read(CHAPTER, as_version=4)
    copy = prepared(stored, run)
    injected = [cell for cell in copy.cells if "injected-parameters" in _tags(cell)]
    assert len(injected) == 1 and all(f"{name} = {value!r}" in injected[0].source for name, value in run.parameters.items())
    added = [cell for cell in copy.cells if exercise_layout.ANSWER_TAG in _tags(cell) and cell not in stored.cells]
    kept = [cell for cell in copy.cells if cell not in injected and cell not in added]
    assert kept == stored.cells, "every stored cell, with its outputs, in its order"
    found = exercise_layout.find(stored)
    answers = sum(len(exercise.wrong_answers) + len(exercise.right_answers) for exercise in found)
    assert len(added) == 3 * answers, "an answer, the check and an assert on its verdict, for each answer"
    for exercise in found:  # the untouched stub and its check come first, then the answers
        check = copy.cells.index(stored.cells[exercise.check])
        assert copy.cells[check - 1] == stored.cells[exercise.stub]
        assert copy.cells[check + 1].source == exercise.wrong_answers[0].code


def test_a_strict_run_is_validated_again_when_the_stored_outputs_change_a_lax_one_is_not() -> None:
    stored = nbformat.read(CHAPTER, as_version=4)
    edited = nbformat.read(CHAPTER, as_version=4)
    cell = next(cell for cell in edited.cells if cell.cell_type == "code" and cell.outputs)
    cell.outputs = []
    assert validation_key(edited, DEFAULT) != validation_key(stored, DEFAULT)
    assert validation_key(edited, OTHER) == validation_key(stored, OTHER)
    assert validation_key(stored, DEFAULT) != validation_key(stored, OTHER)


def _first_code(notebook: Any) -> Any:
    return next(cell for cell in notebook.cells if cell.cell_type == "code" and "parameters" not in _tags(cell))


def _solution(notebook: Any) -> Any:
    return next(cell for cell in notebook.cells if EXERCISE_KEY in cell.metadata)


def _add_a_comment(notebook: Any) -> None:
    _first_code(notebook).source += "\n# a comment"


def _change_a_wrong_answer(notebook: Any) -> None:
    _solution(notebook).metadata[EXERCISE_KEY]["wrong_answers"][0]["code"] = "x = 1"


def _change_the_solutions_code(notebook: Any) -> None:
    cell = _solution(notebook)
    cell.source = cell.source.replace("```python\n", "```python\nx = 1\n", 1)


def test_an_edit_of_the_prose_keeps_the_runs_cached_an_edit_of_the_code_or_of_an_answer_does_not() -> None:
    stored = nbformat.read(CHAPTER, as_version=4)
    keys = [validation_key(stored, run) for run in RUNS]
    assert [validation_key(nbformat.read(CHAPTER, as_version=4), run) for run in RUNS] == keys  # the answers' new cell ids do not count
    prose = next(cell for cell in stored.cells if cell.cell_type == "markdown" and EXERCISE_KEY not in cell.metadata)
    prose.source += "\n\nOne more sentence."
    assert [validation_key(stored, run) for run in RUNS] == keys
    for edit in (_add_a_comment, _change_a_wrong_answer, _change_the_solutions_code):
        edited = nbformat.read(CHAPTER, as_version=4)
        edit(edited)
        assert all(validation_key(edited, run) != key for run, key in zip(RUNS, keys, strict=True)), edit.__name__


def _tiny_chapter(folder: Path, *, printed: str, check: str) -> Path:
    """A TensorFlow-free chapter in the workbook's layout: parameters, setup, one printing cell, one exercise."""
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    parameters = nbformat.v4.new_code_cell("SEED = 7\nFAST = False", metadata={"tags": ["parameters"]})
    setup = nbformat.v4.new_code_cell('import helpers\nfrom helpers import exercises\n\nRUN_DIR = helpers.run_dir("00_tiny")')
    shown = nbformat.v4.new_code_cell("print(SEED * 6)")
    shown.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    stub = nbformat.v4.new_code_cell("answer = ...", metadata={"tags": ["exercise"]})
    checked = nbformat.v4.new_code_cell(check, metadata={"tags": ["exercise-check"]})
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="Exercise 1: not solved yet. Hint: SEED times six\n")]
    entry = {
        "points": 1,
        "wrong_answers": [
            {"code": "answer = SEED", "mistake": "not times six"},
            {"code": "answer = SEED * 7", "mistake": "times seven"},
            {"code": "answer = str(SEED * 6)", "mistake": "a number"},
        ],
        "right_answers": ["answer = 6 * SEED"],
    }
    solution = nbformat.v4.new_markdown_cell(
        "<details><summary>Solution</summary>\n\n```python\nanswer = SEED * 6\n```\n\n</details>", metadata={"tags": ["solution"], "exercise": entry}
    )
    task = nbformat.v4.new_markdown_cell("**Exercise 1.** Six times the seed.")
    notebook.cells = [nbformat.v4.new_markdown_cell("# 00 · Tiny"), parameters, setup, shown, task, stub, checked, solution]
    for count, cell in enumerate([cell for cell in notebook.cells if cell.cell_type == "code"], start=1):
        cell.execution_count = count
    path = folder / "notebooks" / "00_tiny.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


CHECK = """with exercises.check("Exercise 1", hint="SEED times six"):
    exercises.answered(answer)
    assert isinstance(answer, int), "a number, please"
    assert answer != SEED, "not times six yet"
    assert answer == SEED * 6, "times seven? six"
"""


def _pytest(folder: Path, chapter: Path) -> tuple[int, str]:
    """The plugin on ``chapter`` in a pytest of its own, as make test runs it (its chapters folder pointed at ``folder``)."""
    environment = {**os.environ, "WORKBOOK_BUILD_DIR": str(folder / "build"), "WORKBOOK_CHAPTERS_DIR": str(chapter.parent)}
    environment.pop(cache.CACHE_VARIABLE, None)
    environment.pop("PYTEST_XDIST_WORKER", None)
    options = ["-q", "-p", "no:cacheprovider", "--rootdir", str(folder), "-c", str(repo_root() / "pyproject.toml")]
    command = [sys.executable, "-m", "pytest", *options, str(chapter)]
    completed = subprocess.run(command, cwd=repo_root(), env=environment, capture_output=True, text=True, timeout=300)
    return completed.returncode, completed.stdout + completed.stderr


@pytest.mark.process  # two Jupyter kernels per pytest, and the other kernels' run imports TensorFlow
def test_the_plugin_validates_a_chapter_once_per_run_caches_the_pass_and_fails_a_changed_output_and_a_lenient_check(tmp_path: Path) -> None:
    chapter = _tiny_chapter(tmp_path, printed="42\n", check=CHECK)
    status, output = _pytest(tmp_path, chapter)
    assert status == 0 and "passed" in output.splitlines()[-1] and "skipped" not in output.splitlines()[-1], output[-3000:]
    recorded = sorted(json.loads(path.read_text())["run"] for path in (tmp_path / "build" / "cache" / "validated").glob("*.json"))
    assert recorded == sorted(run.name for run in RUNS)

    status, output = _pytest(tmp_path, chapter)
    assert status == 0 and output.splitlines()[-1].strip().startswith("2 skipped"), output[-3000:]
    assert output.count("cached: 00_tiny (") == 2 and "passed its validation with key" in output

    # a stored output a fresh run does not print, and a check that accepts wrong answer 2
    _tiny_chapter(tmp_path, printed="41\n", check=CHECK.replace('    assert answer == SEED * 6, "times seven? six"\n', ""))
    status, output = _pytest(tmp_path, chapter)
    assert status == 1 and "3 failed" in output.splitlines()[-1], output[-3000:]
    lines = [line.split(" - ")[0] for line in output.splitlines() if line.startswith("FAILED ")]
    failed = sorted(line[line.index("build/test-runs/") :] for line in lines)  # pytest shows them relative to its working folder
    default, other = (f"build/test-runs/{run.name}/notebooks/00_tiny.ipynb::Cell" for run in RUNS)
    assert [name.rsplit(" ", 1)[0] for name in failed] == [default, default, other], failed
    assert f"{default} 3" in failed, "the strict run fails on the changed output; the lax run does not compare it"
    assert output.count("the check did not say 'rejected' for wrong answer 2") >= 2, "the lenient check fails both runs"
