"""The class report, the roster and the gradebook for Canvas (issue 32, item 6): ``helpers/workbook/class_report.py``.

The graded courses are built by hand as in ``tests/test_workbook_feedback.py`` (no kernel, no nbgrader command): the tiny
chapter's teacher's version, autograded notebooks holding what each check printed, a gradebook filled with nbgrader's API.
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from helpers.failures import UsageError
from helpers.workbook import class_report, feedback
from helpers.workbook.class_report import Mistake
from tests.test_workbook_feedback import DELETED, HINT, TINY_CHAPTER, build_course, return_graded

SOLVED = {1: "solved.", 2: "solved.", 3: "solved."}
FULL = {1: 1.0, 2: 2.0, 3: 2.0}
RAISED = "not yet. Your code raised NameError: name 'double' is not defined"
#: Six students' checks (what each printed after ``Exercise N: ``) and points; fy's notebook could not be graded.
CLASS: dict[str, tuple[dict[int, str | None] | None, dict[int, float]]] = {
    "ada": ({1: "solved.", 2: "not yet. stops one short", 3: RAISED}, {1: 1}),
    "bo": ({1: f"not solved yet. Hint: {HINT}", 2: "not yet. stops one short", 3: RAISED}, {}),
    "cy": ({1: "solved.", 2: "not yet. stops one short", 3: "not yet. adds 2 instead of doubling"}, {1: 1}),
    "di": ({1: DELETED, 2: "not yet. counts 10 too", 3: "solved."}, {3: 2}),
    "ed": (SOLVED, FULL),
    "fy": (None, {}),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course with :data:`CLASS` graded in it (bo half a point late); its folder. Tests only read it."""
    root = build_course(tmp_path_factory.mktemp("class") / "course")
    for student, (said, points) in CLASS.items():
        return_graded(root, student, said, points, penalty=0.5 if student == "bo" else 0.0)
    return root


def test_each_exercise_counts_who_returned_it_who_solved_it_and_the_mean(graded: Path) -> None:
    summaries = class_report.summarise(graded)
    assert [(row.chapter, row.number, row.max_points, row.returned, row.solved, round(row.mean_points, 3)) for row in summaries] == [
        (TINY_CHAPTER, 1, 1, 6, 3, 0.5),
        (TINY_CHAPTER, 2, 2, 6, 1, 0.333),
        (TINY_CHAPTER, 3, 2, 6, 2, 0.667),
    ]


def test_the_mistakes_are_counted_most_frequent_first_each_kind_its_own_row(graded: Path) -> None:
    exercise_1, exercise_2, exercise_3 = (row.mistakes for row in class_report.summarise(graded))
    no_verdict = class_report.OTHER_ROWS["not run"]
    assert exercise_1 == (
        Mistake("unsolved", "not solved yet", 1),
        Mistake("deleted", "the check cell was deleted", 1),
        Mistake("not run", no_verdict, 1),
    )
    assert exercise_2 == (Mistake("rejected", "stops one short", 3), Mistake("rejected", "counts 10 too", 1), Mistake("not run", no_verdict, 1))
    raised = RAISED.removeprefix("not yet. ")
    assert exercise_3 == (Mistake("rejected", raised, 2), Mistake("rejected", "adds 2 instead of doubling", 1), Mistake("not run", no_verdict, 1))


def test_the_markdown_report_lists_each_mistake_as_count_x_reason(graded: Path) -> None:
    markdown = class_report.report_markdown(class_report.summarise(graded))
    assert "| 2 | 2 | 6 | 1 | 0.33 |" in markdown
    section = markdown.split(f"### {TINY_CHAPTER}, exercise 2\n")[1].split("###")[0]
    assert section.strip().splitlines() == ["- 3 x stops one short", "- 1 x counts 10 too", f"- 1 x {class_report.OTHER_ROWS['not run']}"]
    assert "- 2 x Your code raised NameError: name 'double' is not defined" in markdown


def test_a_reason_is_escaped_in_markdown_and_cannot_start_a_formula_in_the_csv() -> None:
    assert class_report.markdown_text("a <b>|*x*| `c` [d]") == r"a \<b\>\|\*x\*\| \`c\` \[d\]"
    assert class_report.markdown_text("global_clipnorm and clip_norm") == "global_clipnorm and clip_norm"
    summary = class_report.ExerciseSummary("ch", 1, 1, 1, 0, 0, (Mistake("rejected", '=HYPERLINK("http://x")', 1),))
    assert class_report.report_rows([summary])[0]["mistake"] == '\'=HYPERLINK("http://x")'


def test_the_csv_report_reads_back_as_written_one_row_per_mistake(graded: Path) -> None:
    markdown, table = class_report.write_class_report(graded)
    assert (markdown, table) == (graded / "class_report.md", graded / "class_report.csv")
    with table.open(encoding="utf-8", newline="") as file:
        reader = csv.DictReader(file)
        assert tuple(reader.fieldnames or ()) == class_report.REPORT_COLUMNS
        rows = list(reader)
    assert rows == class_report.report_rows(class_report.summarise(graded))
    assert [(row["exercise"], row["mistake"], row["count"]) for row in rows if row["exercise"] == "2"] == [
        ("2", "stops one short", "3"),
        ("2", "counts 10 too", "1"),
        ("2", class_report.OTHER_ROWS["not run"], "1"),
    ]
    assert markdown.read_text(encoding="utf-8") == class_report.report_markdown(class_report.summarise(graded))


def test_an_exercise_every_student_solved_has_one_row_without_a_mistake(tmp_path: Path) -> None:
    root = build_course(tmp_path / "course")
    return_graded(root, "ed", SOLVED, FULL)
    rows = class_report.report_rows(class_report.summarise(root))
    assert [(row["exercise"], row["solved"], row["mean_points"], row["mistake"], row["count"]) for row in rows] == [
        ("1", "1", "1", "", "0"),
        ("2", "1", "2", "", "0"),
        ("3", "1", "2", "", "0"),
    ]
    assert "Every student who returned it solved it." in class_report.report_markdown(class_report.summarise(root))


# --- the roster ----------------------------------------------------------------------------------------------


def _students(root: Path) -> dict[str, tuple[str | None, str | None, str | None]]:
    with feedback.open_gradebook(root) as gradebook:
        return {student.id: (student.first_name, student.last_name, student.email) for student in gradebook.students}


def test_a_roster_loads_names_and_emails_into_the_gradebook_and_again_updates_them(tmp_path: Path) -> None:
    root = build_course(tmp_path / "course")
    roster = tmp_path / "roster.csv"
    roster.write_text("\ufeffid,first_name,last_name,email\nada,Ada,Lovelace,ada@example.org\n bo ,,,\n", encoding="utf-8")  # a spreadsheet's BOM
    assert class_report.import_roster(root, roster) == ["ada", "bo"]
    assert _students(root) == {"ada": ("Ada", "Lovelace", "ada@example.org"), "bo": (None, None, None)}
    roster.write_text("email,id\nada@uni.example,ada\n", encoding="utf-8")
    assert class_report.import_roster(root, roster) == ["ada"]
    assert _students(root) == {"ada": ("Ada", "Lovelace", "ada@uni.example"), "bo": (None, None, None)}  # the names not in the file kept


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("first_name,email\nAda,ada@example.org\n", "line 1: no 'id' column"),
        ("", "line 1: no 'id' column"),
        ("id,nickname\nada,Ada\n", "line 1: unknown column 'nickname'"),
        ("id,first_name\nada,Ada\n,Bo\n", "line 3: empty id"),
        ("id\nada\nbo\nada\n", "line 4: id 'ada' again \\(first on line 2\\)"),
        ("id\n../ada\n", "line 2: id '../ada' cannot name a folder for nbgrader"),
        ("id\nada+bo\n", "line 2: id 'ada\\+bo' cannot name a folder for nbgrader"),
        ("id\n.ada\n", "line 2: id '.ada' cannot name a folder for nbgrader"),
        ("id\n--all\n", "line 2: id '--all' cannot name a folder for nbgrader"),
        ("id\nada lovelace\n", "line 2: id 'ada lovelace' cannot name a folder for nbgrader"),
        ("id\nada,Ada\n", "line 2: more cells than the header has columns \\(1\\)"),
        ('id,first_name\nbo,Bo\nada,"Ada\n', "line 3: not a CSV row \\(unexpected end of data\\)"),
    ],
)
def test_a_roster_line_that_is_wrong_is_named_and_nothing_is_loaded(tmp_path: Path, text: str, says: str) -> None:
    root = build_course(tmp_path / "course")
    roster = tmp_path / "roster.csv"
    roster.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=f"^{re.escape(str(roster))}, {says}") as raised:
        class_report.import_roster(root, roster)
    assert "\n" not in str(raised.value) and _students(root) == {}


def test_a_roster_that_is_not_there_is_named(tmp_path: Path) -> None:
    root = build_course(tmp_path / "course")
    with pytest.raises(UsageError, match="roster.csv: no such roster file"):
        class_report.import_roster(root, tmp_path / "roster.csv")


def test_a_course_without_a_gradebook_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("id\nada\n", encoding="utf-8")
    with pytest.raises(UsageError, match="no gradebook in .*: build the course first"):
        class_report.import_roster(tmp_path / "course", roster)
    assert not (tmp_path / "course").exists()


# --- the gradebook for Canvas --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def canvas(graded: Path, tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """The Canvas file of :data:`CLASS` with a roster: names for ada, Canvas's user id for cy, and zoe, who returned nothing."""
    folder = tmp_path_factory.mktemp("canvas")
    graded = Path(shutil.copytree(graded, folder / "course"))
    roster = folder / "roster.csv"
    roster.write_text("id,first_name,last_name\nada,Ada,Lovelace\nzoe,Zoë,Okafor\n", encoding="utf-8")
    class_report.import_roster(graded, roster)
    with feedback.open_gradebook(graded) as gradebook:
        gradebook.update_or_create_student("cy", lms_user_id="4711")
    path = class_report.write_canvas_csv(graded)
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.reader(file))


def test_the_canvas_file_starts_with_canvass_columns_then_one_per_exercise_and_a_total(canvas: list[list[str]]) -> None:
    header, possible = canvas[:2]
    exercises = [f"{TINY_CHAPTER} exercise {number}" for number in (1, 2, 3)]
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *exercises, f"{TINY_CHAPTER} total"]
    assert possible == ["Points Possible", "", "", "", "", "1", "2", "2", "(read only)"]  # the total not imported: counted once
    assert not [title for title in header if re.search(r"\(\d+\)$", title)]  # Canvas would read "(123)" as an assignment's id


def test_the_canvas_file_has_a_row_per_student_matched_by_id_and_name(canvas: list[list[str]]) -> None:
    rows = {row[2]: row for row in canvas[2:]}
    assert sorted(rows) == ["ada", "bo", "cy", "di", "ed", "fy", "zoe"]
    assert rows["ada"][:5] == ["Lovelace, Ada", "", "ada", "ada", ""]
    assert rows["cy"][:5] == ["cy", "4711", "cy", "cy", ""]
    assert rows["ada"][5:] == ["1", "0", "0", "1"] and rows["ed"][5:] == ["1", "2", "2", "5"]
    assert rows["bo"][5:] == ["0", "0", "0", "0"]  # 0 points, and the late penalty does not go below 0
    assert rows["fy"][5:] == ["0", "0", "0", "0"]  # returned, but nbgrader could not grade it: graded 0


def test_a_student_in_the_roster_without_a_submission_has_empty_cells_not_zeros(canvas: list[list[str]]) -> None:
    [zoe] = [row for row in canvas[2:] if row[2] == "zoe"]
    assert zoe == ["Okafor, Zoë", "", "zoe", "zoe", "", "", "", "", ""]


def test_a_late_penalty_comes_off_the_total_only(tmp_path: Path) -> None:
    root = build_course(tmp_path / "course")
    return_graded(root, "ed", SOLVED, FULL, penalty=1.5)
    assert class_report.canvas_rows(root)[2][5:] == ["1", "2", "2", "3.5"]


def test_write_reports_writes_the_class_report_and_the_canvas_file(graded: Path) -> None:
    written = class_report.write_reports(graded)
    assert written == [graded / "class_report.md", graded / "class_report.csv", graded / "canvas_grades.csv"]
    assert all(path.is_file() and path.stat().st_size for path in written)
