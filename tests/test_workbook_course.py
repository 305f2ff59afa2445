"""The workbook as an nbgrader course (issue 22): ``make course`` from the real chapters, and ``make grade`` with nbgrader's own commands.

The grading tests return one chapter (03, three exercises worth 1, 2 and 2 points) as eight students would:
answered with the solutions, with the stored wrong answers, and six ways of breaking it. Each gets a row
in the gradebook; none stops the others from being graded.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.workbook import course, executor
from helpers.workbook.exercise_layout import Exercise, find

#: The chapter the grading tests return: three exercises, one of each kind of answer (values, a train step, a function).
CHAPTER = "03_gradient_clipping"
#: Short enough for a test, long enough for every cell of the chapter (its slowest takes about 2 s).
TIMEOUT = 40


def chapter_path(name: str) -> Path:
    [path] = [path for path in executor.notebooks() if path.stem == name]
    return path


def test_the_teachers_version_adds_nbgrader_cells_and_leaves_out_the_solutions() -> None:
    chapter = nbformat.read(chapter_path(CHAPTER), as_version=4)
    exercises = find(chapter)
    source = course.course_notebook(chapter)
    assert len(source.cells) == len(chapter.cells) - len(exercises) + 1  # the solution cells out, the licences' cell in
    assert source.cells[-1].source == course.LICENSE_CELL
    graded = [cell for cell in source.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    answers = [cell for cell in source.cells if cell.metadata.get("nbgrader", {}).get("solution")]
    assert [cell.metadata["nbgrader"]["points"] for cell in graded] == [exercise.points for exercise in exercises] == [1, 2, 2]
    assert all(cell.metadata["nbgrader"]["locked"] for cell in graded) and not any(cell.metadata["nbgrader"]["locked"] for cell in answers)
    for exercise, answer, check in zip(exercises, answers, graded, strict=True):
        stub = chapter.cells[exercise.stub].source
        assert answer.source == f"{stub.rstrip()}\n### BEGIN SOLUTION\n{exercise.solution_code.rstrip()}\n### END SOLUTION"
        assert check.source.startswith(chapter.cells[exercise.check].source.rstrip())
        hidden = check.source.split("### BEGIN HIDDEN TESTS\n")[1]
        assert hidden.startswith(f"exercises.require_solved('Exercise {exercise.number}')") and hidden.endswith("\n### END HIDDEN TESTS")
    assert not any("exercise" in cell.metadata for cell in source.cells)  # the answers' metadata went with the solution cells


def test_the_course_configuration_is_valid_python_that_sets_what_the_course_needs() -> None:
    settings: dict[str, Any] = {}

    class Config:
        def __getattr__(self, section: str) -> Any:
            outer = self

            class Section:
                def __setattr__(self, key: str, value: object) -> None:
                    settings[f"{section}.{key}"] = value

            del outer
            return Section()

    exec(course.config_text(Path("/courses/tf")), {"get_config": Config})
    assert settings == {
        "CourseDirectory.course_id": course.COURSE_ID,
        "Exchange.root": "/courses/tf/exchange",
        "ClearSolutions.code_stub": {"python": ""},
        "ClearOutput.enabled": False,
        "Execute.timeout": course.CELL_TIMEOUT_SECONDS,
    }


def distinctive_lines(chapter: Any, exercise: Exercise) -> list[str]:
    """The solution's lines that only the solution (or the exercise's own check) holds: not the stub's, not taught anywhere else."""
    elsewhere = "\n".join(cell.source for index, cell in enumerate(chapter.cells) if index not in (exercise.check, exercise.solution))
    lines = [line.strip() for line in exercise.solution_code.splitlines()]
    return [line for line in lines if len(line) >= 30 and not line.startswith("#") and line not in elsewhere]


def _digests(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.process
def test_the_course_of_every_chapter_releases_no_solution_and_builds_the_same_files_twice(tmp_path: Path) -> None:
    root = course.build_course(executor.notebooks(), tmp_path / "course")
    chapters = executor.notebooks()
    assert sorted(path.name for path in (root / "release").iterdir()) == [path.stem for path in chapters]
    for path in chapters:  # each chapter goes out with the licences its last cell links to
        assert sorted(item.name for item in (root / "release" / path.stem).iterdir()) == sorted(["LICENSE", "LICENSE-docs", path.name])
    for path in chapters:
        chapter = nbformat.read(path, as_version=4)
        released = nbformat.read(root / "release" / path.stem / path.name, as_version=4)
        text = "\n".join(cell.source for cell in released.cells)
        for exercise in find(chapter):
            leaked = [line for line in distinctive_lines(chapter, exercise) if line in text]
            assert not leaked, f"{path.stem}, exercise {exercise.number}: the students' copy holds the solution's {leaked}"
            assert chapter.cells[exercise.stub].source.rstrip() in text  # the stub, as the chapter has it
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "require_solved" not in text
        assert not any("exercise" in cell.metadata for cell in released.cells)
        stored = [cell.outputs for cell in chapter.cells if cell.cell_type == "code"]
        kept = [cell.outputs for cell in released.cells if cell.cell_type == "code"]
        assert kept == stored  # the chapter's outputs, as stored (a solution cell is markdown: no output is lost)
    before = {name: digest for name, digest in _digests(root).items() if not name.endswith(".db")}
    course.build_course(executor.notebooks(), root)
    assert {name: digest for name, digest in _digests(root).items() if not name.endswith(".db")} == before


# --- grading returned notebooks ------------------------------------------------------------------------------


def _cell(notebook: Any, grade_id: str) -> int:
    return next(index for index, cell in enumerate(notebook.cells) if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _answered(notebook: Any, answers: dict[int, str]) -> Any:
    for number, code in answers.items():
        notebook.cells[_cell(notebook, f"exercise-{number}-answer")].source = code
    return notebook


def _returned(root: Path, student: str, edit: Any) -> None:
    released = root / "release" / CHAPTER / f"{CHAPTER}.ipynb"
    folder = root / "returned" / student / CHAPTER
    folder.mkdir(parents=True)
    if isinstance(edit, str):  # the file's text itself
        (folder / released.name).write_text(edit)
        return
    nbformat.write(edit(nbformat.read(released, as_version=4)), folder / released.name)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, course.Grade]:
    root = course.build_course([chapter_path(CHAPTER)], tmp_path_factory.mktemp("grading") / "course")
    exercises = find(nbformat.read(chapter_path(CHAPTER), as_version=4))
    solutions = {exercise.number: exercise.solution_code for exercise in exercises}
    wrong_odd = {exercise.number: exercise.wrong_answers[0].code if exercise.number % 2 else exercise.other_right_answers[0] for exercise in exercises}

    def without(grade_id: str) -> Any:  # answered with the solutions, then one cell deleted
        def edit(notebook: Any) -> Any:
            notebook = _answered(notebook, solutions)
            del notebook.cells[_cell(notebook, grade_id)]
            return notebook

        return edit

    def check_made_to_pass(notebook: Any) -> Any:  # exercise 1 left as the stub, its check replaced
        notebook = _answered(notebook, {number: code for number, code in solutions.items() if number != 1})
        notebook.cells[_cell(notebook, "exercise-1-check")].source = "pass  # what a student might try"
        return notebook

    returned = {
        "ada": lambda notebook: _answered(notebook, solutions),
        "bo": lambda notebook: _answered(notebook, wrong_odd),
        "cy": lambda notebook: _answered(notebook, {**solutions, 1: "answer_clipnorm = [g1 * 2 / 5,\n"}),  # a syntax error
        "di": without("exercise-1-check"),
        "ed": check_made_to_pass,
        "fa": without("exercise-3-answer"),
        "gu": lambda notebook: _answered(notebook, {**solutions, 2: "while True:\n    pass\n"}),  # a cell that never ends
        "hu": '{"cells": [',  # not JSON: a file cut short
    }
    for student, edit in returned.items():
        _returned(root, student, edit)
    course.collect(root, root / "returned")
    return {grade.student: grade for grade in course.grade(root, timeout=TIMEOUT)}


@pytest.mark.process
def test_the_solutions_get_full_marks_and_the_wrong_answers_none(graded: dict[str, course.Grade]) -> None:
    assert (graded["ada"].score, graded["ada"].max_score, graded["ada"].problem) == (5.0, 5.0, "")
    assert (graded["bo"].score, graded["bo"].max_score) == (2.0, 5.0)  # exercises 1 and 3 wrong (1 + 2 points), exercise 2 right


@pytest.mark.process
def test_a_broken_answer_or_check_costs_only_its_exercise(graded: dict[str, course.Grade]) -> None:
    assert (graded["cy"].score, graded["cy"].problem) == (4.0, "")  # the syntax error: exercise 1's check raises, the others pass
    # nbgrader puts back an edited check (a locked cell: its source is restored from the gradebook), so exercise 1's stub gets no point ...
    assert (graded["ed"].score, graded["ed"].problem) == (4.0, "")
    # ... but not a deleted one: that exercise gets no points, and the summary says why
    assert (graded["di"].score, graded["di"].problem) == (4.0, "exercise-1-check deleted: no points for it")
    assert (graded["fa"].score, graded["fa"].problem) == (3.0, "")  # exercise 3's answer cell deleted: its check finds no function


@pytest.mark.process
def test_a_cell_that_never_ends_or_a_file_that_is_not_a_notebook_gets_a_grade_and_a_reason(graded: dict[str, course.Grade]) -> None:
    # nbgrader interrupts the cell at the time limit and goes on: only exercise 2 (2 points) is lost
    assert (graded["gu"].score, graded["gu"].problem) == (3.0, f"exercise-2-answer ran over {TIMEOUT} s and was stopped"), graded["gu"]
    assert graded["hu"].score == 0.0 and graded["hu"].max_score == 5.0 and re.search(r"JSON|json", graded["hu"].problem), graded["hu"]
    assert set(graded) == {"ada", "bo", "cy", "di", "ed", "fa", "gu", "hu"}


@pytest.mark.process
def test_the_formgrader_and_the_assignment_list_of_the_course_answer_on_localhost_with_the_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make lab ARGS=--course``: JupyterLab in the course folder; nbgrader's formgrader lists the chapter, its assignment list the released copy."""
    import secrets
    import urllib.request

    from helpers.ports import free_port
    from helpers.workbook import lab

    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path))
    root = course.build_course([chapter_path(CHAPTER)])
    course.run_nbgrader(root, "release_assignment", CHAPTER)  # into the course's exchange, where the assignment list looks
    port, token = free_port(), secrets.token_urlsafe(16)
    with lab.lab_server(port, token, root=lab.course_folder()) as base:
        with urllib.request.urlopen(f"{base}/assignments?course_id={course.COURSE_ID}&token={token}", timeout=60) as listing:
            released = json.loads(listing.read())
        with urllib.request.urlopen(f"{base}/formgrader?token={token}", timeout=60) as response:
            page = response.read().decode()
        with urllib.request.urlopen(f"{base}/formgrader/api/assignments?token={token}", timeout=60) as response:
            assignments = json.loads(response.read())
        with urllib.request.urlopen(f"{base}/formgrader/api/assignments", timeout=60) as anonymous:  # without the token
            refused = (anonymous.url, anonymous.read().decode())
    assert response.status == 200 and "formgrader" in page.lower()
    assert "/login" in refused[0] and CHAPTER not in refused[1], refused[0]  # sent to the login page, shown nothing
    assert [assignment["name"] for assignment in assignments] == [CHAPTER], assignments
    assert released["success"] and [(item["assignment_id"], item["status"]) for item in released["value"]] == [(CHAPTER, "released")], released
