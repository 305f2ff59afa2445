"""Grading a class (issue 32, item 3): submission times on every route, choosing what to grade, only the new and changed
notebooks graded again, in parallel, with the same ``grades.csv`` whatever ``--jobs``.

The unit tests read and copy files; the class test grades the tiny chapter of ``tests/test_workbook_course.py``, returned
by two students, four times over (kept per content key, as the other graded courses are).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.failures import UsageError
from helpers.workbook import course, lms, sandbox
from helpers.workbook.commands import make_parser
from helpers.workbook.exercise_layout import find
from tests.kept import content_key, kept
from tests.test_workbook_course import GRADING_INPUTS, TINY_CHAPTER, TINY_TIMEOUT, _answered, _returned, tiny_chapter


def _returned_folder(top: Path, student: str, chapter: str = "03_gradient_clipping", modified: float | None = None) -> Path:
    folder = top / student / chapter
    folder.mkdir(parents=True)
    (folder / f"{chapter}.ipynb").write_text("{}", encoding="utf-8")
    if modified is not None:
        os.utime(folder / f"{chapter}.ipynb", (modified, modified))
    return folder


def _timestamp(root: Path, student: str, chapter: str = "03_gradient_clipping") -> str:
    return (root / "submitted" / student / chapter / course.TIMESTAMP_FILE).read_text(encoding="utf-8")


def test_a_copied_folder_keeps_its_own_time_else_the_times_file_else_its_newest_file(tmp_path: Path) -> None:
    returned, root = tmp_path / "returned", tmp_path / "course"
    own = _returned_folder(returned, "ada", modified=0)
    (own / course.TIMESTAMP_FILE).write_text("2026-12-01 08:00:00.000000 UTC", encoding="utf-8")  # nbgrader's exchange wrote it
    _returned_folder(returned, "bo", modified=datetime(2026, 12, 9, 10, 30, tzinfo=UTC).timestamp())
    _returned_folder(returned, "cy", modified=0)
    times = {("cy", "03_gradient_clipping"): datetime.fromisoformat("2026-12-11T00:30:00+01:00")}
    assert course.collect(root, returned, times) == [(name, "03_gradient_clipping") for name in ("ada", "bo", "cy")]
    assert _timestamp(root, "ada") == "2026-12-01 08:00:00.000000 UTC"
    assert _timestamp(root, "bo") == "2026-12-09 10:30:00.000000 UTC"
    assert _timestamp(root, "cy") == "2026-12-10 23:30:00.000000 UTC"  # its offset taken into account


@pytest.mark.usefixtures("time_zone")
def test_a_times_file_is_read_in_local_time_unless_it_says_otherwise_and_a_bad_row_is_named(tmp_path: Path) -> None:
    path = tmp_path / "times.csv"
    path.write_text("student,chapter,submitted\nada,03_gradient_clipping,2026-12-10 23:59\nbo,03_gradient_clipping,2026-12-10T23:59+02:00\n")
    times = course.read_times(path)
    assert times[("ada", "03_gradient_clipping")] == datetime(2026, 12, 10, 15, 59, tzinfo=UTC)  # as --due reads it: eight hours east
    assert times[("bo", "03_gradient_clipping")] == datetime(2026, 12, 10, 21, 59, tzinfo=UTC)
    path.write_text("student,chapter,submitted\nada,03_gradient_clipping,yesterday\n")
    with pytest.raises(UsageError, match=r"times.csv, line 2: 'yesterday' is not a date and time like 2026-12-10 23:59"):
        course.read_times(path)
    path.write_text("name,when\nada,2026-12-10\n")
    with pytest.raises(UsageError, match="starts with the header student,chapter,submitted"):
        course.read_times(path)


def test_a_times_file_that_names_a_notebook_not_returned_is_refused(tmp_path: Path) -> None:
    _returned_folder(tmp_path / "returned", "ada")
    times = {("ada", "03_gradient_clipping"): datetime(2026, 12, 1, tzinfo=UTC), ("bob", "03_gradient_clipping"): datetime(2026, 12, 1, tzinfo=UTC)}
    with pytest.raises(UsageError, match="names 1 notebook.s. not returned in .*, first bob/03_gradient_clipping"):
        course.collect(tmp_path / "course", tmp_path / "returned", times)


PAIRS = [("ada", "03_gradient_clipping"), ("ada", "04_learning_rate_schedules"), ("bo", "03_gradient_clipping")]


@pytest.mark.parametrize(
    ("students", "chapters", "chosen"),
    [
        (None, None, PAIRS),
        (["bo"], None, [PAIRS[2]]),
        (None, ["03"], [PAIRS[0], PAIRS[2]]),
        (["ada"], ["04_learning_rate_schedules"], [PAIRS[1]]),
    ],
)
def test_grading_chooses_students_and_chapters_by_id_name_or_number(students: Any, chapters: Any, chosen: list[tuple[str, str]]) -> None:
    assert course.select(PAIRS, students, chapters) == chosen


@pytest.mark.parametrize(
    ("students", "chapters", "says"),
    [
        (["cy"], None, "nothing returned by cy; returned: ada, bo"),
        (None, ["05"], "no returned chapter 05; returned: 03_gradient_clipping, 04_learning_rate_schedules"),
        (["bo"], ["04"], "no returned chapter 04; returned: 03_gradient_clipping"),
        (None, ["0"], "no returned chapter 0;"),  # a number prefix is a whole number, not any start of the name
    ],
)
def test_choosing_what_was_not_returned_is_refused_naming_what_was(students: Any, chapters: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        course.select(PAIRS, students, chapters)


def test_by_default_one_notebook_a_core_as_many_as_the_memory_holds() -> None:
    cores = os.cpu_count() or 1
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert course.default_jobs(sandbox.Limits()) == max(1, min(cores, memory // sandbox.Limits().memory_bytes))
    assert course.default_jobs(sandbox.Limits(memory_bytes=memory)) == 1  # one fills the memory
    assert course.default_jobs(sandbox.Limits(memory_bytes=1)) == cores


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--jobs", "0"], "argument --jobs: 0 is less than 1"),
        (["--jobs", "two"], "argument --jobs: 'two' is not a whole number"),
    ],
)
def test_the_grade_command_refuses_a_number_of_jobs_that_is_not_one_or_more(arguments: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        make_parser().parse_args(["grade", *arguments])
    assert says in capsys.readouterr().err


def test_the_key_of_a_returned_notebook_changes_with_what_its_grade_depends_on(tmp_path: Path) -> None:
    root = tmp_path / "course"
    (root / "source" / "03_gradient_clipping").mkdir(parents=True)
    (root / "source" / "03_gradient_clipping" / "03_gradient_clipping.ipynb").write_text("{}", encoding="utf-8")
    (root / "nbgrader_config.py").write_text(course.config_text(root), encoding="utf-8")
    course.collect(root, _returned_folder(tmp_path / "returned", "ada").parent.parent)
    settings = {"timeout": 10}

    def key() -> str:
        return course.grading_key(root, "ada", "03_gradient_clipping", settings)

    first = key()
    assert key() == first
    returned = root / "submitted" / "ada" / "03_gradient_clipping" / "03_gradient_clipping.ipynb"
    returned.write_text('{"cells": []}', encoding="utf-8")
    changed = key()
    assert changed != first
    settings["timeout"] = 20
    assert key() != changed


#: What the class test is made of: a change to one of these grades the class again.
CLASS_INPUTS = (*GRADING_INPUTS, "tests/test_workbook_grading.py")


@pytest.fixture(scope="module")
def graded_class() -> dict[str, Any]:
    """The tiny chapter returned by ada (solved) and bo (one wrong answer), graded four times; what each grading did."""

    def make(folder: Path) -> None:
        (folder / "observed.json").write_text(json.dumps(_grade_class(folder)), encoding="utf-8")

    made = kept("test-grading/class", content_key(CLASS_INPUTS), make)
    return dict(json.loads((made / "observed.json").read_text(encoding="utf-8")))


def _grade_class(root: Path) -> dict[str, Any]:
    chapter = tiny_chapter(root / "chapters")
    solutions = {exercise.number: exercise.solution_code for exercise in find(nbformat.read(chapter, as_version=4))}
    folder = course.build_course([chapter], root / "course")
    _returned(folder, TINY_CHAPTER, "ada", lambda notebook: _answered(notebook, solutions))
    _returned(folder, TINY_CHAPTER, "bo", lambda notebook: _answered(notebook, {**solutions, 1: "answer = 41"}))
    course.collect(folder, folder / "returned")

    def graded() -> dict[str, int]:  # when each autograded copy was written
        return {student: (folder / "autograded" / student / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb").stat().st_mtime_ns for student in ("ada", "bo")}

    def scores(grades: list[course.Grade]) -> dict[str, float]:
        return {grade.student: grade.score for grade in grades}

    observed: dict[str, Any] = {"parallel": scores(course.grade(folder, timeout=TINY_TIMEOUT, jobs=2))}
    observed["csv_parallel"] = (folder / "grades.csv").read_text(encoding="utf-8")
    before = graded()
    observed["unchanged"] = scores(course.grade(folder, timeout=TINY_TIMEOUT, jobs=2))
    observed["regraded_unchanged"] = [student for student, when in graded().items() if when != before[student]]
    returned = folder / "submitted" / "bo" / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb"
    nbformat.write(_answered(nbformat.read(returned, as_version=4), solutions), returned)  # bo returns it again, put right
    before = graded()
    observed["changed"] = scores(course.grade(folder, timeout=TINY_TIMEOUT, jobs=2))
    observed["regraded_changed"] = [student for student, when in graded().items() if when != before[student]]
    nbformat.write(_answered(nbformat.read(returned, as_version=4), {**solutions, 1: "answer = 41"}), returned)  # and back
    before = graded()
    observed["again"] = scores(course.grade(folder, timeout=TINY_TIMEOUT, jobs=1, again=True))
    observed["regraded_again"] = [student for student, when in graded().items() if when != before[student]]
    observed["csv_serial"] = (folder / "grades.csv").read_text(encoding="utf-8")
    return observed


def test_a_class_is_graded_in_parallel_and_only_what_changed_is_graded_again(graded_class: dict[str, Any]) -> None:
    assert graded_class["parallel"] == {"ada": 5.0, "bo": 4.0}
    assert (graded_class["unchanged"], graded_class["regraded_unchanged"]) == ({"ada": 5.0, "bo": 4.0}, [])
    assert (graded_class["changed"], graded_class["regraded_changed"]) == ({"ada": 5.0, "bo": 5.0}, ["bo"])
    assert (graded_class["again"], graded_class["regraded_again"]) == ({"ada": 5.0, "bo": 4.0}, ["ada", "bo"])


def test_the_same_returned_notebooks_give_the_same_grades_csv_whatever_the_number_of_jobs(graded_class: dict[str, Any]) -> None:
    parallel, serial = graded_class["csv_parallel"], graded_class["csv_serial"]
    assert parallel == serial and parallel.count("\n") == 3, parallel
    assert [line.split(",")[3] for line in parallel.splitlines()[1:]] == ["ada", "bo"]  # student_id, sorted


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        (r"(?P<student_id>\w+", "is not a regular expression"),
        (r"(?P<student>\w+)_(?P<file_id>.*)", r"needs the named groups \(\?P<student_id>...\)"),
        (r"(?P<student_id>\w+)_.*", r"needs the named groups \(\?P<file_id>...\)"),
    ],
)
def test_a_name_pattern_without_the_groups_nbgrader_needs_is_refused(pattern: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        lms.check_pattern(pattern)


def test_a_submission_time_in_nbgraders_dashed_form_is_read_as_the_date_and_time_it_writes(tmp_path: Path) -> None:
    from nbgrader.utils import parse_utc

    assert str(parse_utc("2026-12-10-23-59-00")) != "2026-12-10 23:59:00"  # nbgrader alone reads the last three numbers as a time zone
    assert lms.submission_time("2026-12-10-23-59-00", tmp_path) == "2026-12-10 23:59:00+00:00"
    assert str(parse_utc(lms.submission_time("2026-12-10-23-59-00", tmp_path))) == "2026-12-10 23:59:00"
    assert lms.submission_time("2026-12-10 23:59 UTC", tmp_path) == "2026-12-10 23:59 UTC"  # any other form: nbgrader reads it
    file = tmp_path / "returned.ipynb"
    file.write_text("{}", encoding="utf-8")
    os.utime(file, (1_800_000_000, 1_800_000_000))
    assert lms.submission_time(None, file) == "2027-01-15 08:00:00+00:00"  # no time in the name: the file's own


@pytest.mark.process
def test_a_learning_platforms_download_is_collected_with_each_students_submission_time(tmp_path: Path) -> None:
    """Through nbgrader's zip_collect: the time in the name (nbgrader's example form), else the time the zip records for the file."""
    import zipfile

    root = course.build_course([tiny_chapter(tmp_path / "chapters")], tmp_path / "course")
    released = (root / "release" / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb").read_bytes()
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr(f"tiny_ada_attempt_2026-12-10-23-59-00_{TINY_CHAPTER}.ipynb", released)
        archive.writestr(zipfile.ZipInfo(f"tiny_bo_attempt_{TINY_CHAPTER}.ipynb", date_time=(2026, 12, 11, 8, 30, 0)), released)
        archive.writestr("notes.txt", "not a notebook")
    assert lms.zip_collect(root, TINY_CHAPTER, [download]) == ["ada"]  # bo's name has no time: the default pattern does not match it
    assert _timestamp(root, "ada", TINY_CHAPTER) == "2026-12-10 23:59:00"  # nbgrader writes UTC without a zone
    pattern = r"tiny_(?P<student_id>\w+?)_attempt_(?:[\d-]+_)?(?P<file_id>\d\d_\w+\.ipynb)"
    assert lms.zip_collect(root, TINY_CHAPTER, [download], pattern) == ["ada", "bo"]
    assert _timestamp(root, "bo", TINY_CHAPTER) == "2026-12-11 08:30:00"  # the zip's own record of the file
    assert (root / "submitted" / "bo" / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb").read_bytes() == released
    with pytest.raises(UsageError, match="no file in download.zip has a name that --name-pattern matches"):
        lms.zip_collect(root, TINY_CHAPTER, [download], r"(?P<student_id>x)(?P<file_id>y)")


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--times", "times.csv"], "--times goes with --from"),
        (["--name-pattern", "(?P<student_id>.)(?P<file_id>.)"], "--name-pattern goes with --zip"),
        (["--zip", "download.zip"], "--zip needs one --chapter"),
        (["--zip", "download.zip", "--chapter", "03", "--chapter", "04"], "--zip needs one --chapter"),
        (["--student", "ada"], "nothing to grade: no returned notebook in"),
    ],
)
def test_the_grade_command_refuses_options_that_do_not_go_together_in_one_line(
    arguments: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers.workbook.commands import main

    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path))
    (tmp_path / "course" / "source" / "03_gradient_clipping").mkdir(parents=True)
    assert main(["grade", *arguments]) == UsageError.exit_status
    [line] = capsys.readouterr().err.strip().splitlines()
    assert says in line


def test_copying_with_students_and_chapters_copies_only_theirs_and_names_what_was_not_returned(tmp_path: Path) -> None:
    returned, root = tmp_path / "returned", tmp_path / "course"
    for student, chapter in PAIRS:
        _returned_folder(returned, student, chapter)
    assert course.collect(root, returned, students=["ada"], chapters=["03"]) == [PAIRS[0]]
    assert course.submissions(root) == [PAIRS[0]]
    with pytest.raises(UsageError, match="nothing returned by cy; returned: ada, bo"):
        course.collect(root, returned, students=["cy"])
