"""The workbook as an nbgrader course (issue 22): ``make course`` from the real chapters, and ``make grade`` with nbgrader's own commands.

The grading tests return chapters as eight students would: chapter 03 (three exercises worth 1, 2 and 2 points)
answered with the solutions and with the stored wrong answers, and a tiny chapter without TensorFlow (worth the
same) broken in six ways, which only nbgrader's mechanics decide; each chapter in a course of its own. Each
returned notebook gets a row in its course's gradebook; none stops the others from being graded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.workbook import course, executor, release, sandbox
from helpers.workbook.exercise_layout import CHECK_TAG, EXERCISE_KEY, SOLUTION_TAG, STUB_TAG, Exercise, find
from tests.kept import content_key, kept

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
    source = course.course_notebook(chapter, CHAPTER)
    assert len(source.cells) == len(chapter.cells) - len(exercises) + 2  # the solution cells out, the header and the licences' cell in
    assert source.cells[0].id == release.HEADER_ID and source.cells[-1].source == course.LICENSE_CELL
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


def test_the_course_configuration_loads_as_nbgrader_loads_it_and_sets_what_the_course_needs(tmp_path: Path) -> None:
    (tmp_path / "nbgrader_config.py").write_text(course.config_text(Path("/courses/tf")), encoding="utf-8")
    config = course.loaded_config(tmp_path)
    assert (config.CourseDirectory.course_id, config.Exchange.root) == (course.COURSE_ID, "/courses/tf/exchange")
    assert (config.ClearSolutions.code_stub, config.ClearOutput.enabled, config.Execute.timeout) == ({"python": ""}, False, course.CELL_TIMEOUT_SECONDS)
    assert config.Autograde.autograde_preprocessors[0] is sandbox.SandboxedExecute  # in place of nbgrader's Execute, the rest as nbgrader has them
    course.require_sandboxed_autograding(tmp_path)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("c = get_config()\nc.Autograde.autograde_preprocessors = []\n", "does not run autograding in the sandbox"),
        ("c = get_config()\nimport no_such_module\n", "fails to load: ModuleNotFoundError"),  # nbgrader would only log it, and run unsandboxed
    ],
)
def test_grading_refuses_a_configuration_that_would_not_sandbox_it(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "nbgrader_config.py").write_text(text, encoding="utf-8")
    with pytest.raises(course.CourseError, match=says):
        course.require_sandboxed_autograding(tmp_path)


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
    for path in chapters:  # each chapter goes out with the licences its last cell links to, the seed map and the glossary
        files = ["LICENSE", "LICENSE-docs", "seed_map.md", "glossary.md", path.name]
        images = release.shown_images(nbformat.read(path, as_version=4))  # and the images it shows (06's screenshots)
        assert sorted(files) == sorted(release.bundled_files(path.stem))
        assert sorted(item.name for item in (root / "release" / path.stem).iterdir()) == sorted(files + (["images"] if images else []))
        assert sorted(f"images/{item.name}" for item in (root / "release" / path.stem / "images").glob("*")) == sorted(images)
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

#: The chapter that exercises nbgrader's mechanics: three exercises worth 1, 2 and 2 points, like chapter 03's, in a
#: chapter that imports no TensorFlow (its cells take milliseconds), so it is graded in seconds.
TINY_CHAPTER = "00_tiny_grading"
#: The time limit of a cell of the tiny chapter: every cell of it is instant, so the endless one is cut soon.
TINY_TIMEOUT = 10


def _exercise(number: int, task: str, stub: str, check: str, solution: str, points: int, wrong: dict[str, str], right: str) -> list[Any]:
    """An exercise's four cells, in the layout of helpers/exercises.py: the task, the stub, the check, the solution and its answers."""
    check_cell = nbformat.v4.new_code_cell(f'with exercises.check("Exercise {number}", hint="read the task again"):\n{check}')
    answers = {"points": points, "wrong_answers": [{"code": code, "mistake": mistake} for code, mistake in wrong.items()], "right_answers": [right]}
    cells = [
        nbformat.v4.new_markdown_cell(f"**Exercise {number}.** {task}"),
        nbformat.v4.new_code_cell(stub, metadata={"tags": [STUB_TAG]}),
        check_cell,
        nbformat.v4.new_markdown_cell(f"<details><summary>Solution</summary>\n\n```python\n{solution}\n```\n\n</details>", metadata={"tags": [SOLUTION_TAG]}),
    ]
    check_cell.metadata["tags"] = [CHECK_TAG]
    cells[3].metadata[EXERCISE_KEY] = answers
    return cells


def tiny_chapter(folder: Path) -> Path:
    """A chapter without TensorFlow, in the workbook's exercise layout: a value (1 point), a loop (2), a function (2)."""
    cells = [
        nbformat.v4.new_markdown_cell(f"# {TINY_CHAPTER}\n\nThree exercises that take no time to run."),
        nbformat.v4.new_code_cell("from helpers import exercises"),
        *_exercise(
            1, "Set `answer` to 42.", "answer = ...  # a whole number",
            "    exercises.answered(answer)\n    assert isinstance(answer, int), \"a whole number, please\"\n"
            "    assert answer >= 42, \"too small\"\n    assert answer <= 42, \"too large\"",
            "answer = 42", 1, {"answer = 41": "too small", "answer = 43": "too large", "answer = '42'": "a whole number"}, "answer = 6 * 7",
        ),
        *_exercise(
            2, "Set `total` to the sum of 0, 1, ..., 9.", "total = ...",
            "    exercises.answered(total)\n    assert total != 36, \"stops one short\"\n    assert total != 55, \"counts 10 too\"\n"
            "    assert isinstance(total, int), \"a number, please\"\n    assert total == 45, \"not the sum\"",
            "total = sum(range(10))", 2, {"total = sum(range(9))": "stops one short", "total = sum(range(11))": "counts 10 too", "total = '45'": "a number"},
            "total = 0\nfor number in range(10):\n    total += number",
        ),
        *_exercise(
            3, "Write `double(x)`, which returns twice `x`.", "def double(x):\n    raise exercises.NotAnswered(\"write double here\")",
            "    assert double(5) != 7, \"adds 2 instead of doubling\"\n    assert double(5) != 25, \"squares instead of doubling\"\n"
            "    assert isinstance(double(5), int), \"returns text, not a number\"\n    assert double(2) == 4 and double(5) == 10, \"not twice x\"",
            "def double(x):\n    return 2 * x", 2,
            {"def double(x):\n    return x + 2": "adds 2", "def double(x):\n    return x ** 2": "squares",
             "def double(x):\n    return str(x) * 2": "returns text"},
            "def double(x):\n    return x + x",
        ),
    ]  # fmt: skip
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}, "language_info": {"name": "python"}}
    path = folder / f"{TINY_CHAPTER}.ipynb"
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=metadata), path)
    return path


def test_the_tiny_chapter_is_in_the_exercise_layout_worth_what_chapter_03_is_and_its_checks_tell_wrong_from_right(tmp_path: Path) -> None:
    """Its checks run here, in this process (no kernel): the stub unsolved, each wrong answer rejected naming its mistake, each right answer solved."""
    from helpers import exercises as checks

    notebook = nbformat.read(tiny_chapter(tmp_path), as_version=4)
    tiny = find(notebook)
    real = find(nbformat.read(chapter_path(CHAPTER), as_version=4))
    assert [exercise.points for exercise in tiny] == [exercise.points for exercise in real] == [1, 2, 2]
    for exercise in tiny:
        tries = [(notebook.cells[exercise.stub].source, "unsolved", "not solved yet")]
        tries += [(wrong.code, "rejected", wrong.mistake) for wrong in exercise.wrong_answers]
        tries += [(right, "solved", "solved.") for right in exercise.right_answers]
        for code, outcome, said in tries:
            namespace: dict[str, Any] = {"exercises": checks}
            exec(code, namespace)
            exec(notebook.cells[exercise.check].source, namespace)
            assert (checks.last_outcome(), said in checks.last_feedback()) == (outcome, True), (exercise.number, code, checks.last_feedback())


def _cell(notebook: Any, grade_id: str) -> int:
    return next(index for index, cell in enumerate(notebook.cells) if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _answered(notebook: Any, answers: dict[int, str]) -> Any:
    for number, code in answers.items():
        notebook.cells[_cell(notebook, f"exercise-{number}-answer")].source = code
    return notebook


def _returned(root: Path, chapter: str, student: str, edit: Any) -> None:
    released = root / "release" / chapter / f"{chapter}.ipynb"
    folder = root / "returned" / student / chapter
    folder.mkdir(parents=True)
    if isinstance(edit, str):  # the file's text itself
        (folder / released.name).write_text(edit)
        return
    nbformat.write(edit(nbformat.read(released, as_version=4)), folder / released.name)


def _grade(chapter: Path, root: Path, returned: dict[str, Any], timeout: int) -> dict[str, course.Grade]:
    """Build the course of ``chapter`` in ``root``, return it as each student of ``returned`` edits it, grade them all."""
    course.build_course([chapter], root)
    for student, edit in returned.items():
        _returned(root, chapter.stem, student, edit)
    course.collect(root, root / "returned")
    return {grade.student: grade for grade in course.grade(root, timeout=timeout)}


#: What the graded courses are made of: a change to one of these grades them again (:func:`_kept_grades`).
GRADING_INPUTS = ("helpers", "tests/test_workbook_course.py", f"notebooks/{CHAPTER}.ipynb", "LICENSE", "LICENSE-docs", "requirements.txt")


def _kept_grades(name: str, grade: Callable[[Path], dict[str, course.Grade]], inputs: tuple[str, ...] = GRADING_INPUTS) -> dict[str, course.Grade]:
    """The grades of ``grade(folder)``, graded once and kept while ``inputs`` are unchanged (``tests/kept.py``), as the book is."""

    def make(folder: Path) -> None:
        grades = [dataclasses.asdict(value) for value in grade(folder).values()]
        (folder / "grades.json").write_text(json.dumps(grades, indent=1), encoding="utf-8")

    folder = kept(f"test-grading/{name}", content_key(inputs), make)
    return {row["student"]: course.Grade(**row) for row in json.loads((folder / "grades.json").read_text(encoding="utf-8"))}


@pytest.fixture(scope="module")
def graded_answers() -> dict[str, course.Grade]:
    """Chapter 03 returned answered with the solutions (ada) and with wrong answers (bo), graded: what the chapter's checks decide."""
    exercises = find(nbformat.read(chapter_path(CHAPTER), as_version=4))
    solutions = {exercise.number: exercise.solution_code for exercise in exercises}
    wrong_odd = {exercise.number: exercise.wrong_answers[0].code if exercise.number % 2 else exercise.other_right_answers[0] for exercise in exercises}
    returned = {"ada": lambda notebook: _answered(notebook, solutions), "bo": lambda notebook: _answered(notebook, wrong_odd)}
    return _kept_grades("answers", lambda folder: _grade(chapter_path(CHAPTER), folder / "course", returned, TIMEOUT))


@pytest.fixture(scope="module")
def graded_mechanics() -> dict[str, course.Grade]:
    """The tiny chapter returned broken in six ways, graded: what nbgrader and ``course.grade`` make of each."""
    return _kept_grades("mechanics", _grade_mechanics)


def _grade_mechanics(root: Path) -> dict[str, course.Grade]:
    chapter = tiny_chapter(root / "chapters")
    solutions = {exercise.number: exercise.solution_code for exercise in find(nbformat.read(chapter, as_version=4))}

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
        "cy": lambda notebook: _answered(notebook, {**solutions, 1: "answer = [6 * 7,\n"}),  # a syntax error
        "di": without("exercise-1-check"),
        "ed": check_made_to_pass,
        "fa": without("exercise-3-answer"),
        "gu": lambda notebook: _answered(notebook, {**solutions, 2: "while True:\n    pass\n"}),  # a cell that never ends
        "hu": '{"cells": [',  # not JSON: a file cut short
    }
    return _grade(chapter, root / "course", returned, TINY_TIMEOUT)


def test_the_solutions_get_full_marks_and_the_wrong_answers_none(graded_answers: dict[str, course.Grade]) -> None:
    assert (graded_answers["ada"].score, graded_answers["ada"].max_score, graded_answers["ada"].problem) == (5.0, 5.0, "")
    assert (graded_answers["bo"].score, graded_answers["bo"].max_score) == (2.0, 5.0)  # exercises 1 and 3 wrong (1 + 2 points), exercise 2 right
    assert set(graded_answers) == {"ada", "bo"} and {grade.chapter for grade in graded_answers.values()} == {CHAPTER}


def test_a_broken_answer_or_check_costs_only_its_exercise(graded_mechanics: dict[str, course.Grade]) -> None:
    graded = graded_mechanics
    assert (graded["cy"].score, graded["cy"].problem) == (4.0, "")  # the syntax error: exercise 1's check raises, the others pass
    # nbgrader puts back an edited check (a locked cell: its source is restored from the gradebook), so exercise 1's stub gets no point ...
    assert (graded["ed"].score, graded["ed"].problem) == (4.0, "")
    # ... but not a deleted one: that exercise gets no points, and the summary says why
    assert (graded["di"].score, graded["di"].problem) == (4.0, "exercise-1-check deleted: no points for it")
    assert (graded["fa"].score, graded["fa"].problem) == (3.0, "")  # exercise 3's answer cell deleted: its check finds no function


def test_a_cell_that_never_ends_or_a_file_that_is_not_a_notebook_gets_a_grade_and_a_reason(graded_mechanics: dict[str, course.Grade]) -> None:
    graded = graded_mechanics
    # nbgrader interrupts the cell at the time limit and goes on: only exercise 2 (2 points) is lost
    assert (graded["gu"].score, graded["gu"].problem) == (3.0, f"exercise-2-answer ran over {TINY_TIMEOUT} s and was stopped"), graded["gu"]
    assert graded["hu"].score == 0.0 and graded["hu"].max_score == 5.0 and re.search(r"JSON|json", graded["hu"].problem), graded["hu"]
    assert set(graded) == {"cy", "di", "ed", "fa", "gu", "hu"} and {grade.chapter for grade in graded.values()} == {TINY_CHAPTER}


@pytest.mark.process
def test_nbgraders_validate_fails_an_unsolved_copy_as_grading_would_and_passes_a_solved_one(tmp_path: Path) -> None:
    """The Validate button (``nbgrader validate``) runs the student's copy with the checks raising, so an untouched copy fails."""
    import subprocess
    import sys

    chapter = tiny_chapter(tmp_path / "chapters")
    root = course.build_course([chapter], tmp_path / "course")
    released = root / "release" / TINY_CHAPTER / chapter.name
    solved = tmp_path / "solved" / chapter.name
    solved.parent.mkdir()
    solutions = {exercise.number: exercise.solution_code for exercise in find(nbformat.read(chapter, as_version=4))}
    nbformat.write(_answered(nbformat.read(released, as_version=4), solutions), solved)

    def validate(path: Path) -> str:
        done = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(path)], cwd=root, capture_output=True, text=True, timeout=300)
        return done.stdout + done.stderr

    untouched = validate(released)
    assert "VALIDATION FAILED" in untouched and "Exercise 1: not solved yet" in untouched and "Success!" not in untouched, untouched
    assert "Success! Your notebook passes all the tests." in validate(solved)


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


def _kept_course(name: str) -> Path:
    """The course folder a fixture of this module graded and kept (the fixture must have run: use it in the test)."""
    from helpers.paths import build_root

    return build_root() / "test-grading" / name / content_key(GRADING_INPUTS) / "made" / "course"


@pytest.mark.usefixtures("graded_answers", "graded_mechanics")
def test_every_returned_notebook_gets_a_page_of_its_exercises_without_hidden_tests_tracebacks_or_paths() -> None:
    """The real pages of the graded courses: chapter 03 (bo: wrong answers to exercises 1 and 3) and the tiny chapter's broken returns."""
    pages = {
        (name, student): (_kept_course(name) / "feedback" / student / chapter / f"{chapter}.html").read_text(encoding="utf-8")
        for name, chapter, students in (("answers", CHAPTER, ("ada", "bo")), ("mechanics", TINY_CHAPTER, ("cy", "di", "ed", "fa", "gu", "hu")))
        for student in students
    }
    for (name, student), page in pages.items():
        assert "BEGIN HIDDEN TESTS" not in page and "require_solved" not in page and "Traceback" not in page, (name, student)
        assert not re.search(r"/(work|tmp|root|home|sandbox|usr)/", page), (name, student)
    bo = pages["answers", "bo"]
    assert "<h1>Chapter 03 · Gradient clipping: you won 2 of 5 points</h1>" in bo
    assert "Exercise 1 (1 point)" in bo and "Exercise 2 (2 points)" in bo and "<strong>Hint:</strong>" in bo
    assert pages["answers", "ada"].count("Hint:") == 0
    assert "<strong>Hint:</strong> read the task again" in pages["mechanics", "cy"]  # a syntax error: the code raised, the hint shows
    assert "could not be graded" in pages["mechanics", "hu"] and "JSON" in pages["mechanics", "hu"]  # not JSON, and the page says so
    assert f"<li>exercise-2-answer ran over {TINY_TIMEOUT} s and was stopped</li>" in pages["mechanics", "gu"]  # the cell that never ends


@pytest.mark.usefixtures("graded_answers")
def test_the_class_report_counts_each_mistake_the_checks_named() -> None:
    folder = _kept_course("answers")
    report = (folder / "class_report.md").read_text(encoding="utf-8")
    exercises = find(nbformat.read(chapter_path(CHAPTER), as_version=4))
    mistake = exercises[0].wrong_answers[0].mistake  # bo's wrong answer to exercise 1, named by its check
    assert re.search(rf"^- 1 x .*{re.escape(mistake)}", report, flags=re.MULTILINE), report
    rows = (folder / "class_report.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("chapter,exercise") and len(rows) > 3, rows[:3]
