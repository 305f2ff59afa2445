"""The workbook as an nbgrader course: ``make course`` builds it from the chapters, ``make grade`` grades what students return.

The course folder (``build/course/``) is nbgrader's own layout, so every nbgrader command and its
JupyterLab extensions (the formgrader, the assignment list) work in it::

    nbgrader_config.py                  written here (:func:`config_text`)
    gradebook.db                        nbgrader's database: assignments, students, scores
    source/<chapter>/<chapter>.ipynb    the teacher's version (:func:`course_notebook`), beside the files it links to
    release/<chapter>/<chapter>.ipynb   the students' version, made by ``nbgrader generate_assignment`` (the files too)
    submitted/<student>/<chapter>/<chapter>.ipynb        what students returned
    autograded/ grades.csv              ``nbgrader autograde``, ``export``
    feedback/<student>/<chapter>/<chapter>.html   the student's page (:mod:`helpers.workbook.feedback`)
    class_report.md .csv, canvas_grades.csv        after each grading (:mod:`helpers.workbook.class_report`)
    grading/<student>/<chapter>.json     what grading recorded: the notebook's key, what it noticed (:func:`grade`)
    sandbox/<student>/<chapter>.json     what the grading sandbox stopped (:mod:`helpers.workbook.sandbox`)
    exchange/                           nbgrader's exchange on this machine (``release_assignment``, the assignment list)

From a chapter to the teacher's version, per exercise (:mod:`helpers.workbook.exercise_layout` reads them):
the stub cell becomes nbgrader's answer cell, holding the stub and then the solution between
nbgrader's solution markers (``generate_assignment`` removes the solution and leaves the stub); the
check becomes a locked, autograded cell worth the exercise's points, with one line in nbgrader's
hidden tests that calls :func:`helpers.exercises.require_solved` (students do not see it, and in
their copy the check prints and goes on, as in the chapter; when graded, the hidden line is put back
and the check raises with its "not yet" reason); the solution cell, and the answers in its metadata,
are left out, and so is every cell tagged ``chapter-only`` (the sentences about the solutions). A locked
header comes first: the exercises and their points, the due date, the late policy and how to return the
notebook (:mod:`helpers.workbook.release`); the licences' cell comes last. Links to other chapters point at
the served book (``--book-url``) or become text naming the chapter, and the seed map and the glossary go
with each chapter (:func:`helpers.workbook.release.bundled_pages`). Everything else (prose, code, stored
outputs) is the chapter's own: the course is built from the chapters, never edited by hand.

The due dates live in the gradebook, one per chapter, where ``nbgrader autograde`` reads them; the late
policy and the book's URL in ``nbgrader_config.py`` (:mod:`helpers.workbook.deadlines`). A build that does not
set one keeps what the last build set, and writes every chapter's header again to say it.

Building again rewrites ``source/``, ``release/`` and the configuration; it never touches what
students returned, the grades, or the feedback.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helpers.failures import CommandError, UsageError
from helpers.paths import build_root
from helpers.workbook import deadlines, release, sandbox
from helpers.workbook.book import LICENSE_FILES
from helpers.workbook.exercise_layout import Exercise, chapter_only_cells, find
from helpers.workbook.release import KEEP, Keep, Settings

#: nbgrader's course id for the workbook.
COURSE_ID = "tf-training-workbook"
#: nbgrader's cell metadata schema this module writes (nbgrader 0.9).
SCHEMA_VERSION = 3
#: The longest a cell of a returned notebook may run when graded, in seconds: a chapter's cells take seconds each
#: (``python -m benchmarks.run --only notebooks`` prints each chapter's slowest cells; benchmarks/README.md has a run's),
#: so a cell that never ends is cut here.
CELL_TIMEOUT_SECONDS = 300
#: What replaces the solution in the students' copy: nothing, so the stub above it is what they see.
CODE_STUB = ""
#: nbgrader's markers (its defaults): the solution region of an answer cell, the hidden region of a check cell.
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN_TESTS, END_HIDDEN_TESTS = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


#: The last cell of every course notebook: the licences, linking to the copies that go with it (:data:`helpers.workbook.book.LICENSE_FILES`).
LICENSE_CELL = (
    "*From the TensorFlow 2 training workbook. Code under the Apache License 2.0 ([LICENSE](LICENSE)); "
    "prose and figures under CC BY 4.0 ([LICENSE-docs](LICENSE-docs)): both files come with this notebook.*"
)


class CourseError(CommandError, RuntimeError):
    """An nbgrader command failed while the course was built or graded; the message ends with its output's last lines."""

    exit_status = 4
    meaning = "an nbgrader command failed while the course was built or graded (its last lines are printed)"


def course_root() -> Path:
    """The course folder: ``build/course`` (under ``$WORKBOOK_BUILD_DIR`` if set)."""
    return build_root() / "course"


def answer_id(exercise: Exercise) -> str:
    """nbgrader's ``grade_id`` of an exercise's answer cell: ``exercise-<N>-answer``."""
    return f"exercise-{exercise.number}-answer"


def check_id(exercise: Exercise) -> str:
    """nbgrader's ``grade_id`` of an exercise's check cell: ``exercise-<N>-check`` (one grade per exercise)."""
    return f"exercise-{exercise.number}-check"


def check_name(exercise: Exercise) -> str:
    """The name a chapter's check gives the exercise (``exercises.check("Exercise 2", ...)``)."""
    return f"Exercise {exercise.number}"


def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False, points: int | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": SCHEMA_VERSION,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        metadata["points"] = points
    return metadata


def course_notebook(chapter: Any, name: str, *, due: datetime | None = None, settings: Settings | None = None) -> Any:
    """The teacher's version of chapter ``name`` (an ``nbformat`` notebook): a copy with nbgrader's cells, described above,
    its header first (``due``: the chapter's due date, if any) and the licences last."""
    import nbformat

    settings = settings or Settings()
    notebook = copy.deepcopy(chapter)
    exercises = find(notebook)
    if not exercises:
        raise UsageError("the chapter has no exercise: nothing to grade")
    for exercise in exercises:
        answer, check = notebook.cells[exercise.stub], notebook.cells[exercise.check]
        answer.source = f"{answer.source.rstrip()}\n{BEGIN_SOLUTION}\n{exercise.solution_code.rstrip()}\n{END_SOLUTION}"
        answer.metadata["nbgrader"] = _nbgrader(answer_id(exercise), solution=True)
        hidden = f"exercises.require_solved({check_name(exercise)!r})  # when graded: no points unless the check above said solved"
        check.source = f"{check.source.rstrip()}\n{BEGIN_HIDDEN_TESTS}\n{hidden}\n{END_HIDDEN_TESTS}"
        check.metadata["nbgrader"] = _nbgrader(check_id(exercise), grade=True, locked=True, points=exercise.points)
    left_out = {exercise.solution for exercise in exercises} | set(chapter_only_cells(notebook))
    notebook.cells = [cell for index, cell in enumerate(notebook.cells) if index not in left_out]
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = release.rewrite_links(cell.source, name, settings.book_url)
    notebook.cells.append(nbformat.v4.new_markdown_cell(LICENSE_CELL, id="course-licence"))
    return with_header(notebook, name, due, settings)


def _exercise_named(grade_id: str) -> str:
    """The exercise a check's ``grade_id`` grades, as the chapter names it (:func:`check_id`'s inverse)."""
    match = re.fullmatch(r"exercise-(\d+)-check", grade_id)
    return f"Exercise {match[1]}" if match else grade_id


def with_header(notebook: Any, name: str, due: datetime | None, settings: Settings) -> Any:
    """``notebook`` (a course notebook) with its header first, written from its checks' points, ``due`` and ``settings``; a header there is replaced."""
    import nbformat

    grades = [cell.metadata["nbgrader"] for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    exercises = [(_exercise_named(grade["grade_id"]), int(grade["points"])) for grade in grades]
    text = release.header_text(name, release.title(notebook), exercises, due, settings)
    header = nbformat.v4.new_markdown_cell(text, id=release.HEADER_ID)
    header.metadata["nbgrader"] = _nbgrader(release.HEADER_ID, locked=True)  # read-only for students; autograding restores it
    notebook.cells = [header, *(cell for cell in notebook.cells if cell.get("id") != release.HEADER_ID)]
    return notebook


def config_text(root: Path, release_settings: Settings | None = None) -> str:
    """The ``nbgrader_config.py`` of the course in ``root``: its exchange (where ``release_assignment`` puts the students' copies) is ``root/exchange``;
    its late policy and book URL ``release_settings``'s (default: none)."""
    chosen = release_settings or Settings()
    settings = {
        "CourseDirectory.course_id": COURSE_ID,
        "Exchange.root": str(root / "exchange"),
        "ClearSolutions.code_stub": {"python": CODE_STUB},
        # The students' copy keeps the chapter's stored outputs, as the chapter shows them.
        "ClearOutput.enabled": False,
        "Execute.timeout": CELL_TIMEOUT_SECONDS,
    }
    lines = [
        "# The workbook's nbgrader course, written by `python -m helpers.workbook course` (helpers/workbook/course.py).",
        "# Edit that module, not this file: building the course again rewrites it.",
        "c = get_config()  # noqa: F821 (nbgrader defines it)",
        *(f"c.{key} = {value!r}" for key, value in settings.items()),
        "# Autograding runs each returned notebook's kernel in the sandbox (helpers/workbook/sandbox.py), the formgrader's too.",
        "from nbgrader.converters.autograde import Autograde",
        "from nbgrader.preprocessors import Execute",
        "from helpers.workbook.sandbox import SandboxedExecute",
        "c.Autograde.autograde_preprocessors = [",
        "    SandboxedExecute if step is Execute else step for step in Autograde.class_traits()['autograde_preprocessors'].default()",
        "]",
        "# The late policy (helpers/workbook/deadlines.py): autograding takes it off a late notebook's score; the due dates are in the gradebook.",
        "from helpers.workbook.deadlines import LatePenalty",
        "c.AssignLatePenalties.plugin_class = LatePenalty",
        f"c.LatePenalty.percent_per_day = {chosen.late_penalty!r}",
        "# Kept for the next build (helpers/workbook/release.py); nbgrader does not read it.",
        f"c.{release.SETTINGS_SECTION}.book_url = {chosen.book_url!r}",
    ]
    return "\n".join(lines) + "\n"


def loaded_config(root: Path) -> Any:
    """The course's ``nbgrader_config.py`` as nbgrader loads it; :class:`CourseError` if it raises (nbgrader itself only logs
    that, and goes on without the course's settings: the sandbox among them)."""
    from traitlets.config.loader import PyFileConfigLoader

    try:
        return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    except Exception as error:
        raise CourseError(f"{root / 'nbgrader_config.py'} fails to load: {type(error).__name__}: {error}; build the course again (make course)") from error


def require_sandboxed_autograding(root: Path) -> None:
    """:class:`CourseError` unless the course's configuration runs autograding's kernels in the sandbox (checked before any notebook runs)."""
    steps = loaded_config(root).Autograde.get("autograde_preprocessors", [])
    if sandbox.SandboxedExecute not in steps:
        raise CourseError(f"{root / 'nbgrader_config.py'} does not run autograding in the sandbox; build the course again (make course)")


def run_nbgrader(root: Path, *arguments: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``nbgrader <arguments>`` in the course folder, with this Python; :class:`CourseError` if it fails.

    nbgrader starts ``alembic`` (its database migrations) by name, so this Python's ``bin`` folder goes first on ``PATH``.
    """
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [sys.executable, "-m", "nbgrader", *arguments]
    done = subprocess.run(command, cwd=root, env=environment, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise CourseError(f"nbgrader {' '.join(arguments)} failed (status {done.returncode}):\n{tail}")
    return done


def build_course(
    chapters: list[Path],
    root: Path | None = None,
    *,
    due: datetime | None | Keep = KEEP,
    late_penalty: float | Keep = KEEP,
    book_url: str | Keep = KEEP,
) -> Path:
    """Write the course for ``chapters`` (notebook files) into ``root`` (default :func:`course_root`) and release it; return ``root``.

    ``source/`` is rewritten for these chapters, and ``release/`` for every chapter in ``source/``; a
    chapter from an earlier build that is not among them stays, and so does everything students returned.
    ``due`` becomes these chapters' due date (an aware datetime; None: no due date), ``late_penalty`` the
    course's late policy (:func:`helpers.workbook.deadlines.late_penalty`), ``book_url`` where links to other
    chapters point ("": nowhere, they become text); each one not given stays as the last build set it.
    Every chapter's header is written again, to state them.
    """
    import nbformat

    root = course_root() if root is None else root
    root.mkdir(parents=True, exist_ok=True)
    settings = release.kept_settings(_last_config(root), late_penalty=late_penalty, book_url=book_url)
    (root / "nbgrader_config.py").write_text(config_text(root, settings), encoding="utf-8")
    (root / "exchange").mkdir(exist_ok=True)
    built = {chapter.stem for chapter in chapters}
    due_dates = deadlines.due_dates(root)  # those set before; the gradebook records the new ones once nbgrader made it
    if due is not KEEP:
        due_dates = {name: when for name, when in due_dates.items() if name not in built} | ({name: due for name in built} if due is not None else {})
    for chapter in chapters:
        folder = root / "source" / chapter.stem
        folder.mkdir(parents=True, exist_ok=True)
        notebook = course_notebook(nbformat.read(chapter, as_version=4), chapter.stem, due=due_dates.get(chapter.stem), settings=settings)
        nbformat.write(notebook, folder / chapter.name)
        for licence in LICENSE_FILES:  # released with the notebook: its last cell links to them
            shutil.copyfile(licence, folder / licence.name)
        for page, text in release.bundled_pages(chapter.stem, settings.book_url).items():  # so are the seed map and the glossary
            (folder / page).write_text(text, encoding="utf-8")
        for image in release.shown_images(notebook):  # and the images its markdown shows (06's screenshots)
            (folder / image).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(chapter.parent / image, folder / image)
    for notebook_file in sorted((root / "source").glob("*/*.ipynb")):  # chapters of earlier builds: their headers say today's settings
        if notebook_file.stem == notebook_file.parent.name and notebook_file.stem not in built:
            notebook = with_header(nbformat.read(notebook_file, as_version=4), notebook_file.stem, due_dates.get(notebook_file.stem), settings)
            nbformat.write(notebook, notebook_file)
    run_nbgrader(root, "generate_assignment", "*", "--force")  # every chapter in source/, in one process; it makes the gradebook
    if due is not KEEP:
        deadlines.set_due_dates(root, sorted(built), due)  # where autograde reads them
    return root


def release_summary(root: Path) -> str:
    """What the course's headers state, for the teacher: each chapter's due date, the late policy, where links to other chapters go."""
    settings = release.kept_settings(_last_config(root))
    due_dates = deadlines.due_dates(root)
    chapters = sorted(folder.name for folder in (root / "source").iterdir() if folder.is_dir()) if (root / "source").is_dir() else []
    width = max((len(chapter) for chapter in chapters), default=0)
    rows = [f"  {chapter:<{width}}  {deadlines.local_time(due_dates[chapter]) if chapter in due_dates else 'none'}" for chapter in chapters]
    penalty = settings.late_penalty
    policy = "late work is marked late and keeps its points" if penalty <= 0 else f"a late notebook loses {penalty:g}% of its score per started day late"
    links = f"at {settings.book_url}/<chapter>.html" if settings.book_url else "as text naming the chapter (no --book-url)"
    return "\n".join(["due dates (--due; none: no due date):", *rows, f"late policy (--late-penalty): {policy}", f"links to other chapters: {links}"])


def _last_config(root: Path) -> Any:
    """The configuration the last build wrote in ``root``: an empty one if none, or if it no longer loads (this build rewrites it)."""
    from traitlets.config import Config

    if not (root / "nbgrader_config.py").is_file():
        return Config()
    try:
        return loaded_config(root)
    except CourseError:
        return Config()


@dataclass(frozen=True)
class Grade:
    """One returned chapter after grading: its points, or why it got none (``problem``)."""

    student: str
    chapter: str
    score: float
    max_score: float
    problem: str = ""


#: A returned folder's submission time, in nbgrader's layout: ``submitted/<student>/<chapter>/timestamp.txt``.
TIMESTAMP_FILE = "timestamp.txt"
#: How the course writes a submission time (nbgrader's exchange's default ``Exchange.timestamp_format``, in UTC).
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


def submissions(root: Path) -> list[tuple[str, str]]:
    """The (student, chapter) pairs in ``root/submitted``, nbgrader's layout ``<student>/<chapter>/<chapter>.ipynb``, sorted."""
    submitted = root / "submitted"
    if not submitted.is_dir():
        return []
    return [(folder.parent.name, folder.name) for folder in sorted(submitted.glob("*/*")) if folder.is_dir()]


def read_times(path: Path) -> dict[tuple[str, str], datetime]:
    """A times file: CSV with the header ``student,chapter,submitted`` and one row per returned notebook; the time is
    ISO 8601 (``2026-12-10 23:59`` or with an offset, ``2026-12-10T23:59:00+01:00``), this machine's local time
    (``TZ``) when it has no offset, as ``make course ARGS=--due`` reads a due date.

    :class:`~helpers.failures.UsageError` names the file and line of a bad row.
    """
    import csv

    times: dict[tuple[str, str], datetime] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle)
        if rows.fieldnames is None or not {"student", "chapter", "submitted"} <= set(rows.fieldnames):
            raise UsageError(f"{path}: a times file starts with the header student,chapter,submitted")
        for row in rows:
            where = f"{path}, line {rows.line_num}"
            try:
                moment = datetime.fromisoformat((row["submitted"] or "").strip())
            except ValueError:
                raise UsageError(f"{where}: {row['submitted']!r} is not a date and time like 2026-12-10 23:59") from None
            times[(row["student"] or "").strip(), (row["chapter"] or "").strip()] = moment.astimezone(UTC)  # a naive time is local
    return times


def collect(
    root: Path, folder: Path, times: dict[tuple[str, str], datetime] | None = None, students: list[str] | None = None, chapters: list[str] | None = None
) -> list[tuple[str, str]]:
    """Copy returned notebooks from ``folder`` (``<student>/<chapter>/<chapter>.ipynb``) into the course, only those of
    ``students`` and ``chapters`` if given (:func:`select`); the pairs copied.

    A pair returned again replaces the one there. Each copy keeps a submission time, which nbgrader compares
    with the chapter's due date: the folder's own ``timestamp.txt`` if it has one (nbgrader's exchange writes
    it), else the pair's time in ``times`` (:func:`read_times`), else the time the newest file in the folder
    was last changed. A file that is not in that layout is refused (:class:`~helpers.failures.UsageError`, naming it).
    """
    times = times or {}
    notebooks = sorted(folder.glob("*/*/*.ipynb"))
    for notebook in notebooks:
        if notebook.stem != notebook.parent.name:
            raise UsageError(f"{notebook}: a returned notebook is <student>/<chapter>/<chapter>.ipynb, the chapter's own name")
    if not notebooks:
        raise UsageError(f"no returned notebook in {folder}: the layout is <student>/<chapter>/<chapter>.ipynb")
    chosen = set(select([(notebook.parent.parent.name, notebook.parent.name) for notebook in notebooks], students, chapters))
    copied = []
    for notebook in notebooks:
        student, chapter = notebook.parent.parent.name, notebook.parent.name
        if (student, chapter) not in chosen:
            continue
        target = root / "submitted" / student / chapter
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(notebook.parent, target)
        if not (target / TIMESTAMP_FILE).is_file():
            newest = max(path.stat().st_mtime for path in notebook.parent.rglob("*") if path.is_file())
            moment = times.get((student, chapter)) or datetime.fromtimestamp(newest, tz=UTC)
            (target / TIMESTAMP_FILE).write_text(moment.astimezone(UTC).strftime(TIMESTAMP_FORMAT), encoding="utf-8")
        copied.append((student, chapter))
    unknown = sorted(set(times) - set(copied))
    if unknown:
        raise UsageError(f"the times file names {len(unknown)} notebook(s) not returned in {folder}, first {unknown[0][0]}/{unknown[0][1]}")
    return copied


def default_jobs(limits: sandbox.Limits) -> int:
    """How many notebooks to grade at once by default: one per core, no more than the memory holds at ``limits.memory_bytes`` each."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(1, min(os.cpu_count() or 1, memory // limits.memory_bytes))


def select(pairs: list[tuple[str, str]], students: list[str] | None = None, chapters: list[str] | None = None) -> list[tuple[str, str]]:
    """The pairs of these students and chapters (a chapter by its name or number prefix, ``03``); all of them for ``None``.

    :class:`~helpers.failures.UsageError` for a student or chapter with nothing returned, naming what there is.
    """
    chosen = pairs
    if students:
        missing = sorted(set(students) - {student for student, _ in pairs})
        if missing:
            raise UsageError(f"nothing returned by {', '.join(missing)}; returned: {', '.join(sorted({s for s, _ in pairs})) or 'nothing'}")
        chosen = [pair for pair in chosen if pair[0] in students]
    if chapters:
        matches = {wanted: [pair for pair in chosen if pair[1] == wanted or pair[1].startswith(f"{wanted}_")] for wanted in chapters}
        missing = [wanted for wanted, found in matches.items() if not found]
        if missing:
            raise UsageError(f"no returned chapter {', '.join(missing)}; returned: {', '.join(sorted({c for _, c in chosen})) or 'nothing'}")
        chosen = [pair for pair in chosen if any(pair in found for found in matches.values())]
    return chosen


def grading_key(root: Path, student: str, chapter: str, settings: dict[str, Any]) -> str:
    """What a notebook's grade depends on: the returned folder (its submission time included), the chapter's teacher's
    version, the course's configuration, the chapter's due date and the grading ``settings`` (limits, cell time limit)."""
    from nbgrader.api import Gradebook, MissingEntry

    from helpers.workbook.cache import files_digest

    returned, source = root / "submitted" / student / chapter, root / "source" / chapter
    digest = hashlib.sha256()
    for top in (returned, source):
        digest.update(files_digest(sorted(path for path in top.rglob("*") if path.is_file()), top))
    digest.update((root / "nbgrader_config.py").read_bytes())
    due = None
    if (root / "gradebook.db").is_file():  # nbgrader creates one otherwise, starting a process
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id=COURSE_ID) as gradebook:
            with contextlib.suppress(MissingEntry):
                due = gradebook.find_assignment(chapter).duedate
    digest.update(json.dumps({**settings, "due": str(due)}, sort_keys=True).encode())
    return digest.hexdigest()[:32]


def record_path(root: Path, student: str, chapter: str) -> Path:
    """Where grading records a notebook it graded: its :func:`grading_key` and the problem it noticed (``grading/<student>/<chapter>.json``)."""
    return root / "grading" / student / f"{chapter}.json"


def _recorded(root: Path, student: str, chapter: str) -> dict[str, str]:
    path = record_path(root, student, chapter)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def grade(
    root: Path | None = None,
    *,
    timeout: int = CELL_TIMEOUT_SECONDS,
    sandboxed: bool = True,
    limits: sandbox.Limits | None = None,
    jobs: int | None = None,
    students: list[str] | None = None,
    chapters: list[str] | None = None,
    again: bool = False,
    progress: bool = False,
) -> list[Grade]:
    """Autograde the returned notebooks that are new or changed since they were last graded, write each one's feedback
    and ``grades.csv``; the grades of every returned notebook.

    A notebook is graded again when its :func:`grading_key` changed (the returned files, the chapter, the course's
    configuration, the due date, these settings) or its graded copy is gone; ``students`` and ``chapters``
    (:func:`select`) grade only those, changed or not, and ``again`` grades every one. ``jobs`` notebooks are
    graded at once (default :func:`default_jobs`), each by its own nbgrader process, so a notebook nbgrader cannot
    grade (not JSON, say) costs only its own grade, which is then 0 with the reason; the same returned notebooks
    give the same ``grades.csv`` whatever ``jobs``. ``timeout`` bounds each cell, in seconds. Each notebook's
    kernel runs in the sandbox of :mod:`helpers.workbook.sandbox`; without one here this raises
    :class:`~helpers.workbook.sandbox.SandboxUnavailable` before grading anything, unless ``sandboxed=False``
    (the kernels then run with the grader's own rights). ``limits`` bounds each notebook (default:
    :class:`~helpers.workbook.sandbox.Limits`'s). ``progress`` shows a progress bar with the time left (tqdm, on stderr),
    after a line that counts the notebooks not graded again.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm.auto import tqdm

    limits = limits or sandbox.Limits()
    root = course_root() if root is None else root
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if sandboxed:
        sandbox.require(limits)
        require_sandboxed_autograding(root)
    released = {folder.name for folder in (root / "source").iterdir()} if (root / "source").is_dir() else set()
    every = submissions(root)
    chosen = set(select(every, students, chapters))
    settings = {"timeout": timeout, "sandboxed": sandboxed, **dataclasses.asdict(limits)}
    problems: dict[tuple[str, str], str] = {}
    pending: list[tuple[str, str, str]] = []
    for student, chapter in every:
        if chapter not in released:
            problems[student, chapter] = f"no chapter {chapter!r} in this course"
            continue
        key = grading_key(root, student, chapter, settings)
        record = _recorded(root, student, chapter)
        if (student, chapter) in chosen and (again or students or chapters or record.get("key") != key):
            pending.append((student, chapter, key))
        else:
            problems[student, chapter] = record.get("problem", "")
    workers = jobs or default_jobs(limits)
    unchanged = sum(1 for pair in every if pair[1] in released) - len(pending)
    if progress and unchanged:
        print(f"{unchanged} returned notebook(s) unchanged since graded, not graded again (--all grades them again)", file=sys.stderr)
    book_url = release.kept_settings(_last_config(root)).book_url

    def grade_one(student: str, chapter: str) -> str:
        return _grade_one(root, student, chapter, timeout, sandboxed, limits, f"{book_url}/{chapter}.html" if book_url else None)

    with ThreadPoolExecutor(max_workers=workers) as pool, tqdm(total=len(pending), unit="notebook", desc="grading", disable=not (progress and pending)) as bar:
        futures = {pool.submit(grade_one, student, chapter): (student, chapter, key) for student, chapter, key in pending}
        for future in as_completed(futures):
            student, chapter, key = futures[future]
            problem = future.result()  # a sandbox that did not run stops grading here (CourseError)
            problems[student, chapter] = problem
            recorded = record_path(root, student, chapter)
            recorded.parent.mkdir(parents=True, exist_ok=True)
            recorded.write_text(json.dumps({"key": key, "problem": problem}), encoding="utf-8")
            bar.update()
    export_grades(root)
    from helpers.workbook import class_report  # it reads this module's names: imported when grading ends

    class_report.write_reports(root)
    return read_grades(root, problems)


def _grade_one(root: Path, student: str, chapter: str, timeout: int, sandboxed: bool, limits: sandbox.Limits, chapter_url: str | None) -> str:
    """Autograde one returned notebook and write its feedback page (:mod:`helpers.workbook.feedback`, linking to ``chapter_url``);
    what a teacher should know about it ("" when nothing)."""
    report = root / "sandbox" / student / f"{chapter}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    shutil.rmtree(root / "autograded" / student / chapter, ignore_errors=True)  # a notebook that cannot be graded now has no grade from before
    bounds = [f"--SandboxedExecute.{name}={getattr(limits, name)}" for name in ("memory_bytes", "tasks", "wall_seconds", "output_bytes")]
    isolation = [f"--SandboxedExecute.report={report}", *bounds] if sandboxed else ["--SandboxedExecute.sandbox=False"]
    try:
        run_nbgrader(root, "autograde", chapter, "--student", student, "--force", f"--Execute.timeout={timeout}", *isolation)
    except CourseError as error:
        deleted: list[str] = []
        stopped = [_reason(str(error))]
    else:
        if sandboxed and not report.is_file():  # executed, but not by the sandbox: stop before any other notebook
            raise CourseError(f"{student}'s {chapter} was graded without the sandbox (it wrote no {report.name}); grading stopped")
        deleted, stopped = _noticed(root, student, chapter, timeout)
        stopped += _sandbox_notes(report)
    from helpers.workbook import feedback  # it reads this module's names

    feedback.write_feedback(root, student, chapter, chapter_url=chapter_url, stopped=stopped)  # a deleted check: the page says it
    return "; ".join([*deleted, *stopped])


def export_grades(root: Path) -> Path:
    """``grades.csv`` by nbgrader's ``export``, its rows sorted by chapter and student (nbgrader orders students by name,
    and by the order they were first graded among equal names, which parallel grading does not fix)."""
    import csv

    path = root / "grades.csv"
    run_nbgrader(root, "export", "--to", str(path))
    with path.open(encoding="utf-8", newline="") as handle:
        header, *rows = list(csv.reader(handle))
    columns = {name: index for index, name in enumerate(header)}
    rows.sort(key=lambda row: (row[columns["assignment"]], row[columns["student_id"]]))
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([header, *rows])
    return path


def _noticed(root: Path, student: str, chapter: str, timeout: int) -> tuple[list[str], list[str]]:
    """What a teacher should know about a graded notebook: the checks the student deleted, and the cells stopped at the time limit."""
    import nbformat

    name = f"{chapter}.ipynb"
    graded = nbformat.read(root / "autograded" / student / chapter / name, as_version=4)
    present = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in graded.cells}
    source = nbformat.read(root / "source" / chapter / name, as_version=4)
    checks = [cell.metadata["nbgrader"]["grade_id"] for cell in source.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    deleted = [f"{grade_id} deleted: no points for it" for grade_id in checks if grade_id not in present]
    stopped = []
    for cell in graded.cells:
        if any(output.get("ename") == "KeyboardInterrupt" for output in cell.get("outputs", [])):
            where = cell.metadata.get("nbgrader", {}).get("grade_id") or "a cell"
            stopped.append(f"{where} ran over {timeout} s and was stopped")
    return deleted, stopped


def _sandbox_notes(report: Path) -> list[str]:
    """What the sandbox stopped while a notebook was graded (a limit reached, output cut), from its report."""
    import json

    return list(json.loads(report.read_text(encoding="utf-8"))["notes"]) if report.is_file() else []


def _reason(log: str) -> str:
    """Why nbgrader could not grade a notebook, from its output: the exception it ended with, else its last ERROR line."""
    raised = [match.group(1) for match in re.finditer(r"^\s*(?:\w+\.)*(\w+(?:Error|Exception): .*)$", log, flags=re.MULTILINE)]
    errors = [line.split("]", 1)[-1].strip() for line in log.splitlines() if "| ERROR]" in line]
    return (raised or errors or log.strip().splitlines()[-1:] or ["nbgrader failed"])[-1][:200]


def read_grades(root: Path, problems: dict[tuple[str, str], str] | None = None) -> list[Grade]:
    """The grades in the course's gradebook, one per returned notebook; ``problems`` adds what grading noticed (:func:`grade`)."""
    problems = problems or {}
    from nbgrader.api import Gradebook, MissingEntry

    grades = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id=COURSE_ID) as gradebook:
        for student, chapter in submissions(root):
            problem = problems.get((student, chapter), "")
            try:
                submission = gradebook.find_submission(chapter, student)
                penalty = float(submission.late_submission_penalty or 0.0)
                if submission.total_seconds_late > 0:
                    late = f"returned {_duration(submission.total_seconds_late)} late" + (f": {penalty:g} points off" if penalty else "")
                    problem = "; ".join(filter(None, [late, problem]))
                grades.append(Grade(student, chapter, float(submission.score) - penalty, float(submission.max_score), problem))
            except MissingEntry:  # nbgrader could not grade it, or the chapter is not in the course
                try:
                    max_score = float(gradebook.find_assignment(chapter).max_score)
                except MissingEntry:
                    max_score = 0.0
                grades.append(Grade(student, chapter, 0.0, max_score, problem or "not graded"))
    return grades


def _duration(seconds: float) -> str:
    """A time span as a teacher reads it: ``2 d 3 h``, ``3 h 20 min``, ``45 s``."""
    minutes, hours, days = int(seconds // 60 % 60), int(seconds // 3600 % 24), int(seconds // 86400)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes and not days else ""]
    return " ".join(filter(None, parts)) or f"{seconds:.0f} s"


def summary(grades: list[Grade]) -> str:
    """The grades as a Markdown table: student, chapter, points, and any problem."""
    rows = [f"| {grade.student} | {grade.chapter} | {grade.score:g} / {grade.max_score:g} | {grade.problem} |" for grade in grades]
    return "\n".join(["| student | chapter | points | problem |", "|---|---|---|---|", *rows])
