"""Grading in the sandbox (issue 32): the tiny chapter of ``tests/test_workbook_course.py`` returned by students who attack
the grader, each beside an honest one, graded by ``course.grade`` with low limits.

Each attack would win its exercise's points if it worked; the fork bomb and the memory hog run only where ``/sandbox/work``
exists, so were the sandbox ever missing they would do nothing (and the test would fail, not the machine).
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.paths import repo_root
from helpers.workbook import course, sandbox
from helpers.workbook.exercise_layout import find
from tests.test_workbook_course import GRADING_INPUTS, TINY_CHAPTER, TINY_TIMEOUT, _answered, _kept_grades, _returned, tiny_chapter

#: What the hostile course is made of: a change to one of these grades it again.
HOSTILE_INPUTS = (*GRADING_INPUTS, "tests/test_grading_sandbox.py")


#: The limits of the hostile course: low, so the fork bomb and the memory hog are stopped soon.
HOSTILE_LIMITS = sandbox.Limits(memory_bytes=3 * 2**30, tasks=256, wall_seconds=40, output_bytes=2 * 2**20)


def _attempt(attacks: dict[int, str], solutions: dict[int, str]) -> Callable[[Any], Any]:
    """Exercise 1 answered with its solution; exercises 2 and 3 (2 points each) won only if their ``attacks`` (Python code) succeed."""

    def answer(number: int) -> str:
        lines = ["try:", textwrap.indent(attacks[number], "    "), "    broke_out = True", "except Exception as error:"]
        lines += ["    print('refused:', type(error).__name__)", "    broke_out = False", "if broke_out:", textwrap.indent(solutions[number], "    ")]
        return "\n".join(lines)

    return lambda notebook: _answered(notebook, {**solutions, **{number: answer(number) for number in attacks}})


@pytest.fixture(scope="module")
def graded_hostile() -> dict[str, course.Grade]:
    """The tiny chapter returned by students who attack the grader, each beside an honest one (ok), graded in the sandbox."""
    return _kept_grades("hostile", _grade_hostile, HOSTILE_INPUTS)


def _grade_hostile(root: Path) -> dict[str, course.Grade]:
    chapter = tiny_chapter(root / "chapters")
    solutions = {exercise.number: exercise.solution_code for exercise in find(nbformat.read(chapter, as_version=4))}
    course_folder = root / "course"
    teacher = course_folder / "source" / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb"
    with socket.create_server(("127.0.0.1", 0)) as listening:  # the teacher's JupyterLab, say
        port = listening.getsockname()[1]
        gradebook = course_folder / "gradebook.db"
        attacks = {  # two attacks a student, on exercises 2 and 3
            "reads": {2: f"assert 'BEGIN SOLUTION' in open({str(teacher)!r}).read()", 3: f"assert 'answer = 42' in open({str(chapter)!r}).read()"},
            "reads-more": {
                2: f"assert open({str(repo_root() / 'pyproject.toml')!r}).read()",
                3: f"import sqlite3\nassert sqlite3.connect('file:{gradebook}?mode=ro', uri=True).execute('select * from student').fetchall()",
            },
            "writes": {
                2: f"open({str(root / 'written.txt')!r}, 'w').write('here')",
                3: f"import sqlite3\nsqlite3.connect({str(gradebook)!r}).execute('create table hacked (x)')",
            },
            "deletes-and-calls": {
                2: f"import shutil\nshutil.rmtree({str(course_folder / 'submitted' / 'ok')!r})",
                3: f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).close()",
            },
        }
        returned: dict[str, Any] = {student: _attempt(attempts, solutions) for student, attempts in attacks.items()}
        returned["ok"] = lambda notebook: _answered(notebook, solutions)
        # Only inside the sandbox: were it ever run without one, these two would do nothing and lose their point.
        inside = "import os\nif os.path.isdir('/sandbox/work'):\n"
        bomb = inside + "    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n"
        hog = inside + "    hog = []\n    while True:\n        hog.append(b'x' * 10**8)\n"
        returned["forks-a-bomb"] = lambda notebook: _answered(notebook, {**solutions, 1: bomb})
        returned["hogs-memory"] = lambda notebook: _answered(notebook, {**solutions, 1: hog})
        # A gigabyte in messages of a megabyte (kept up to the limit), then one message of 64 MB (dropped by the client's socket).
        flood = "for _ in range(1024):\n    print('x' * 2**20)\nprint('y' * 2**26)\n"
        returned["prints-a-gigabyte"] = lambda notebook: _answered(notebook, {**solutions, 3: solutions[3] + flood})
        course.build_course([chapter], course_folder)
        for student, edit in returned.items():
            _returned(course_folder, TINY_CHAPTER, student, edit)
        course.collect(course_folder, course_folder / "returned")
        grades = {grade.student: grade for grade in course.grade(course_folder, timeout=TINY_TIMEOUT, limits=HOSTILE_LIMITS)}
        listening.settimeout(0)
        with contextlib.suppress(BlockingIOError):
            listening.accept()
            grades["deletes-and-calls"] = dataclasses.replace(grades["deletes-and-calls"], problem="connected")
    untouched = {
        "written.txt": not (root / "written.txt").exists(),
        "gradebook": "hacked" not in str(sqlite3.connect(gradebook).execute("select name from sqlite_master").fetchall()),
        "submission": (course_folder / "submitted" / "ok" / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb").is_file(),
    }
    grades["ok"] = dataclasses.replace(grades["ok"], problem="; ".join(name for name, kept_safe in untouched.items() if not kept_safe))
    return grades


def test_a_returned_notebook_cannot_read_write_or_call_outside_its_sandbox(graded_hostile: dict[str, course.Grade]) -> None:
    """Each attack would win its exercise's 2 points if it worked: refused, only exercise 1's point is left, and the honest
    student keeps 5 (its problem column would name what an attack changed: a file written, the gradebook, its submission)."""
    graded = graded_hostile
    assert (graded["ok"].score, graded["ok"].problem) == (5.0, ""), graded["ok"]
    for student in ("reads", "reads-more", "writes", "deletes-and-calls"):
        assert (graded[student].score, graded[student].problem) == (1.0, ""), graded[student]


def test_a_fork_bomb_a_memory_hog_and_a_gigabyte_of_output_are_stopped_with_one_line(graded_hostile: dict[str, course.Grade]) -> None:
    """Each is stopped at its limit, named in the problem column; the class is graded (the honest student keeps 5)."""
    graded = graded_hostile
    bomb, hog, printer = graded["forks-a-bomb"], graded["hogs-memory"], graded["prints-a-gigabyte"]
    assert bomb.score == 0.0 and bomb.problem.startswith("SandboxLimitError: "), bomb  # stopped after the cell that reached the limit
    assert f"reached its limit of {HOSTILE_LIMITS.tasks} processes and threads" in bomb.problem, bomb
    assert (hog.score, hog.problem) == (0.0, "SandboxLimitError: stopped at its memory limit (3 GiB)"), hog
    assert "printed more than 2 MB: the rest was cut" in printer.problem and printer.score in (3.0, 5.0), printer  # exercise 3's check cut or not
    assert graded["ok"].score == 5.0
