"""The workbook's command line: run, refresh, build the book, open JupyterLab.

    python -m helpers.workbook list
    python -m helpers.workbook run [--only 01 03] [--fast] [-p SEED 7] [--output-dir DIR]
    python -m helpers.workbook refresh [01 ...]
    python -m helpers.workbook book
    python -m helpers.workbook lab [--port 8888]
    python -m helpers.workbook course [01 ...]
    python -m helpers.workbook grade [--from FOLDER] [--timeout SECONDS]

``run``, ``book`` and ``list``: :mod:`helpers.workbook.runner`; ``refresh``:
:mod:`helpers.workbook.refresh`; ``lab``: :mod:`helpers.workbook.lab`; ``course`` and ``grade``:
:mod:`helpers.workbook.course`.

Exit statuses: 0 done; 1 a notebook failed (``run``, ``refresh``); 2 a bad option, a notebook parameter
(``-p``) of a value the chapters refuse (:mod:`helpers.parameters`), a notebook selector that matches nothing,
or a port ``lab`` cannot listen on; 3 the book could not be built (the previous book is
kept); 4 an nbgrader command failed while the course was built or graded (its last lines are printed).
:data:`FAILURES` maps each error to its status and one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from helpers.workbook import course, lab, refresh, runner
from helpers.workbook.book import BookError

#: Exit status for a bad option, a selector that matches nothing, or a port that is taken (argparse's own status).
USAGE_EXIT_CODE = 2
#: Exit status when the book could not be built; the previous book is left as it was.
BOOK_EXIT_CODE = 3
#: Exit status when an nbgrader command failed while the course was built or graded.
COURSE_EXIT_CODE = 4
#: Each error the command turns into one line on stderr, with its exit status; first match wins.
FAILURES: tuple[tuple[type[Exception], int, str], ...] = (
    (BookError, BOOK_EXIT_CODE, "the book could not be built, the previous one is kept: {error}"),
    (course.CourseError, COURSE_EXIT_CODE, "{error}"),
    (lab.PortTaken, USAGE_EXIT_CODE, "{error}"),
    (ValueError, USAGE_EXIT_CODE, "{error}"),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.workbook", description="Execute or refresh the workbook's notebooks.")
    sub = parser.add_subparsers(dest="command", required=True)

    run_parser = sub.add_parser("run", help="execute notebooks in order into the build area and print a report")
    run_parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="run only these (number prefix or name)")
    run_parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="papermill parameter, e.g. -p SEED 7")
    run_parser.add_argument("--fast", action="store_true", help="pass FAST=True: fewer steps, same checks")
    run_parser.add_argument("--output-dir", help="where executed copies go (default build/executed)")
    run_parser.add_argument("--no-progress", action="store_true", help="no per-cell progress bar")
    run_parser.set_defaults(handler=runner.run_command)

    refresh_parser = sub.add_parser("refresh", help="re-execute notebooks and store their clean outputs in place")
    refresh_parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: all)")
    refresh_parser.add_argument("--no-progress", action="store_true")
    refresh_parser.set_defaults(handler=refresh.refresh_command)

    book_parser = sub.add_parser("book", help="build the HTML book in build/book from the stored outputs (make run builds it from its own run)")
    book_parser.set_defaults(handler=runner.book_command)

    lab_parser = sub.add_parser("lab", help="open the workbook in JupyterLab on 127.0.0.1 (token in the printed URL)")
    lab_parser.add_argument("--port", type=lab.port_number, default=8888, help="port on 127.0.0.1 (default: 8888)")
    lab_parser.add_argument("--course", action="store_true", help="serve the course folder (make course) with nbgrader's formgrader")
    lab_parser.add_argument(
        "--lang", choices=sorted(lab.LAB_LOCALES), default="en", help="en (the notebooks) or zh_CN (translated copies, JupyterLab in Chinese)"
    )
    lab_parser.set_defaults(handler=lab.lab_command)

    course_parser = sub.add_parser("course", help="build the nbgrader course in build/course: the teacher's version and the students' release")
    course_parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: every chapter)")
    course_parser.set_defaults(handler=course_command)

    grade_parser = sub.add_parser("grade", help="autograde the returned notebooks in build/course/submitted; feedback and grades.csv")
    grade_parser.add_argument("--from", dest="source", type=Path, help="copy returned notebooks (<student>/<chapter>/<chapter>.ipynb) from here first")
    grade_parser.add_argument("--timeout", type=int, default=course.CELL_TIMEOUT_SECONDS, help="seconds a cell may run (default: %(default)s)")
    grade_parser.set_defaults(handler=grade_command)

    list_parser = sub.add_parser("list", help="list the notebooks in order")
    list_parser.set_defaults(handler=runner.list_command)

    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except tuple(kind for kind, _, _ in FAILURES) as error:
        return _failed(parser, error)


def course_command(args: argparse.Namespace) -> int:
    """Build the course from the chosen chapters and say where its two versions are."""
    root = course.build(runner.select(runner.notebooks(), args.notebooks))
    print(f"course: {root} (teacher's version in source/, students' in release/); grade with: make grade")
    return 0


def grade_command(args: argparse.Namespace) -> int:
    """Grade what students returned and print the summary; 0 even when a notebook could not be graded (its row says why)."""
    root = course.course_root()
    if not (root / "source").is_dir():
        raise ValueError(f"no course in {root}: build it first with make course")
    if args.source is not None:
        course.collect(root, args.source)
    if not course.submissions(root):
        raise ValueError(f"nothing to grade: no returned notebook in {root / 'submitted'} (<student>/<chapter>/<chapter>.ipynb)")
    print(course.summary(course.grade(root, timeout=args.timeout)))
    print(f"\nfeedback in {root / 'feedback'} (one HTML page per student and chapter), gradebook in {root / 'grades.csv'}")
    return 0


def _failed(parser: argparse.ArgumentParser, error: Exception) -> int:
    """Print ``error``'s line from :data:`FAILURES` as ``prog: error: ...`` on stderr; return its status."""
    status, line = next((status, line) for kind, status, line in FAILURES if isinstance(error, kind))
    print(f"{parser.prog}: error: {line.format(error=error)}", file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
