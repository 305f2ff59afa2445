"""The class after each grading: what each exercise's checks found, the roster, and a gradebook a learning platform imports.

Every file goes into the course folder of :mod:`helpers.workbook.course` (:func:`write_reports` writes the three):

- ``class_report.md`` and ``class_report.csv``: per chapter and exercise, how many returned it, how many solved it,
  the mean points, and the mistakes the checks named, counted, most frequent first (``12 x your rate changes one step
  late``). A mistake is what a check said after "not yet." (a student's code raising counts by its error line);
  "not solved yet" (the stub as it came), a check that gave no verdict and a deleted check are rows of their own.
  Read from each graded notebook with :func:`helpers.workbook.feedback.read_results`.
- ``canvas_grades.csv``: the gradebook in the CSV that Canvas's gradebook import reads (:func:`canvas_rows`).

:func:`import_roster` loads the teacher's roster (``id``, and optionally ``first_name``, ``last_name``, ``email``)
into the gradebook with nbgrader's API, after checking every line of it.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers import exercises
from helpers.failures import UsageError
from helpers.workbook import course
from helpers.workbook.feedback import ExerciseResult, Outcome, open_gradebook, read_checks, read_results

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

#: The class report, as Markdown and as CSV, and the gradebook for Canvas: file names in the course folder.
REPORT_MARKDOWN, REPORT_CSV, CANVAS_CSV = "class_report.md", "class_report.csv", "canvas_grades.csv"
#: The columns of ``class_report.csv``: one row per chapter, exercise and mistake (an exercise nobody got wrong has one, without a mistake).
REPORT_COLUMNS = ("chapter", "exercise", "max_points", "returned", "solved", "mean_points", "outcome", "mistake", "count")
#: How the report names what is not a "not yet" reason: the stub as it came (the checks' own words), no verdict, no check.
OTHER_ROWS: dict[Outcome, str] = {
    "unsolved": exercises.NOT_SOLVED.removesuffix("."),
    "not run": "the check gave no verdict (the notebook stopped before it, or could not be graded)",
    "deleted": "the check cell was deleted",
}


@dataclass(frozen=True)
class Mistake:
    """One thing the checks said about an exercise, and how many students' checks said it."""

    outcome: Outcome
    text: str
    count: int


@dataclass(frozen=True)
class ExerciseSummary:
    """One exercise of a chapter across the class."""

    chapter: str
    number: int
    max_points: float
    returned: int
    solved: int
    mean_points: float
    mistakes: tuple[Mistake, ...]  #: most frequent first, then in alphabetical order


def _mistake(result: ExerciseResult) -> tuple[Outcome, str] | None:
    """What the report counts for one student's exercise; None when it was solved."""
    if result.outcome == "solved":
        return None
    return result.outcome, result.reason if result.outcome == "rejected" else OTHER_ROWS[result.outcome]


def summarise(root: Path) -> list[ExerciseSummary]:
    """Per chapter and exercise, what the class returned: every (student, chapter) in ``root/submitted`` of a chapter in ``source/``."""
    chapters: dict[str, list[str]] = {}
    for student, chapter in course.submissions(root):
        if (root / "source" / chapter).is_dir():
            chapters.setdefault(chapter, []).append(student)
    summaries = []
    with open_gradebook(root) as gradebook:
        for chapter, students in sorted(chapters.items()):
            checks = read_checks(root, chapter)
            results = [read_results(root, student, chapter, checks=checks, gradebook=gradebook).exercises for student in students]
            for check, per_student in zip(checks, zip(*results, strict=True), strict=True):
                solved = sum(result.outcome == "solved" for result in per_student)
                mean = sum(result.points for result in per_student) / len(per_student)
                summaries.append(ExerciseSummary(chapter, check.number, check.points, len(per_student), solved, mean, mistakes(per_student)))
    return summaries


def mistakes(results: tuple[ExerciseResult, ...]) -> tuple[Mistake, ...]:
    """What the checks said about one exercise of the class's notebooks, counted, most frequent first, then in alphabetical order."""
    counted = Counter(found for found in map(_mistake, results) if found is not None)
    ordered = sorted(counted.items(), key=lambda item: (-item[1], item[0][1].casefold(), item[0][1]))
    return tuple(Mistake(outcome, text, count) for (outcome, text), count in ordered)


def _number(value: float) -> str:
    """A number as the reports write it: at most two decimals, no trailing zeros."""
    return f"{round(value, 2):g}"


#: Characters that Markdown would read as markup in a mistake's text (which may quote the student's code): escaped. Not ``_``,
#: which CommonMark reads as emphasis only around words, and which the checks' reasons hold in names (``global_clipnorm``).
_MARKUP = re.compile(r"([\\`*\[\]<>|])")
#: What a spreadsheet would run as a formula at the start of a cell: a mistake's text (a student's code can choose an
#: assertion's message) that starts so gets a leading ``'`` in ``class_report.csv``.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def markdown_text(text: str) -> str:
    """``text`` with the characters Markdown reads as markup escaped, so it shows as written."""
    return _MARKUP.sub(r"\\\1", text)


def spreadsheet_text(text: str) -> str:
    """``text`` as a spreadsheet shows it without running it: a leading ``'`` when it would start a formula."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text


def report_markdown(summaries: list[ExerciseSummary]) -> str:
    """The class report as Markdown: a table per chapter, then each exercise's mistakes, ``N x what the check said``."""
    lines = ["# Class report", "", "Per exercise: how many returned it, how many solved it, the mean points, and what the checks said, most often first."]
    for chapter in sorted({summary.chapter for summary in summaries}):
        rows = [summary for summary in summaries if summary.chapter == chapter]
        lines += ["", f"## {chapter}", "", "| exercise | points | returned | solved | mean points |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {row.number} | {_number(row.max_points)} | {row.returned} | {row.solved} | {_number(row.mean_points)} |" for row in rows]
        for row in rows:
            lines += ["", f"### {chapter}, exercise {row.number}", ""]
            lines += [f"- {mistake.count} x {markdown_text(mistake.text)}" for mistake in row.mistakes] or ["Every student who returned it solved it."]
    return "\n".join(lines) + "\n"


def report_rows(summaries: list[ExerciseSummary]) -> list[dict[str, str]]:
    """The rows of ``class_report.csv`` (:data:`REPORT_COLUMNS`)."""
    rows = []
    for summary in summaries:
        shared = {
            "chapter": summary.chapter,
            "exercise": str(summary.number),
            "max_points": _number(summary.max_points),
            "returned": str(summary.returned),
            "solved": str(summary.solved),
            "mean_points": _number(summary.mean_points),
        }
        named = [{"outcome": mistake.outcome, "mistake": spreadsheet_text(mistake.text), "count": str(mistake.count)} for mistake in summary.mistakes]
        rows += [shared | mistake for mistake in named or [{"outcome": "", "mistake": "", "count": "0"}]]
    return rows


def write_csv(path: Path, header: list[str] | tuple[str, ...], rows: list[list[str]]) -> Path:
    """Write ``header`` and ``rows`` to ``path`` as CSV (UTF-8, the csv module's quoting); ``path``."""
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_class_report(root: Path) -> list[Path]:
    """Write ``class_report.md`` and ``class_report.csv`` into the course folder ``root``; their paths."""
    summaries = summarise(root)
    markdown = root / REPORT_MARKDOWN
    markdown.write_text(report_markdown(summaries), encoding="utf-8")
    table = write_csv(root / REPORT_CSV, REPORT_COLUMNS, [[row[column] for column in REPORT_COLUMNS] for row in report_rows(summaries)])
    return [markdown, table]


# --- the roster ----------------------------------------------------------------------------------------------

#: The roster's columns: ``id`` is required; the others are optional, and an empty cell leaves that field empty.
ROSTER_ID, ROSTER_FIELDS = "id", ("first_name", "last_name", "email")
#: What nbgrader can use as a student id: it names the student's folders (``submitted/<id>/``) and its exchange files
#: (``<id>+<chapter>+<time>``, found again with globs), and follows ``--student`` on its command lines: letters, digits,
#: ``.``, ``_``, ``-`` and ``@``, not starting with ``.`` (a hidden folder, ``..``) or ``-`` (an option).
STUDENT_ID = re.compile(r"(?![.-])[\w.@-]+")


def _roster_error(path: Path, line: int, problem: str) -> UsageError:
    return UsageError(f"{path}, line {line}: {problem}")


def read_roster(path: Path) -> list[dict[str, str | None]]:
    """The students of a roster CSV file, each ``{"id": ..., <optional field>: value or None}``; :class:`~helpers.failures.UsageError` names
    the file, the line and the problem (no ``id`` column, an unknown column, an empty or repeated id, an id nbgrader cannot use)."""
    if not path.is_file():
        raise UsageError(f"{path}: no such roster file")
    students: list[dict[str, str | None]] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8-sig", newline="") as file:  # utf-8-sig: a spreadsheet's byte-order mark is not part of the first column's name
        reader = csv.DictReader(file, strict=True)
        try:
            columns = [name.strip() for name in reader.fieldnames or []]
            if ROSTER_ID not in columns:
                raise _roster_error(path, 1, f"no {ROSTER_ID!r} column (the columns are {ROSTER_ID}, and optionally {', '.join(ROSTER_FIELDS)})")
            unknown = [name for name in columns if name not in (ROSTER_ID, *ROSTER_FIELDS)]
            if unknown:
                raise _roster_error(path, 1, f"unknown column {unknown[0]!r} (the columns are {ROSTER_ID}, and optionally {', '.join(ROSTER_FIELDS)})")
            reader.fieldnames = columns
            for row in reader:
                line = reader.line_num
                if None in row:
                    raise _roster_error(path, line, f"more cells than the header has columns ({len(columns)})")
                student = (row.get(ROSTER_ID) or "").strip()
                if not student:
                    raise _roster_error(path, line, "empty id")
                if student in seen:
                    raise _roster_error(path, line, f"id {student!r} again (first on line {seen[student]})")
                if not STUDENT_ID.fullmatch(student):
                    allowed = "letters, digits, '.', '_', '-' and '@', not a leading '.' or '-'"
                    raise _roster_error(path, line, f"id {student!r} cannot name a folder for nbgrader: use {allowed}")
                seen[student] = line
                students.append({ROSTER_ID: student} | {field: (row[field] or "").strip() or None for field in ROSTER_FIELDS if field in columns})
        except csv.Error as error:
            raise _roster_error(path, reader.reader.line_num, f"not a CSV row ({error})") from None  # the line it failed on
    return students


def import_roster(root: Path, csv_path: Path) -> list[str]:
    """Check the roster ``csv_path`` (:func:`read_roster`) and add or update its students in the course's gradebook; their ids.

    Nothing is written unless every line is right. A student already in the gradebook keeps their submissions; the
    roster's columns replace their names and email.
    """
    students = read_roster(csv_path)
    with open_gradebook(root) as gradebook:
        for student in students:
            fields = {field: value for field, value in student.items() if field != ROSTER_ID}
            gradebook.update_or_create_student(student[ROSTER_ID], **fields)
    return [str(student[ROSTER_ID]) for student in students]


# --- the gradebook for Canvas --------------------------------------------------------------------------------

#: Canvas's leading columns, in the order its import reads them: the student's name ("Last, First"), Canvas's own user id,
#: the SIS user id and login id, and the section (required, may be empty).
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
#: The first cell of the row under the header that gives each column's points; a column marked read-only there is not imported.
POINTS_POSSIBLE, READ_ONLY = "Points Possible", "(read only)"


def canvas_column(chapter: str, number: int | None = None) -> str:
    """A Canvas column's title: ``<chapter> exercise <N>``, or ``<chapter> total`` (no "(digits)" at the end: Canvas would read an assignment id)."""
    return f"{chapter} exercise {number}" if number is not None else f"{chapter} total"


def _student_name(student: Any) -> str:
    """A gradebook's student as Canvas names one in its export ("Last, First"), or the id when the gradebook has no name."""
    return ", ".join(part for part in (student.last_name, student.first_name) if part) or str(student.id)


def _score(gradebook: Gradebook, grade_id: str, chapter: str, student: str) -> str:
    from nbgrader.api import MissingEntry

    try:
        return _number(float(gradebook.find_grade(grade_id, chapter, chapter, student).score))
    except MissingEntry:
        return ""


def canvas_rows(root: Path) -> list[list[str]]:
    """The gradebook for Canvas's import: its header, its "Points Possible" row, then one row per student, by id.

    The format is what Canvas's gradebook import reads (its source: ``app/models/gradebook_importer.rb`` in
    https://github.com/instructure/canvas-lms; an institution's guide to it:
    https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades):

    - a header starting ``Student``, ``ID``, then ``SIS User ID`` and ``SIS Login ID``, then ``Section``; a row is
      matched to a Canvas student by Canvas's numeric ``ID`` (nbgrader's ``lms_user_id`` when the gradebook has one),
      else by the SIS user id, else by the SIS login id, else by the name. The roster's id goes into both SIS
      columns, so Canvas matches it whichever of the two your institution uses it as;
    - one column per exercise of each graded chapter, titled :func:`canvas_column`: Canvas takes a column to an
      assignment of that exact title, or offers to create one; a title ending in digits in brackets would be read
      as an assignment's id, so none does;
    - the chapter's total after its exercises, marked :data:`READ_ONLY` in the "Points Possible" row, as Canvas's
      own export marks computed columns: an import leaves it out, so the chapter is not counted twice;
    - a second row, "Points Possible", with each exercise's points;
    - a student in the gradebook (a roster's student included) with no submission of a chapter has empty cells for
      it: Canvas leaves an empty cell ungraded, where 0 would be a grade. A late penalty is taken off the total only.
    """
    graded = sorted({chapter for _, chapter in course.submissions(root) if (root / "source" / chapter).is_dir()})
    checks = {chapter: read_checks(root, chapter) for chapter in graded}
    header = list(CANVAS_COLUMNS)
    possible = [POINTS_POSSIBLE] + [""] * (len(CANVAS_COLUMNS) - 1)
    for chapter in graded:
        header += [canvas_column(chapter, check.number) for check in checks[chapter]] + [canvas_column(chapter)]
        possible += [_number(check.points) for check in checks[chapter]] + [READ_ONLY]
    rows = [header, possible]
    from nbgrader.api import MissingEntry

    with open_gradebook(root) as gradebook:
        for student in sorted(gradebook.students, key=lambda student: student.id):
            row = [_student_name(student), student.lms_user_id or "", student.id, student.id, ""]
            for chapter in graded:
                try:
                    submission = gradebook.find_submission(chapter, student.id)
                except MissingEntry:
                    row += [""] * (len(checks[chapter]) + 1)
                    continue
                row += [_score(gradebook, check.grade_id, chapter, student.id) for check in checks[chapter]]
                row.append(_number(max(0.0, float(submission.score) - float(submission.late_submission_penalty or 0.0))))
            rows.append(row)
    return rows


def write_canvas_csv(root: Path) -> Path:
    """Write ``canvas_grades.csv`` (:func:`canvas_rows`) into the course folder ``root``; its path."""
    header, *rows = canvas_rows(root)
    return write_csv(root / CANVAS_CSV, header, rows)


def write_reports(root: Path) -> list[Path]:
    """After grading: the class report (Markdown and CSV) and the gradebook for Canvas, in the course folder ``root``; their paths."""
    return [*write_class_report(root), write_canvas_csv(root)]
