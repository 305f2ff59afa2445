"""The feedback a student reads after grading: one short page per student and chapter, the exercises only.

It replaces nbgrader's ``generate_feedback``, whose page is the whole chapter (about 30,000 px) with every
summary link labelled "Test cell", the hidden-test line and a traceback with the teacher's install path in
each graded cell, and TensorFlow's advice in place of the exercise's hint when the student's code raised.

Read for one student and chapter (:func:`read_results`), from the course folder of :mod:`helpers.workbook.course`:

- ``source/<chapter>/<chapter>.ipynb``, the teacher's version: each check cell (nbgrader's ``grade`` cells, in
  reading order), the ``hint=`` of its ``exercises.check(...)`` call (read with :mod:`ast`), its points, and the
  exercise's task (the markdown from ``**Exercise N.**`` on);
- ``autograded/<student>/<chapter>/<chapter>.ipynb``: the verdict line each check printed
  (:mod:`helpers.exercises`' words), a check cell the student deleted, a check that never printed one;
- ``gradebook.db``, through nbgrader's :class:`~nbgrader.api.Gradebook`: the points each check won (a score
  the teacher set by hand included) and any late penalty.

Written (:func:`write_feedback`): ``feedback/<student>/<chapter>/<chapter>.html``, the file nbgrader's
``generate_feedback`` writes, with the two files nbgrader's ``release_feedback`` reads beside it
(``timestamp.txt``, ``submission_secret.txt``, which ``collect`` and ``autograde`` bring along; copied from
``autograded/`` when there). nbgrader's own exchange then delivers it, verified in a course in a temporary
folder: the chapter released, fetched and submitted by a student, collected, then this page written, then
nbgrader's commands ``release_feedback`` and, as the student, ``fetch_feedback``: the student's copy is this
page, byte for byte (``tests/test_workbook_feedback.py``, a process test: the steps before the page run
nbgrader's exchange classes in the test's process, and its grading is written by hand; once, every step as
nbgrader's own command, ``autograde`` included, gave the same). A notebook returned with ``make grade
--from`` has neither file (only nbgrader's ``submit`` makes them), and nbgrader's ``release_feedback`` stops
at its page with ``FileNotFoundError``, for the whole chapter; ``--CourseDirectory.student_id_exclude=<ids>``
leaves such students out, and their pages are handed out as they are.

The page: a title with the chapter and the points won, then per exercise "Exercise N (P points)", the
points won, the task, what the check said (its reason, in the student's words) and, whenever the exercise
is not solved, its hint; last, a link to the chapter for the rest. No cell source, hidden test, traceback
or file-system path reaches it (a path in an error message is cut to its file name), everything is
escaped, and it loads nothing from elsewhere.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from helpers import exercises
from helpers.failures import UsageError
from helpers.workbook.course import COURSE_ID

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

#: What became of an exercise when graded: its check said solved, "not solved yet" (the stub as it came), "not yet"
#: (a wrong answer, or the student's code raised); or it gave no verdict (the notebook stopped before it, or its output
#: was cut); or the student deleted the check cell.
Outcome = Literal["solved", "unsolved", "rejected", "not run", "deleted"]
#: The files nbgrader's ``release_feedback`` reads beside a feedback page; nbgrader's ``collect`` and ``autograde`` copy them along.
RELEASE_FILES = ("timestamp.txt", "submission_secret.txt")
#: An absolute file-system path of two parts or more in an error message (not a URL's, not ``x/2``): cut to its last part on the page.
_PATH = re.compile(r"(?<![\w.:/~-])/(?:[\w.@+-]+/)+([\w.@+-]+)")


@dataclass(frozen=True)
class Check:
    """An exercise's check in the teacher's version: what the page needs from ``source/`` and nothing more."""

    number: int  #: 1-based, in reading order
    grade_id: str  #: nbgrader's id of the check cell, the key of its grade in the gradebook
    name: str  #: the name the check prints its verdict under (``Exercise N``)
    hint: str
    points: float
    task: str  #: the exercise's task, Markdown, from ``**Exercise N.**`` on (that marker left out)


@dataclass(frozen=True)
class ExerciseResult:
    """One exercise of a graded notebook, as the student's page and the class report show it."""

    number: int
    grade_id: str
    points: float  #: won, as the gradebook has it
    max_points: float
    outcome: Outcome
    reason: str  #: what the check said after "not yet." (paths cut); empty for the other outcomes
    hint: str
    task: str

    @property
    def raised(self) -> bool:
        """Whether the check said the student's code raised (``Your code raised <Error>: ...``)."""
        return self.outcome == "rejected" and self.reason.startswith(f"{exercises.RAISED} ")


@dataclass(frozen=True)
class ChapterResults:
    """A student's graded chapter: each exercise's result, and what the gradebook takes off for lateness."""

    student: str
    chapter: str
    exercises: tuple[ExerciseResult, ...]
    late_penalty: float = 0.0
    graded: bool = True  #: False when there is no autograded notebook (nbgrader or the sandbox stopped it): nothing ran
    title: str = ""  #: the chapter's title (``03 · Gradient clipping``), "" when it has none

    @property
    def max_points(self) -> float:
        """What the chapter is worth."""
        return sum(result.max_points for result in self.exercises)

    @property
    def points(self) -> float:
        """The points won, the late penalty taken off (never below 0, as nbgrader's ``export`` counts them)."""
        return max(0.0, sum(result.points for result in self.exercises) - self.late_penalty)


def notebook_path(root: Path, step: str, chapter: str, student: str | None = None) -> Path:
    """A chapter's notebook in a step of nbgrader's layout: ``root/<step>/[<student>/]<chapter>/<chapter>.ipynb``."""
    folder = root / step / student / chapter if student is not None else root / step / chapter
    return folder / f"{chapter}.ipynb"


@contextmanager
def open_gradebook(root: Path) -> Iterator[Gradebook]:
    """The course's gradebook (``root/gradebook.db``), opened with nbgrader's API under :data:`~helpers.workbook.course.COURSE_ID`.

    :class:`~helpers.failures.UsageError` if the course has none yet: ``make course`` makes it (nbgrader's ``generate_assignment``).
    """
    from nbgrader.api import Gradebook

    database = root / "gradebook.db"
    if not database.is_file():
        raise UsageError(f"no gradebook in {root}: build the course first (make course)")
    with Gradebook(f"sqlite:///{database}", course_id=COURSE_ID) as gradebook:
        yield gradebook


def _checked_name(call: ast.expr) -> str | None:
    """The exercise's name if ``call`` is ``exercises.check("<name>", ...)`` (or ``check(...)``) with the name a literal; else None."""
    if not isinstance(call, ast.Call) or not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    function = call.func
    called = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""
    return str(call.args[0].value) if called == "check" else None


def _check_call(source: str) -> tuple[str, str]:
    """The name and hint of the first ``with exercises.check("<name>", hint="<hint>"):`` in a check cell's source ("" for a hint that is not a literal)."""
    calls = [item.context_expr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.With) for item in node.items]
    for call in calls:
        name = _checked_name(call)
        if name is not None and isinstance(call, ast.Call):
            hints = [keyword.value for keyword in call.keywords if keyword.arg == "hint"]
            return name, str(hints[0].value) if hints and isinstance(hints[0], ast.Constant) else ""
    raise ValueError("no `with exercises.check(...)` in the check cell")


def _task(cells: list[Any], before: int, number: int) -> str:
    """The task of exercise ``number``: the last markdown cell before index ``before`` that holds ``**Exercise N.**``, from there on."""
    marker = f"**Exercise {number}.**"
    for cell in reversed(cells[:before]):
        if cell.cell_type == "markdown" and marker in cell.source:
            return cell.source.split(marker, 1)[1].strip()
    return ""


def read_checks(root: Path, chapter: str) -> tuple[Check, ...]:
    """The checks of a chapter's teacher's version (``root/source/<chapter>/<chapter>.ipynb``), in reading order."""
    import nbformat

    source = nbformat.read(notebook_path(root, "source", chapter), as_version=4)
    checks: list[Check] = []
    for index, cell in enumerate(source.cells):
        metadata = cell.metadata.get("nbgrader", {})
        if metadata.get("grade"):
            number = len(checks) + 1
            try:
                name, hint = _check_call(cell.source)
            except (SyntaxError, ValueError) as error:
                raise ValueError(f"{chapter}, check {metadata['grade_id']}: {error}") from None
            checks.append(Check(number, metadata["grade_id"], name, hint, float(metadata.get("points", 0)), _task(source.cells, index, number)))
    return tuple(checks)


def without_paths(text: str) -> str:
    """``text`` with each absolute file-system path cut to its last part (``/sandbox/work/data.csv`` -> ``data.csv``)."""
    return _PATH.sub(lambda match: match.group(1), text)


def _verdict(cell: Any, name: str) -> str | None:
    """What the check called ``name`` printed after ``<name>: ``, in its cell's stdout (the last such line); None if it printed none."""
    printed = "".join(output.get("text", "") for output in cell.get("outputs", []) if output.get("output_type") == "stream" and output.get("name") == "stdout")
    lines = [line.removeprefix(f"{name}: ") for line in printed.splitlines() if line.startswith(f"{name}: ")]
    return lines[-1] if lines else None


def _outcome(cell: Any | None, name: str) -> tuple[Outcome, str]:
    """The outcome of a check cell of the autograded notebook (None: the student deleted it) and its "not yet" reason."""
    if cell is None:
        return "deleted", ""
    said = _verdict(cell, name)
    if said == exercises.SOLVED:
        return "solved", ""
    if said is not None and said.startswith(exercises.NOT_SOLVED):
        return "unsolved", ""
    if said is not None and said.startswith(f"{exercises.NOT_YET} "):
        return "rejected", without_paths(said.removeprefix(f"{exercises.NOT_YET} ").strip())
    return "not run", ""


def read_results(root: Path, student: str, chapter: str, *, checks: tuple[Check, ...] | None = None, gradebook: Gradebook | None = None) -> ChapterResults:
    """A student's graded chapter: each check's outcome in ``autograded/``, its points in the gradebook (0 if it has none).

    ``checks`` (:func:`read_checks`) and an open ``gradebook`` (:func:`open_gradebook`) save reading them again for each student.
    A chapter with no autograded notebook has every exercise "not run".
    """
    import nbformat

    if gradebook is None:
        with open_gradebook(root) as opened:
            return read_results(root, student, chapter, checks=checks, gradebook=opened)
    from nbgrader.api import MissingEntry

    checks = read_checks(root, chapter) if checks is None else checks
    graded_path = notebook_path(root, "autograded", chapter, student)
    graded = nbformat.read(graded_path, as_version=4) if graded_path.is_file() else None
    cells = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell for cell in graded.cells} if graded is not None else {}
    results = []
    for check in checks:
        outcome, reason = _outcome(cells.get(check.grade_id), check.name) if graded is not None else ("not run", "")
        try:
            points = float(gradebook.find_grade(check.grade_id, chapter, chapter, student).score)
        except MissingEntry:
            points = 0.0
        results.append(ExerciseResult(check.number, check.grade_id, points, check.points, outcome, reason, check.hint, check.task))
    try:
        penalty = float(gradebook.find_submission(chapter, student).late_submission_penalty or 0.0)
    except MissingEntry:
        penalty = 0.0
    from helpers.workbook.release import title

    heading = title(nbformat.read(notebook_path(root, "source", chapter), as_version=4))
    return ChapterResults(student, chapter, tuple(results), penalty, graded is not None, heading)


# --- the page ------------------------------------------------------------------------------------------------


def points_text(value: float) -> str:
    """``1 point``, ``2 points``, ``1.5 points``, ``0 points``."""
    return f"{value:g} point{'' if value == 1 else 's'}"


def _markdown(text: str) -> str:
    """A task's Markdown as HTML: raw HTML in it escaped, each link and image shown as its text (they point into the chapter)."""
    import mistune
    from mistune.util import striptags

    class TextLinks(mistune.HTMLRenderer):
        def link(self, text: str, url: str, title: str | None = None) -> str:
            return text

        def image(self, text: str, url: str, title: str | None = None) -> str:
            return str(striptags(text))

    return str(mistune.create_markdown(escape=True, renderer=TextLinks(escape=True))(text))


#: The page (Jinja2, every value escaped): readable on a phone, with its own small stylesheet and nothing loaded from elsewhere.
PAGE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ heading }}: {{ won }} of {{ worth }}</title>
<style>
body { font: 1rem/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 42rem; padding: 1rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-bottom: .25rem; }
section { border-top: 1px solid #ccc; padding: .5rem 0; }
.won { margin-top: 0; font-weight: 600; } .solved { color: #1a6b2f; } .open { color: #8a3b00; }
details { margin: .5rem 0; } summary { cursor: pointer; }
code, pre { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; white-space: pre-wrap; }
</style>
</head>
<body>
<main>
<h1>{{ heading }}: you won {{ won }} of {{ worth }}</h1>
{% if late_penalty %}<p>{{ late_penalty }} taken off: your notebook came in after the due date.</p>
{% endif %}
{% if not graded %}<p>Your notebook could not be graded, so none of its checks ran. Ask your teacher why.</p>
{% endif %}
{% if stopped %}<p>What grading stopped in your notebook:</p>
<ul>
{% for line in stopped %}<li>{{ line }}</li>
{% endfor %}
</ul>
{% endif %}
{% for exercise in exercises %}
<section>
<h2>Exercise {{ exercise.number }} ({{ exercise.worth }})</h2>
<p class="won {{ 'solved' if exercise.solved else 'open' }}">You won {{ exercise.won }} of {{ exercise.worth }}.</p>
{% if exercise.task %}<details><summary>The task</summary>{{ exercise.task }}</details>
{% endif %}
<p><strong>{{ exercise.label }}</strong> {{ exercise.said }}</p>
{% if exercise.hint %}<p><strong>Hint:</strong> {{ exercise.hint }}</p>
{% endif %}
</section>
{% endfor %}
{% if chapter_url %}<p>For the rest of the chapter, open <a href="{{ chapter_url }}">{{ chapter }}</a>.</p>
{% else %}<p>For the rest of the chapter, open your notebook <code>{{ chapter }}.ipynb</code>.</p>
{% endif %}
</main>
</body>
</html>
"""

#: Per outcome: the verdict's label, and what the page says when the check gives no reason of its own.
_SAID: dict[Outcome, tuple[str, str]] = {
    "solved": ("Solved.", "The check passed."),
    "unsolved": ("Not solved yet:", "your answer cell still held the stub it came with when the check ran."),
    "rejected": ("Not yet:", ""),
    "not run": ("Not checked:", "your notebook stopped before this check, or its output was cut, so it gave no verdict."),
    "deleted": ("Not checked:", "your notebook no longer has this exercise's check cell. Copy it back from a fresh copy of the chapter."),
}


def feedback_page(results: ChapterResults, chapter_url: str | None = None, stopped: Sequence[str] = ()) -> str:
    """The student's page for a graded chapter (HTML); ``chapter_url`` links to the chapter, else the page names the notebook file;
    ``stopped``: what grading stopped or could not do (a cell over the time limit, a sandbox limit, a notebook nbgrader could not
    read), each shown once near the top, its paths cut (:func:`without_paths`)."""
    import jinja2
    from markupsafe import Markup

    shown = [
        {
            "number": result.number,
            "worth": points_text(result.max_points),
            "won": f"{result.points:g}",
            "solved": result.outcome == "solved",
            "task": Markup(_markdown(result.task)) if result.task else "",
            "label": _SAID[result.outcome][0],
            "said": result.reason or _SAID[result.outcome][1],
            "hint": result.hint if result.outcome != "solved" else "",
        }
        for result in results.exercises
    ]
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return environment.from_string(PAGE).render(
        chapter=results.chapter,
        heading=f"Chapter {results.title}" if results.title else results.chapter,
        won=f"{results.points:g}",
        worth=points_text(results.max_points),
        late_penalty=points_text(results.late_penalty) if results.late_penalty else "",
        graded=results.graded,
        exercises=shown,
        stopped=[without_paths(line) for line in stopped],
        chapter_url=chapter_url,
    )


def feedback_path(root: Path, student: str, chapter: str) -> Path:
    """Where a student's page goes: ``root/feedback/<student>/<chapter>/<chapter>.html``, as nbgrader's ``generate_feedback`` writes it."""
    return root / "feedback" / student / chapter / f"{chapter}.html"


def write_feedback(root: Path, student: str, chapter: str, *, chapter_url: str | None = None, stopped: Sequence[str] = ()) -> Path:
    """Write a student's page for a graded chapter (:func:`feedback_page`) and the files ``release_feedback`` needs beside it; its path."""
    page = feedback_path(root, student, chapter)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(feedback_page(read_results(root, student, chapter), chapter_url, stopped), encoding="utf-8")
    for name in RELEASE_FILES:
        found = notebook_path(root, "autograded", chapter, student).parent / name
        if found.is_file():
            shutil.copyfile(found, page.parent / name)
    return page
