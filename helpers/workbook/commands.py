"""The workbook's command line, every command of ``python -m helpers.workbook`` (what the Makefile's targets run).

    python -m helpers.workbook list
    python -m helpers.workbook run [--only 01 03] [--fast] [-p SEED 7] [--output-dir DIR]
    python -m helpers.workbook refresh [01 ...]
    python -m helpers.workbook book
    python -m helpers.workbook lab [--port 8888] [--lang zh_CN] [--course]
    python -m helpers.workbook course [01 ...] [--due "2026-12-10 23:59"|none] [--late-penalty PERCENT] [--book-url URL|none]
    python -m helpers.workbook grade [--from FOLDER [--times FILE]] [--zip FILE --chapter 03 [--name-pattern REGEX]]
                                     [--roster CSV] [--jobs N] [--student ID] [--chapter 03] [--all] [--timeout SECONDS] [--unsafe-no-sandbox]
    python -m helpers.workbook translations update|check [FILE.po ...]
    python -m helpers.workbook drift [--nightly] [--only 01 ...]
    python -m helpers.workbook configs [onednn-off|onednn-on ...] [--only 01 ...]
    python -m helpers.workbook screenshots [06 | VIEW ...]

Each command is a small function here that calls the module doing the work: :mod:`~helpers.workbook.executor`
(running notebooks), :mod:`~helpers.workbook.refresh`, :mod:`~helpers.workbook.book`, :mod:`~helpers.workbook.lab`,
:mod:`~helpers.workbook.course`, :mod:`~helpers.workbook.catalogs` and :mod:`~helpers.workbook.translations`, :mod:`~helpers.workbook.drift`,
:mod:`~helpers.workbook.configurations`, :mod:`~helpers.workbook.screenshots`. They import those modules only when they run, so ``list``, ``lab``
and ``grade`` load no Sphinx. An expected failure is a :class:`helpers.failures.CommandError`: one line on
stderr and the exit status its class carries (:data:`ERRORS`, listed by ``--help``); anything else is a bug
and ends with its traceback.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from helpers.failures import CommandError, UsageError, report, status_table, status_text
from helpers.parameters import PARAMETERS, ParameterError, check_parameters
from helpers.paths import build_root, display_path
from helpers.workbook import cache, executor
from helpers.workbook.book import BookError
from helpers.workbook.course import CELL_TIMEOUT_SECONDS, CourseError
from helpers.workbook.editions import EDITIONS_LINE, LANGUAGES
from helpers.workbook.lab import LabError, PortTaken, port_number
from helpers.workbook.sandbox import SandboxUnavailable
from helpers.workbook.screenshots import VIEWS, ScreenshotsFailed


class NotebooksFailed(CommandError):
    """A notebook failed (``run``, ``refresh``, ``configs``); each one is named with its cell above this line."""

    meaning = "a notebook failed (run, refresh, configs)"


class TranslationsNeeded(CommandError):
    """A message of the ``.po`` files needs a translator (``translations``); each one is listed above this line."""

    meaning = "a message needs a translator (translations)"


class Drifted(CommandError):
    """The workbook drifted under the newest TensorFlow (``drift``): ``build/drift/report.md`` says where."""

    meaning = "the workbook drifted (drift)"


class EnvironmentFailed(CommandError):
    """A command drift or configs needed (a virtual environment's install, a run in it) failed; the line names it."""

    exit_status = 2
    meaning = "the drift environment could not be built or run (drift, configs)"


#: Every error the commands turn into one line and an exit status; ``--help`` lists the statuses from them.
ERRORS: tuple[type[CommandError], ...] = (
    NotebooksFailed, TranslationsNeeded, Drifted, LabError, UsageError, ParameterError, PortTaken, EnvironmentFailed, BookError, CourseError,
    SandboxUnavailable, ScreenshotsFailed,
)  # fmt: skip
#: The exit statuses, derived from :data:`ERRORS` (``python -m helpers.workbook --help`` shows them).
EXIT_STATUSES = status_table(ERRORS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a :class:`~helpers.failures.CommandError` becomes ``prog: error: <line>`` on stderr and its status."""
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CommandError as error:
        return report(error, f"{parser.prog}: error")


def make_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per command, each with its handler (``args.handler``)."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.workbook", description="Run, check, render and serve the workbook.", epilog=status_text(EXIT_STATUSES)
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _run_parsers(sub)
    _serving_parsers(sub)
    _maintenance_parsers(sub)
    return parser


def positive_int(text: str) -> int:
    """An argument that is a whole number of at least 1 (argparse's ``type``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def _run_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="execute notebooks in order into the build area, print a report, build the book of the run")
    run.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="run only these (number prefix or name)")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="papermill parameter, e.g. -p SEED 7")
    run.add_argument("--fast", action="store_true", help="pass FAST=True: fewer steps, same checks")
    run.add_argument("--output-dir", help="where executed copies go (default build/executed)")
    run.add_argument("--no-progress", action="store_true", help="no per-cell progress bar")
    run.add_argument(
        "--cached", action="store_true", help="reuse a chapter's executed copy from build/cache when its content key is unchanged (helpers.workbook.cache)"
    )
    run.set_defaults(handler=run_command)
    refresh = sub.add_parser("refresh", help="re-execute notebooks and store their clean outputs in place")
    refresh.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: all)")
    refresh.add_argument("--no-progress", action="store_true")
    refresh.set_defaults(handler=refresh_command)
    sub.add_parser("list", help="list the notebooks in order").set_defaults(handler=list_command)


def _serving_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    book = sub.add_parser("book", help="build the HTML book in build/book from the stored outputs (make run builds it from its own run)")
    book.set_defaults(handler=book_command)
    lab = sub.add_parser("lab", help="open the workbook in JupyterLab on 127.0.0.1 (token in the printed URL)")
    lab.add_argument("--port", type=port_number, default=8888, help="port on 127.0.0.1 (default: 8888)")
    lab.add_argument("--course", action="store_true", help="serve the course folder (make course) with nbgrader's formgrader")
    languages = [language for language, _, _ in LANGUAGES]
    lab.add_argument("--lang", choices=languages, default=languages[0], help="en (the notebooks) or zh_CN (translated copies, JupyterLab in Chinese)")
    lab.set_defaults(handler=lab_command)
    course = sub.add_parser("course", help="build the nbgrader course in build/course: the teacher's version and the students' release")
    course.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: every chapter)")
    course.add_argument(
        "--due", metavar="WHEN",
        help='due date of these chapters, "YYYY-MM-DD HH:MM" in this machine\'s time zone (TZ) unless followed by an offset '
        '("2026-12-10 23:59+08:00"); none clears it (default: keep the one set before)',
    )  # fmt: skip
    course.add_argument(
        "--late-penalty", metavar="PERCENT",
        help="share of a late notebook's score lost per started day late, 0 to 100: 0 marks late work and keeps its points, "
        "100 gives it none (default: keep the one set before, else 0)",
    )  # fmt: skip
    course.add_argument(
        "--book-url", metavar="URL",
        help="where the book's English edition is served (the folder of build/book/en): links to other chapters point there, "
        "URL/<chapter>.html#<heading>; without one they become text naming the chapter; none clears it (default: keep the one set before)",
    )  # fmt: skip
    course.set_defaults(handler=course_command)
    grade = sub.add_parser("grade", help="autograde the returned notebooks in build/course/submitted; feedback and grades.csv")
    grade.add_argument(
        "--from", dest="source", type=Path,
        help="copy returned notebooks (<student>/<chapter>/<chapter>.ipynb) from here first (with --student, --chapter: only theirs)",
    )  # fmt: skip
    grade.add_argument(
        "--zip", dest="archives", action="append", type=Path, metavar="FILE",
        help="collect returned notebooks from a learning platform's download (a zip) first, with nbgrader's zip_collect; "
        "needs one --chapter, the download's (then only new and changed notebooks are graded)",
    )  # fmt: skip
    grade.add_argument(
        "--name-pattern", default=None, metavar="REGEX",
        help="with --zip: how a returned file's name says whose it is, a regular expression with the groups student_id, file_id "
        "and, if the name holds it, timestamp (default: helpers.workbook.lms.NAME_PATTERN)",
    )  # fmt: skip
    grade.add_argument(
        "--times", type=Path,
        help="with --from: a CSV file (student,chapter,submitted) of submission times, for folders without a timestamp.txt "
        "(default: the time their newest file last changed)",
    )  # fmt: skip
    grade.add_argument(
        "--roster", type=Path, metavar="CSV",
        help="load the class list first: a CSV with an id column and, if you have them, first_name, last_name, email "
        "(the names go in grades.csv and canvas_grades.csv)",
    )  # fmt: skip
    grade.add_argument("--timeout", type=int, default=CELL_TIMEOUT_SECONDS, help="seconds a cell may run (default: %(default)s)")
    grade.add_argument(
        "--jobs", type=positive_int,
        help="notebooks graded at once, each in its own sandbox (default: one per core, as many as the memory limit allows)",
    )  # fmt: skip
    grade.add_argument("--student", action="append", metavar="ID", help="grade this student's notebooks again, changed or not (repeatable)")
    grade.add_argument("--chapter", action="append", metavar="CHAPTER", help="grade this chapter's notebooks again, changed or not: 03 or its name (repeat it)")
    grade.add_argument("--all", dest="again", action="store_true", help="grade every returned notebook again (default: only the new and changed ones)")
    grade.add_argument(
        "--unsafe-no-sandbox", dest="sandboxed", action="store_false",
        help="run the returned notebooks with your own rights, where the sandbox cannot be set up (they can then read the solutions, "
        "change the gradebook and anything else you can)",
    )  # fmt: skip
    grade.set_defaults(handler=grade_command)


def _maintenance_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    translations = sub.add_parser("translations", help="the Chinese edition's .po files: update them from the English, or check them")
    action = translations.add_subparsers(dest="action", required=True)
    action.add_parser("update", help="merge new and changed English messages into the .po files, then check them")
    check = action.add_parser("check", help="list untranslated, fuzzy and inconsistent messages")
    check.add_argument("files", nargs="*", type=Path, help=".po files (default: all)")
    check.add_argument("--no-terms", action="store_true", help="skip the glossary-term check")
    translations.set_defaults(handler=translations_command)
    drift = sub.add_parser("drift", help="run the workbook against the newest TensorFlow in its own venv; report in build/drift/report.md")
    drift.add_argument("--nightly", action="store_true", help="tf-nightly, keras-nightly and tb-nightly instead of the latest releases")
    drift.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks (number prefix or name)")
    drift.add_argument("--reuse", action="store_true", help="reuse the drift environment (build/drift/venv-latest or venv-nightly) as it is: no install")
    drift.add_argument("--compare-only", action="store_true", help="compare the last run's notebooks again and rewrite the report (no install, no run)")
    drift.set_defaults(handler=drift_command)
    configs = sub.add_parser("configs", help="run the workbook with oneDNN's CPU kernels off and on; report in build/configurations/report.md")
    configs.add_argument("names", nargs="*", metavar="CONFIGURATION", help="which ones (default: all): onednn-off, onednn-on")
    configs.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks (number prefix or name)")
    configs.set_defaults(handler=configs_command)
    screenshots = sub.add_parser(
        "screenshots", help="photograph the TensorBoard dashboard from a chapter's last run (headless Chromium) into notebooks/images",
        description="Each view: a TensorBoard server on the logs a chapter's run left in build/, one dashboard page in headless Chromium, "
        "a cropped PNG in notebooks/images. Run the chapter first (python -m helpers.workbook run --only 06).",
    )  # fmt: skip
    views = ", ".join(view.name for view in VIEWS)
    screenshots.add_argument("views", nargs="*", metavar="VIEW", help=f"a view's name or its chapter's number (default: all): {views}")
    screenshots.set_defaults(handler=screenshots_command)


def parse_value(text: str) -> object:
    """A parameter value as papermill's CLI would infer it: Python literal if it is one, else str."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def report_table(results: Sequence[executor.Result]) -> str:
    """A Markdown table of notebook, status and wall time, with a total line."""
    lines = ["| notebook | status | wall time |", "|---|---|---:|"]
    for result in results:
        status = f"ok (cached: key {result.cached}, the time of its run)" if result.cached else "ok" if result.ok else f"FAILED: {result.failure}"
        lines.append(f"| {result.name} | {status} | {result.seconds:.1f} s |")
    failed = sum(not result.ok for result in results)
    total = sum(result.seconds for result in results)
    lines.append(f"| **{len(results)} notebooks** | {'ok' if not failed else f'{failed} failed'} | {total:.1f} s |")
    return "\n".join(lines)


def run_command(args: argparse.Namespace) -> int:
    """``make run``: execute the chosen notebooks, print and write the report, build the book of the run."""
    paths = executor.select(executor.notebooks(), args.only)
    parameters: dict[str, object] = {name: parse_value(value) for name, value in args.parameter}
    if args.fast:
        parameters["FAST"] = True
    # a value a chapter would refuse in its first code cell is refused here, before any kernel starts (exit 2)
    check_parameters(**{name: value for name, value in parameters.items() if name in PARAMETERS})
    output_dir = Path(args.output_dir) if args.output_dir else build_root() / "executed"
    results: list[executor.Result] = []
    for number, path in enumerate(paths, start=1):
        print(f"[{number}/{len(paths)}] {path.stem}", flush=True)
        key = cache.run_key(path, parameters)
        hit = cache.executed(key) if args.cached else None
        if hit is not None and key is not None:
            output_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(hit[0], output_dir / path.name)
            result = executor.Result(path.stem, True, hit[1], output_dir / path.name, cached=cache.short(key))
            print(f"    cached: key {cache.short(key)} (ran in {hit[1]:.1f} s)", flush=True)
        else:
            result = executor.execute(path, output_dir / path.name, parameters, progress=not args.no_progress)
            print(f"    {'ok' if result.ok else 'FAILED'} in {result.seconds:.1f} s" + (f": {result.failure}" if not result.ok else ""), flush=True)
            if result.ok and key is not None:
                cache.store_executed(key, result.output, result.seconds)
        results.append(result)
    table = report_table(results)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "report.md").write_text(table + "\n", encoding="utf-8")
    print(f"\n{table}\n\nexecuted copies and report.md in {display_path(output_dir)}")
    failures = [result for result in results if not result.ok]
    try:
        _book_of_run(results)
    finally:  # a book that fails (BookError) still lists the notebooks that failed first
        for result in failures:
            print(f"FAILED {result.name}: {result.failure} (see {display_path(result.output)})", file=sys.stderr)
    if failures:
        raise NotebooksFailed(f"{len(failures)} of {len(results)} notebook(s) failed: {', '.join(result.name for result in failures)}")
    return 0


def _book_of_run(results: Sequence[executor.Result]) -> None:
    """The book of a run: the chapters it executed with their outputs, the others (``--only``) with their stored ones."""
    from helpers.workbook import book

    ran = {result.name: book.Chapter(result.output, result.ok, result.seconds) for result in results if result.output.is_file()}
    chapters = [ran.get(path.stem, book.Chapter(path)) for path in executor.notebooks()]
    started = time.perf_counter()
    index = book.build_book(chapters, build_root() / "book", notebooks_dir=executor.NOTEBOOKS_DIR)
    print(f"book: {display_path(index)} ({time.perf_counter() - started:.1f} s; {EDITIONS_LINE}; open it in a browser, it works offline)")


def refresh_command(args: argparse.Namespace) -> int:
    """``make refresh``: store clean outputs of the chosen notebooks; a failing one is kept as it was."""
    from helpers.workbook.refresh import refresh

    failed = refresh(executor.select(executor.notebooks(), args.notebooks), progress=not args.no_progress)
    if failed:
        raise NotebooksFailed(f"{len(failed)} notebook(s) failed and were left unchanged: {', '.join(failed)}")
    return 0


def list_command(_: argparse.Namespace) -> int:
    """The notebooks in order, one name a line."""
    for path in executor.notebooks():
        print(path.stem)
    return 0


def book_command(_: argparse.Namespace) -> int:
    """Build the book without executing anything (:class:`BookError` keeps the previous book).

    Each chapter comes from the copy a default ``make run`` executed, while its content key is unchanged
    (:func:`helpers.workbook.cache.executed`), with that run's status; otherwise from its stored outputs.
    """
    from helpers.workbook import book

    chapters = []
    for path in executor.notebooks():
        hit = cache.executed(cache.run_key(path, {}))
        chapters.append(book.Chapter(hit[0], True, hit[1]) if hit is not None else book.Chapter(path))
    index = book.build_book(chapters, build_root() / "book", notebooks_dir=executor.NOTEBOOKS_DIR)
    reused = sum(chapter.ok is not None for chapter in chapters)
    print(f"book: {display_path(index)} ({EDITIONS_LINE}; {reused} of {len(chapters)} chapters from make run's executed copies, the rest as stored)")
    return 0


def lab_command(args: argparse.Namespace) -> int:
    """``make lab``: JupyterLab on 127.0.0.1 (:func:`helpers.workbook.lab.serve`); its exit status."""
    from helpers.workbook import lab

    return lab.serve(args.port, language=args.lang, course=args.course)


def course_command(args: argparse.Namespace) -> int:
    """Build the course from the chosen chapters, say where its two versions are and what their headers state."""
    from helpers.workbook import course, deadlines, release

    chapters = executor.select(executor.notebooks(), args.notebooks)
    due = release.KEEP if args.due is None else deadlines.parse_due(args.due)  # every option refused before anything is built
    late_penalty = release.KEEP if args.late_penalty is None else deadlines.parse_late_penalty(args.late_penalty)
    book_url = release.KEEP if args.book_url is None else release.parse_book_url(args.book_url)
    root = course.build_course(chapters, due=due, late_penalty=late_penalty, book_url=book_url)
    print(f"course: {root} (teacher's version in source/, students' in release/); grade with: make grade")
    print(course.release_summary(root))
    return 0


def grade_command(args: argparse.Namespace) -> int:
    """Grade what students returned and print the summary; 0 even when a notebook could not be graded (its row says why)."""
    from helpers.workbook import course

    root = course.course_root()
    if not (root / "source").is_dir():
        raise UsageError(f"no course in {root}: build it first with make course")
    if args.times is not None and args.source is None:
        raise UsageError("--times goes with --from: it gives the submission times of the folders copied from there")
    if args.name_pattern is not None and not args.archives:
        raise UsageError("--name-pattern goes with --zip: it reads the names of the files in the download")
    if args.roster is not None:
        from helpers.workbook import class_report

        print(f"roster: {len(class_report.import_roster(root, args.roster))} students from {args.roster}")
    if args.source is not None:
        times = course.read_times(args.times) if args.times is not None else None
        course.collect(root, args.source, times, students=args.student, chapters=args.chapter)
    if args.archives:
        from helpers.workbook import lms

        if len(args.chapter or []) != 1:
            raise UsageError("--zip needs one --chapter: a download holds one chapter's returned notebooks")
        [chapter] = course.select([("", folder.name) for folder in (root / "source").iterdir()], None, args.chapter)
        lms.zip_collect(root, chapter[1], args.archives, args.name_pattern or lms.NAME_PATTERN)
    if not course.submissions(root):
        raise UsageError(f"nothing to grade: no returned notebook in {root / 'submitted'} (<student>/<chapter>/<chapter>.ipynb)")
    chosen = {"students": args.student, "chapters": None if args.archives else args.chapter, "again": args.again}
    grades = course.grade(root, timeout=args.timeout, sandboxed=args.sandboxed, jobs=args.jobs, progress=True, **chosen)
    print(course.summary(grades))
    print(f"\nfeedback in {root / 'feedback'} (one HTML page per student and chapter), gradebook in {root / 'grades.csv'}")
    print(f"class report in {root / 'class_report.md'} (and .csv), for Canvas's gradebook {root / 'canvas_grades.csv'}")
    return 0


def translations_command(args: argparse.Namespace) -> int:
    """``make translations``: update the ``.po`` files (``update``) or only check them (``check``); list every problem."""
    from helpers.workbook import catalogs, translations

    if args.action == "update":
        catalogs.update()
        files, terms = None, True
    else:
        files, terms = [path.resolve() for path in args.files] or None, not args.no_terms
    found = translations.problems(files, check_terms=terms)
    for problem in found:
        print(problem)
    count = len(catalogs.catalogs()) if files is None else len(files)
    print(f"{len(found)} problem(s) in {count} catalog(s)" + ("" if found else ": every message is translated and consistent"))
    if found:
        raise TranslationsNeeded(f"{len(found)} message(s) need a translator")
    return 0


def drift_command(args: argparse.Namespace) -> int:
    """``make drift``: the workbook against the newest TensorFlow (:mod:`helpers.workbook.drift`); :class:`Drifted` when something did."""
    import json
    import subprocess

    from helpers.workbook.drift.run import drift

    executor.select(executor.notebooks(), args.only)  # a bad --only fails here, before anything is installed
    try:
        report_file = drift(nightly=args.nightly, only=args.only, reuse=args.reuse, compare_only=args.compare_only)
    except subprocess.CalledProcessError as error:
        raise EnvironmentFailed(f"`{' '.join(map(str, error.cmd))}` failed with exit status {error.returncode}") from None
    print(report_file.read_text(encoding="utf-8"))
    print(f"report: {display_path(report_file)} and report.json beside it")
    document = json.loads(report_file.with_suffix(".json").read_text(encoding="utf-8"))
    drifted = [entry["name"] for entry in document["notebooks"] if entry["verdict"] != "unchanged" or entry["new_warnings"]]
    failing_checks = [test for test, line in document["checks"].items() if "failed" in line or "error" in line]
    if drifted or failing_checks or document["api_changes"]:
        raise Drifted(f"drifted: {', '.join([*drifted, *failing_checks, *document['api_changes']])}")
    return 0


def configs_command(args: argparse.Namespace) -> int:
    """``make configs``: every notebook in each kernel configuration (:mod:`helpers.workbook.configurations`); :class:`NotebooksFailed` when one failed."""
    import subprocess

    from helpers.workbook import configurations

    chosen = [configurations.configuration(name) for name in args.names] or list(configurations.CONFIGURATIONS)
    executor.select(executor.notebooks(), args.only)  # a bad --only fails here, before anything runs
    try:
        report_file, failed = configurations.run_all(chosen, args.only, args.names)
    except subprocess.CalledProcessError as error:
        raise EnvironmentFailed(f"`{' '.join(map(str, error.cmd))}` failed with exit status {error.returncode}") from None
    print(report_file.read_text(encoding="utf-8"))
    print(f"report: {display_path(report_file)} and report.json beside it")
    if failed:
        raise NotebooksFailed(f"failed in a configuration: {', '.join(failed)}")
    return 0


def screenshots_command(args: argparse.Namespace) -> int:
    """``make screenshots``: the dashboard's images (:mod:`helpers.workbook.screenshots`); :class:`ScreenshotsFailed` when one could not be taken."""
    from helpers.workbook import screenshots

    written = screenshots.take(screenshots.select(args.views))
    print(f"{len(written)} screenshot(s) in {display_path(screenshots.IMAGES_DIR)}")
    return 0
