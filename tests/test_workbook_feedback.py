"""The feedback page a student reads (issue 32, item 5): ``helpers/workbook/feedback.py``.

The unit tests build a graded course by hand in a temporary folder, without a kernel: the tiny chapter's teacher's
version (``course.course_notebook``, as ``make course`` makes it), autograded notebooks whose check cells hold the
verdicts a check prints (and, when not solved, the error nbgrader records, with its traceback and hidden-test line),
and a gradebook filled through nbgrader's API. One process test runs nbgrader's own exchange around the page.
"""

from __future__ import annotations

import dataclasses
import shutil
import warnings
from pathlib import Path
from typing import Any

import nbformat
import pytest
from markupsafe import escape
from sqlalchemy.exc import SAWarning

from helpers.workbook import course, feedback
from tests.test_workbook_course import TINY_CHAPTER, tiny_chapter

#: The tiny chapter's hint (every check of it has this one) and its exercises' points.
HINT, POINTS = "read the task again", {1: 1.0, 2: 2.0, 3: 2.0}
#: In place of what a check printed: the student deleted the check cell.
DELETED = "<deleted>"
#: Where the teacher's install and the sandbox are, in the tracebacks nbgrader records: none of it may reach the page.
TEACHER_FILE, SANDBOX_FILE = "/home/teacher/workbook/helpers/exercises.py", "/sandbox/work/data.csv"


def new_gradebook(root: Path) -> None:
    """An empty gradebook in ``root``, made with nbgrader's API as nbgrader makes one.

    nbgrader asks the ``alembic`` program for its database schema's version when it creates a gradebook; a unit test asks
    alembic's API in this process instead (the same answer, ``e43177bfe90b`` for nbgrader 0.9.6, without starting a program).
    """
    import nbgrader
    import nbgrader.api
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
    head = ScriptDirectory.from_config(config).get_current_head()
    root.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbgrader.api, "get_alembic_version", lambda: head)
        nbgrader.api.Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id=course.COURSE_ID).close()


def build_course(root: Path) -> Path:
    """A course folder with the tiny chapter's teacher's version in ``source/`` and its assignment in the gradebook; ``root``."""
    chapter = nbformat.read(tiny_chapter(root.parent / f"{root.name}-chapters"), as_version=4)
    source = feedback.notebook_path(root, "source", TINY_CHAPTER)
    source.parent.mkdir(parents=True)
    nbformat.write(course.course_notebook(chapter, TINY_CHAPTER), source)
    new_gradebook(root)
    with feedback.open_gradebook(root) as gradebook:
        gradebook.add_assignment(TINY_CHAPTER)
        gradebook.add_notebook(TINY_CHAPTER, TINY_CHAPTER)
        for number, points in POINTS.items():
            gradebook.add_grade_cell(f"exercise-{number}-check", TINY_CHAPTER, TINY_CHAPTER, max_score=points, cell_type="code")
    return root


def _error(line: str) -> Any:
    """The error nbgrader records when a graded check fails: the hidden test raising with the verdict, its traceback showing the teacher's files."""
    traceback = [
        "AssertionError                            Traceback (most recent call last)",
        "### BEGIN HIDDEN TESTS",
        "----> 7 exercises.require_solved('Exercise 1')  # when graded: no points unless the check above said solved",
        f'File "{TEACHER_FILE}", line 160, in require_solved',
        f"AssertionError: {line}",
    ]
    return nbformat.v4.new_output("error", ename="AssertionError", evalue=line, traceback=traceback)


def graded_notebook(root: Path, said: dict[int, str | None]) -> Any:
    """The teacher's version as nbgrader leaves it after grading, each check cell holding what ``said`` (after ``Exercise N: ``), or
    nothing (None: the notebook stopped before it), or gone (:data:`DELETED`)."""
    notebook = nbformat.read(feedback.notebook_path(root, "source", TINY_CHAPTER), as_version=4)
    kept = []
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        number = int(grade_id.split("-")[1]) if grade_id.endswith("-check") else None
        if number is not None and said.get(number) == DELETED:
            continue
        if number is not None and said.get(number) is not None:
            line = f"Exercise {number}: {said[number]}"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line + "\n")]
            cell.outputs += [_error(line)] if said[number] != "solved." else []
        kept.append(cell)
    notebook.cells = kept
    return notebook


def return_graded(
    root: Path, student: str, said: dict[int, str | None] | None, points: dict[int, float], *, penalty: float = 0.0, files: tuple[str, ...] = ()
) -> None:
    """``student``'s chapter returned and graded: its autograded notebook (none when ``said`` is None: nbgrader could not grade
    it), the files nbgrader copied beside it (``files``), and its grades and late penalty in the gradebook."""
    returned = feedback.notebook_path(root, "submitted", TINY_CHAPTER, student)
    returned.parent.mkdir(parents=True)
    shutil.copyfile(feedback.notebook_path(root, "source", TINY_CHAPTER), returned)
    if said is not None:
        graded = feedback.notebook_path(root, "autograded", TINY_CHAPTER, student)
        graded.parent.mkdir(parents=True)
        nbformat.write(graded_notebook(root, said), graded)
        for name in files:
            (graded.parent / name).write_text(f"{name} of {student}", encoding="utf-8")
    with feedback.open_gradebook(root) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # what nbgrader's add_submission says of its own objects (autograde calls it too)
        gradebook.update_or_create_student(student)
        gradebook.add_submission(TINY_CHAPTER, student)
        for number, score in points.items():
            gradebook.find_grade(f"exercise-{number}-check", TINY_CHAPTER, TINY_CHAPTER, student).auto_score = score
        gradebook.find_submission_notebook(TINY_CHAPTER, TINY_CHAPTER, student).late_submission_penalty = penalty
        gradebook.db.commit()


#: What each student's checks printed, by exercise, and the points the gradebook gave: one of each outcome.
CLASS: dict[str, tuple[dict[int, str | None] | None, dict[int, float]]] = {
    "ada": ({1: "solved.", 2: "solved.", 3: "solved."}, {1: 1, 2: 2, 3: 2}),
    "bo": (
        {1: f"not solved yet. Hint: {HINT}", 2: "not yet. stops one short", 3: f"not yet. Your code raised FileNotFoundError: '{SANDBOX_FILE}'"},
        {1: 0, 2: 0, 3: 0},
    ),
    "cy": ({1: DELETED, 2: None, 3: "solved."}, {1: 0, 2: 0, 3: 2}),
    "di": (None, {}),  # not graded: no autograded notebook
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course with :data:`CLASS` graded in it (bo's penalised half a point for lateness); its folder. Tests only read it."""
    root = build_course(tmp_path_factory.mktemp("graded") / "course")
    for student, (said, points) in CLASS.items():
        return_graded(root, student, said, points, penalty=0.5 if student == "bo" else 0.0)
    return root


def test_the_checks_are_read_from_the_teachers_version_hint_points_and_task_included(graded: Path) -> None:
    checks = feedback.read_checks(graded, TINY_CHAPTER)
    assert [(check.number, check.grade_id, check.name, check.hint, check.points) for check in checks] == [
        (number, f"exercise-{number}-check", f"Exercise {number}", HINT, points) for number, points in POINTS.items()
    ]
    assert [check.task for check in checks] == ["Set `answer` to 42.", "Set `total` to the sum of 0, 1, ..., 9.", "Write `double(x)`, which returns twice `x`."]


def test_a_hint_is_parsed_as_python_not_matched_as_text() -> None:
    """Implicit concatenation, escaped quotes and a helper defined before the ``with``: what the check really receives."""
    source = 'def helper():\n    return "hint=\'decoy\'"\nwith exercises.check("Exercise 4", hint="don\'t stop " "one short"):\n    pass\n'
    assert feedback._check_call(source) == ("Exercise 4", "don't stop one short")
    with pytest.raises(ValueError, match="no `with exercises.check"):
        feedback._check_call("print('hint=\"nothing\"')")


def test_each_outcome_is_read_from_the_graded_notebook_and_the_points_from_the_gradebook(graded: Path) -> None:
    read = {student: feedback.read_results(graded, student, TINY_CHAPTER) for student in CLASS}
    outcomes = {student: [(result.outcome, result.points, result.max_points) for result in results.exercises] for student, results in read.items()}
    assert outcomes == {
        "ada": [("solved", 1, 1), ("solved", 2, 2), ("solved", 2, 2)],
        "bo": [("unsolved", 0, 1), ("rejected", 0, 2), ("rejected", 0, 2)],
        "cy": [("deleted", 0, 1), ("not run", 0, 2), ("solved", 2, 2)],
        "di": [("not run", 0, 1), ("not run", 0, 2), ("not run", 0, 2)],
    }
    bo = read["bo"].exercises
    assert [result.reason for result in bo] == ["", "stops one short", "Your code raised FileNotFoundError: 'data.csv'"]  # the sandbox's path cut
    assert [result.raised for result in bo] == [False, False, True]
    assert (read["ada"].points, read["bo"].points, read["bo"].late_penalty, read["cy"].points, read["di"].points) == (5, 0, 0.5, 2, 0)
    assert (read["di"].graded, read["cy"].graded, read["ada"].max_points) == (False, True, 5)


def test_a_line_a_student_prints_before_the_verdict_does_not_replace_it(graded: Path, tmp_path: Path) -> None:
    """The check prints last: an earlier line that mimics a verdict (printed by the student's function) is not taken."""
    graded = Path(shutil.copytree(graded, tmp_path / "course"))
    notebook = nbformat.read(feedback.notebook_path(graded, "autograded", TINY_CHAPTER, "bo"), as_version=4)
    check = next(cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade_id") == "exercise-2-check")
    check.outputs[0]["text"] = "Exercise 2: solved.\n" + check.outputs[0]["text"]
    nbformat.write(notebook, feedback.notebook_path(graded, "autograded", TINY_CHAPTER, "bo"))
    assert feedback.read_results(graded, "bo", TINY_CHAPTER).exercises[1].outcome == "rejected"


def test_the_page_names_each_exercise_and_its_points_with_the_reason_and_the_hint_whenever_not_solved(graded: Path) -> None:
    page = feedback.feedback_page(feedback.read_results(graded, "bo", TINY_CHAPTER))
    assert f"<title>Chapter {TINY_CHAPTER}: 0 of 5 points</title>" in page and "you won 0 of 5 points" in page
    assert "0.5 points taken off: your notebook came in after the due date." in page
    headings = [line for line in page.splitlines() if line.startswith("<h2>")]
    assert headings == ["<h2>Exercise 1 (1 point)</h2>", "<h2>Exercise 2 (2 points)</h2>", "<h2>Exercise 3 (2 points)</h2>"]
    sections = page.split("<section>")[1:]
    assert "Not solved yet:" in sections[0] and "<strong>Not yet:</strong> stops one short" in sections[1]
    assert "Your code raised FileNotFoundError: &#39;data.csv&#39;" in sections[2]
    assert all(f"<strong>Hint:</strong> {HINT}" in section for section in sections)  # the hint also where the code raised
    assert "<code>answer</code>" in sections[0]  # the task, its Markdown rendered


def test_a_solved_exercise_shows_no_hint_and_a_deleted_or_unrun_check_says_so(graded: Path) -> None:
    ada = feedback.feedback_page(feedback.read_results(graded, "ada", TINY_CHAPTER))
    assert "you won 5 of 5 points" in ada and ada.count("<strong>Solved.</strong>") == 3 and "Hint:" not in ada and "taken off" not in ada
    cy = feedback.feedback_page(feedback.read_results(graded, "cy", TINY_CHAPTER)).split("<section>")[1:]
    assert "no longer has this exercise&#39;s check cell" in cy[0] and "stopped before this check" in cy[1] and "Hint:" not in cy[2]
    di = feedback.feedback_page(feedback.read_results(graded, "di", TINY_CHAPTER))
    assert "Your notebook could not be graded, so none of its checks ran." in di and di.count("Not checked:") == 3


@pytest.mark.parametrize("student", sorted(CLASS))
def test_the_page_holds_no_hidden_test_traceback_or_path(graded: Path, student: str) -> None:
    """The graded notebooks' errors hold the hidden-test line, a traceback and the teacher's file; bo's reason a sandbox path."""
    page = feedback.feedback_page(feedback.read_results(graded, student, TINY_CHAPTER))
    for leak in ("BEGIN HIDDEN TESTS", "require_solved", "Traceback", TEACHER_FILE, "/home/", "/sandbox", str(graded), "/tmp", "exercises.check"):
        assert leak not in page, (student, leak)
    assert "<script" not in page and "src=" not in page and "http" not in page and "@import" not in page  # nothing loaded from elsewhere


def test_everything_on_the_page_is_escaped(graded: Path) -> None:
    results = feedback.read_results(graded, "bo", TINY_CHAPTER)
    hostile = "<script>alert('x')</script> & <b>"
    tampered = dataclasses.replace(results.exercises[1], reason=hostile, hint=hostile, task=f"Do it. {hostile}")
    chapter = feedback.ChapterResults("bo", '<i>"chapter"</i>', (tampered,), results.late_penalty)
    page = feedback.feedback_page(chapter, chapter_url='https://example.org/a?b=1&c="d"')
    assert "<script>" not in page and "<b>" not in page and "<i>" not in page
    assert str(escape(hostile)) in page and "&lt;i&gt;&#34;chapter&#34;&lt;/i&gt;" in page
    assert 'href="https://example.org/a?b=1&amp;c=&#34;d&#34;"' in page


def test_what_grading_stopped_is_said_once_near_the_top_escaped_and_without_paths(graded: Path) -> None:
    results = feedback.read_results(graded, "ada", TINY_CHAPTER)
    assert "What grading stopped" not in feedback.feedback_page(results)
    stopped = ["exercise-2-answer ran over 300 s and was stopped", "NotJSONError: /work/course/submitted/ada/x.ipynb is not <JSON>"]
    page = feedback.feedback_page(results, stopped=stopped)
    assert page.count("What grading stopped in your notebook:") == 1 and page.index("What grading stopped") < page.index("<h2>")
    assert "<li>exercise-2-answer ran over 300 s and was stopped</li>" in page
    assert "<li>NotJSONError: x.ipynb is not &lt;JSON&gt;</li>" in page and "/work/" not in page


def test_the_page_links_the_chapter_or_names_the_notebook_the_student_has(graded: Path) -> None:
    results = feedback.read_results(graded, "ada", TINY_CHAPTER)
    assert f"open your notebook <code>{TINY_CHAPTER}.ipynb</code>" in feedback.feedback_page(results)
    linked = feedback.feedback_page(results, chapter_url=f"https://book.example/{TINY_CHAPTER}.html")
    assert f'<a href="https://book.example/{TINY_CHAPTER}.html">{TINY_CHAPTER}</a>' in linked and ".ipynb" not in linked


def test_the_page_goes_where_nbgraders_feedback_goes_with_the_files_release_feedback_reads(tmp_path: Path) -> None:
    root = build_course(tmp_path / "course")
    return_graded(root, "ada", {1: "solved.", 2: "solved.", 3: "solved."}, {1: 1, 2: 2, 3: 2}, files=feedback.RELEASE_FILES)
    return_graded(root, "bo", {1: "solved.", 2: "solved.", 3: "solved."}, {1: 1, 2: 2, 3: 2})  # returned with --from: no such files
    page = feedback.write_feedback(root, "ada", TINY_CHAPTER)
    assert page == root / "feedback" / "ada" / TINY_CHAPTER / f"{TINY_CHAPTER}.html"
    assert sorted(path.name for path in page.parent.iterdir()) == sorted([page.name, *feedback.RELEASE_FILES])
    assert (page.parent / "timestamp.txt").read_text(encoding="utf-8") == "timestamp.txt of ada"
    assert page.read_text(encoding="utf-8") == feedback.feedback_page(feedback.read_results(root, "ada", TINY_CHAPTER))
    assert [path.name for path in feedback.write_feedback(root, "bo", TINY_CHAPTER).parent.iterdir()] == [page.name]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("No such file or directory: '/sandbox/work/data.csv'", "No such file or directory: 'data.csv'"),
        ('File "/usr/lib/python3/site.py", line 3', 'File "site.py", line 3'),
        ("see https://www.tensorflow.org/api_docs/python/tf", "see https://www.tensorflow.org/api_docs/python/tf"),
        ("the loss /2 and a/b are not paths", "the loss /2 and a/b are not paths"),
    ],
)
def test_a_path_in_a_reason_is_cut_to_its_file_name_and_nothing_else_is(text: str, shown: str) -> None:
    assert feedback.without_paths(text) == shown


def test_points_are_named_in_the_singular_for_one() -> None:
    assert [feedback.points_text(value) for value in (0, 1, 1.5, 2)] == ["0 points", "1 point", "1.5 points", "2 points"]


def _exchange(root: Path, tmp_path: Path, step: str, *, student: str | None = None) -> None:
    """One step of nbgrader's exchange run in this process by nbgrader's own class for it (what its command runs after reading
    its options): ``release_assignment``, ``collect``, and as ``student``, ``fetch_assignment`` and ``submit``."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import default
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.update(root=str(root), course_id=course.COURSE_ID, assignment_id=TINY_CHAPTER, student_id=student or "*")
    config.Exchange.update(root=str(root / "exchange"), cache=str(tmp_path / "cache"), assignment_dir=str(tmp_path / (student or "teacher")))
    steps = {"release_assignment": default.ExchangeReleaseAssignment, "collect": default.ExchangeCollect}
    steps |= {"fetch_assignment": default.ExchangeFetchAssignment, "submit": default.ExchangeSubmit}
    steps[step](coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config).start()


@pytest.mark.process
def test_nbgraders_release_feedback_and_fetch_feedback_deliver_the_page_to_the_student(tmp_path: Path) -> None:
    """nbgrader's route: the chapter released, fetched and submitted by the student ada, collected (nbgrader's exchange classes, in this
    process); graded (its autograded notebook written as nbgrader leaves it, beside the files collect brought); the page written; then
    nbgrader's own commands ``release_feedback`` and, as ada, ``fetch_feedback``: ada gets this page, byte for byte."""
    root = build_course(tmp_path / "course")
    (root / "nbgrader_config.py").write_text(course.config_text(root), encoding="utf-8")  # the course's exchange, as make course writes it
    shutil.copytree(feedback.notebook_path(root, "source", TINY_CHAPTER).parent, root / "release" / TINY_CHAPTER)
    for step, student in (("release_assignment", None), ("fetch_assignment", "ada"), ("submit", "ada"), ("collect", None)):
        _exchange(root, tmp_path, step, student=student)
    submitted = feedback.notebook_path(root, "submitted", TINY_CHAPTER, "ada").parent
    assert sorted(path.name for path in submitted.iterdir() if path.suffix == ".txt") == sorted(feedback.RELEASE_FILES)
    graded = feedback.notebook_path(root, "autograded", TINY_CHAPTER, "ada")
    shutil.copytree(submitted, graded.parent)  # autograde copies the returned folder, then executes the notebook in it
    nbformat.write(graded_notebook(root, {1: "not yet. too small", 2: f"not solved yet. Hint: {HINT}", 3: "solved."}), graded)
    with feedback.open_gradebook(root) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        gradebook.update_or_create_student("ada")  # nbgrader's collect command adds the student, its exchange class does not
        gradebook.add_submission(TINY_CHAPTER, "ada")
        gradebook.find_grade("exercise-3-check", TINY_CHAPTER, TINY_CHAPTER, "ada").auto_score = 2
        gradebook.db.commit()
    page = feedback.write_feedback(root, "ada", TINY_CHAPTER)
    as_ada = ["--student=ada", f"--Exchange.assignment_dir={tmp_path / 'ada'}", f"--Exchange.cache={tmp_path / 'cache'}"]
    course.run_nbgrader(root, "release_feedback", TINY_CHAPTER, timeout=120)
    course.run_nbgrader(root, "fetch_feedback", TINY_CHAPTER, *as_ada, timeout=120)
    [delivered] = (tmp_path / "ada" / TINY_CHAPTER / "feedback").glob(f"*/{TINY_CHAPTER}.html")
    assert delivered.read_bytes() == page.read_bytes() and "you won 2 of 5 points" in page.read_text(encoding="utf-8")
