"""What teaching with the workbook costs: building the nbgrader course, and grading one student's full set of chapters.

    .venv/bin/python -m benchmarks.course                 # every chapter: about 10 minutes on 2 cores
    .venv/bin/python -m benchmarks.course --chapters 03   # one chapter
    .venv/bin/python -m benchmarks.course --chapters 03 --sandbox-cost   # its grading with and without the sandbox, side by side
    .venv/bin/python -m benchmarks.course --chapters 03 --class-size 30  # a class of 30 graded with --jobs 1 and --jobs 2, side by side

Builds the course (``make course``) in a temporary folder, returns every chapter answered with its
solutions as one student would, grades it (``make grade``'s two steps: nbgrader's autograde, in the sandbox,
and the feedback page, one chapter at a time) and prints each step's time and each chapter's grading time and points. Absolute times, on
this machine, that day: grading runs each chapter top to bottom, so it costs about what ``make run``
does, plus nbgrader's own start per chapter. ``tests/test_workbook_course.py`` proves the grades; this
only measures. With ``--sandbox-cost`` each chapter's autograding runs ``--rounds`` times in the sandbox and as
many times without it, alternating, and the ratio of the medians is printed. With ``--class-size N`` one chapter is returned
by N students (half answered with the solutions, half untouched) and graded as ``make grade`` does, in the sandbox,
with ``--jobs 1`` and then ``--jobs 2`` (``--all``: every notebook each time); the times and their ratio are printed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from benchmarks.measure import machine
from helpers.workbook import course, executor, feedback
from helpers.workbook.exercise_layout import find


def answered_with_solutions(root: Path, student: str, chapter: Path) -> None:
    """Put ``chapter``'s released notebook, each answer cell holding the solution, where a returned notebook goes."""
    released = nbformat.read(root / "release" / chapter.stem / chapter.name, as_version=4)
    solutions = {course.answer_id(exercise): exercise.solution_code for exercise in find(nbformat.read(chapter, as_version=4))}
    for cell in released.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in solutions:
            cell.source = solutions[grade_id]
    folder = root / "submitted" / student / chapter.stem
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(released, folder / chapter.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.course", description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: every chapter)")
    parser.add_argument("--sandbox-cost", action="store_true", help="time each chapter's autograding with and without the sandbox, side by side")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each side with --sandbox-cost (default: %(default)s)")
    parser.add_argument("--class-size", type=int, metavar="N", help="grade one chapter returned by N students with --jobs 1 and --jobs 2, side by side")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.class_size is not None:
        chapters = executor.select(executor.notebooks(), args.chapters)
        if args.class_size < 2 or len(chapters) != 1:
            parser.error("--class-size needs at least 2 students and one chapter (--chapters 03)")
        return class_cost(chapters[0], args.class_size)
    if args.sandbox_cost:
        return sandbox_cost(executor.select(executor.notebooks(), args.chapters), args.rounds)
    chapters = executor.select(executor.notebooks(), args.chapters)
    print(machine())
    with tempfile.TemporaryDirectory(prefix="workbook-course-") as folder:
        root = Path(folder) / "course"
        started = time.perf_counter()
        course.build_course(chapters, root)
        built = time.perf_counter() - started
        print(f"build the course ({len(chapters)} chapters): {built:.1f} s")
        rows = []
        for chapter in chapters:
            answered_with_solutions(root, "student", chapter)
            started = time.perf_counter()
            course.run_nbgrader(root, "autograde", chapter.stem, "--student", "student", "--force")  # in the sandbox, as the course configures it
            feedback.write_feedback(root, "student", chapter.stem)
            rows.append((chapter.stem, time.perf_counter() - started))
        grades = {grade.chapter: grade for grade in course.read_grades(root)}
    print("| chapter | grading (autograde in the sandbox + feedback page) | points |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} s | {grades[name].score:g} / {grades[name].max_score:g} |")
    print(f"| **all {len(rows)}** | **{sum(seconds for _, seconds in rows):.1f} s** | "
          f"**{sum(grade.score for grade in grades.values()):g} / {sum(grade.max_score for grade in grades.values()):g}** |")
    return 0


def sandbox_cost(chapters: list[Path], rounds: int) -> int:
    """Each chapter autograded ``rounds`` times in the sandbox and as many without, alternating; medians and their ratio."""
    print(machine())
    print("| chapter | in the sandbox | without | × without |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="workbook-course-") as folder:
        root = Path(folder) / "course"
        course.build_course(chapters, root)
        for chapter in chapters:
            answered_with_solutions(root, "student", chapter)
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(rounds):
                for sandboxed in (True, False):
                    started = time.perf_counter()
                    switch = [] if sandboxed else ["--SandboxedExecute.sandbox=False"]
                    course.run_nbgrader(root, "autograde", chapter.stem, "--student", "student", "--force", *switch)
                    times[sandboxed].append(time.perf_counter() - started)
            inside, outside = statistics.median(times[True]), statistics.median(times[False])
            spread = f"[{min(times[True]) / max(times[False]):.2f}–{max(times[True]) / min(times[False]):.2f}]"
            print(f"| {chapter.stem} | {inside:.1f} s | {outside:.1f} s | {inside / outside:.2f}× {spread} |")
    return 0


def class_cost(chapter: Path, size: int) -> int:
    """``chapter`` returned by ``size`` students, graded with ``--jobs 1`` and then ``--jobs 2``: each one's time and their ratio."""
    print(machine())
    with tempfile.TemporaryDirectory(prefix="workbook-course-") as temporary:
        root = Path(temporary) / "course"
        course.build_course([chapter], root)
        for number in range(size):
            student = f"student{number:03d}"
            if number % 2:
                answered_with_solutions(root, student, chapter)
            else:  # returned untouched
                folder = root / "submitted" / student / chapter.stem
                folder.mkdir(parents=True)
                shutil.copyfile(root / "release" / chapter.stem / chapter.name, folder / chapter.name)
        times = {}
        for jobs in (1, 2):
            started = time.perf_counter()
            grades = course.grade(root, jobs=jobs, again=True)
            times[jobs] = time.perf_counter() - started
            points = ", ".join(f"{score:g}" for score in sorted({grade.score for grade in grades}))
            print(f"--jobs {jobs}: {times[jobs]:.0f} s for {size} notebooks, {times[jobs] / size:.1f} s each (points: {points})")
    print(f"--jobs 2 takes {times[2] / times[1]:.2f}× the time of --jobs 1; at that rate 200 students take {times[2] / size * 200 / 60:.0f} min with --jobs 2")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
