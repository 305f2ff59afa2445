"""The students' copies a teacher hands out as they are (issue 32): the header, the due dates and the late policy, no promise of a
removed solution, links that work in each release folder (helpers/workbook/release.py, helpers/workbook/deadlines.py).

Every test but the last builds nothing with nbgrader: the notebooks come from :func:`course.course_notebook`, and a build with
``run_nbgrader`` replaced writes ``source/``, the configuration and the gradebook as a real one does. The last one builds a tiny
course, submits a notebook after its due date and autogrades it with nbgrader.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.failures import UsageError
from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook import course, deadlines, executor, release
from helpers.workbook.book import EXTRA_PAGES, LICENSE_FILES
from helpers.workbook.commands import main
from helpers.workbook.exercise_layout import CHAPTER_ONLY_TAG, ExerciseLayoutError, chapter_only_cells, find
from tests import anchors
from tests.test_workbook_course import TINY_CHAPTER, tiny_chapter

CHAPTERS = executor.notebooks()
BOOK = "https://teacher.example.org/workbook/en"


# --- due dates and the late policy ----------------------------------------------------------------------------


@pytest.mark.usefixtures("time_zone")
@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-12-10 23:59", datetime(2026, 12, 10, 15, 59, tzinfo=UTC)),  # no offset: this machine's local time (TZ)
        ("2026-12-10T23:59:30", datetime(2026, 12, 10, 15, 59, 30, tzinfo=UTC)),
        ("2026-12-10 23:59+01:00", datetime(2026, 12, 10, 22, 59, tzinfo=UTC)),  # an offset wins over TZ
        ("2026-12-10 23:59Z", datetime(2026, 12, 10, 23, 59, tzinfo=UTC)),
        (" none ", None),
    ],
)
def test_a_due_date_is_iso_8601_in_local_time_unless_it_has_an_offset(text: str, utc: datetime | None) -> None:
    assert deadlines.parse_due(text) == utc


@pytest.mark.parametrize("text", ["2026-12-10", "10/12/2026 23:59", "2026-13-10 23:59", "2026-02-30 12:00", "2026-12-10 24:00", "tomorrow", ""])
def test_a_due_date_in_another_form_is_refused_in_one_line_naming_the_format(text: str) -> None:
    with pytest.raises(UsageError) as refused:
        deadlines.parse_due(text)
    assert "\n" not in str(refused.value) and "YYYY-MM-DD HH:MM" in str(refused.value) and "local time" in str(refused.value)


@pytest.mark.usefixtures("time_zone")
def test_a_due_date_is_shown_in_local_time_with_its_offset_and_in_utc() -> None:
    assert deadlines.local_time(datetime(2026, 12, 10, 15, 59, tzinfo=UTC)) == "2026-12-10 23:59 UTC+08:00 (2026-12-10 15:59 UTC)"


@pytest.mark.parametrize(("text", "percent"), [("0", 0.0), ("10", 10.0), ("12.5%", 12.5), ("100", 100.0)])
def test_the_late_penalty_is_a_percentage(text: str, percent: float) -> None:
    assert deadlines.parse_late_penalty(text) == percent


@pytest.mark.parametrize("text", ["-1", "101", "ten", "nan", ""])
def test_a_late_penalty_outside_0_to_100_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="is not a percentage from 0 to 100"):
        deadlines.parse_late_penalty(text)


@pytest.mark.parametrize(
    ("seconds_late", "days", "penalty"),
    [
        (0, 0, 0.0),  # on time
        (1, 1, 0.5),  # a second late is a started day: 10% of 5 points
        (deadlines.DAY_SECONDS, 1, 0.5),  # exactly a day
        (deadlines.DAY_SECONDS + 1, 2, 1.0),
        (2.5 * deadlines.DAY_SECONDS, 3, 1.5),
        (30 * deadlines.DAY_SECONDS, 30, 5.0),  # 300%, capped at the score
    ],
)
def test_the_plugin_takes_the_share_per_started_day_capped_at_the_score(seconds_late: float, days: int, penalty: float) -> None:
    """nbgrader's ``AssignLatePenalties`` calls the plugin with the notebook's score and the seconds late."""
    plugin = deadlines.LatePenalty(percent_per_day=10.0)
    assert deadlines.days_late(seconds_late) == days
    assert plugin.late_submission_penalty("ada", 5.0, seconds_late) == pytest.approx(penalty)


@pytest.mark.parametrize(("percent", "penalty"), [(0.0, 0.0), (100.0, 5.0), (25.0, 3.75)])
def test_no_penalty_and_all_points_are_the_ends_of_the_policy(percent: float, penalty: float) -> None:
    assert deadlines.LatePenalty(percent_per_day=percent).late_submission_penalty("bo", 5.0, 2.5 * deadlines.DAY_SECONDS) == pytest.approx(penalty)
    assert deadlines.late_penalty(0.0, 10 * deadlines.DAY_SECONDS, percent) == 0.0  # no points, nothing to take


def test_the_course_configuration_sets_the_late_policy_as_nbgraders_plugin_and_keeps_the_books_address(tmp_path: Path) -> None:
    (tmp_path / "nbgrader_config.py").write_text(course.config_text(tmp_path, release.Settings(12.5, BOOK)), encoding="utf-8")
    config = course.loaded_config(tmp_path)
    assert config.AssignLatePenalties.plugin_class is deadlines.LatePenalty
    assert release.kept_settings(config) == release.Settings(12.5, BOOK)
    assert release.kept_settings(config, late_penalty=0.0, book_url="") == release.Settings()


@pytest.mark.parametrize(("text", "url"), [(f"{BOOK}/", BOOK), (f"{BOOK}/index.html", BOOK), ("http://127.0.0.1:8000", "http://127.0.0.1:8000"), ("none", "")])
def test_the_books_address_is_an_http_url(text: str, url: str) -> None:
    assert release.parse_book_url(text) == url


@pytest.mark.parametrize("text", ["build/book/en", "file:///tmp/book", "https://", "ftp://example.org/book"])
def test_a_books_address_that_is_not_http_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="is not an http"):
        release.parse_book_url(text)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--due", "10/12/2026"], "--due '10/12/2026' is not a date and time: write YYYY-MM-DD HH:MM"),
        (["--late-penalty", "120"], "--late-penalty '120' is not a percentage from 0 to 100"),
        (["--book-url", "book/en"], "--book-url 'book/en' is not an http(s) URL"),
    ],
)
def test_the_course_command_refuses_a_bad_option_in_one_line_before_building_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], options: list[str], says: str
) -> None:
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path))
    assert main(["course", "03", *options]) == UsageError.exit_status == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"python -m helpers.workbook: error: {says}"), line
    assert not (tmp_path / "course").exists()


# --- the header, and a build that keeps what was set -----------------------------------------------------------


def _built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Path:
    """``build_course`` of the tiny chapter into ``tmp_path/course`` without nbgrader's ``generate_assignment`` (source/, config, gradebook).

    A new gradebook asks the ``alembic`` program for its schema's version; here alembic's own API answers, in this process.
    """
    from alembic.script import ScriptDirectory
    from nbgrader import api
    from nbgrader.dbutil import ALEMBIC_DIR

    monkeypatch.setattr(api, "get_alembic_version", lambda: ScriptDirectory(ALEMBIC_DIR).get_current_head())
    monkeypatch.setattr(course, "run_nbgrader", lambda *_, **__: None)
    return course.build_course([tiny_chapter(tmp_path / "chapters")], tmp_path / "course", **options)


def _header(root: Path, chapter: str = TINY_CHAPTER) -> Any:
    return nbformat.read(root / "source" / chapter / f"{chapter}.ipynb", as_version=4).cells[0]


@pytest.mark.usefixtures("time_zone")
def test_the_header_states_the_points_the_due_date_the_policy_and_how_to_return_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _built(tmp_path, monkeypatch, due=deadlines.parse_due("2026-12-10 23:59"), late_penalty=10.0)
    header = _header(root)
    assert (header.cell_type, header.id) == ("markdown", release.HEADER_ID)
    assert header.metadata["nbgrader"] == {
        "grade": False, "grade_id": release.HEADER_ID, "locked": True, "schema_version": 3, "solution": False, "task": False,
    }  # fmt: skip
    text = header.source
    assert text.startswith(f"**The graded copy of chapter {TINY_CHAPTER}.**") and "without the solutions" in text
    assert "| Exercise 1 | 1 |\n| Exercise 2 | 2 |\n| Exercise 3 | 2 |\n| **total** | **5** |" in text
    assert "**Due:** 2026-12-10 23:59 UTC+08:00 (2026-12-10 15:59 UTC). Work returned late loses 10% of the points" in text
    assert "10% for a minute late, 20% for a day and a minute, all of them after 9 days." in text
    assert f"return this file, `{TINY_CHAPTER}.ipynb`, under its own name" in text and "*Assignments* tab" in text and "*Submit*" in text
    assert "run every cell" in text and '"not yet"' in text and "*Validate* button fails" in text


def test_building_again_keeps_the_due_date_the_policy_and_the_books_address_until_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    due = datetime(2026, 12, 10, 15, 59, tzinfo=UTC)
    root = _built(tmp_path, monkeypatch, due=due, late_penalty=100.0, book_url=BOOK)
    first = _header(root).source
    _built(tmp_path, monkeypatch)  # no option: everything kept
    assert deadlines.due_dates(root) == {TINY_CHAPTER: due} and _header(root).source == first
    assert release.kept_settings(course.loaded_config(root)) == release.Settings(100.0, BOOK)
    assert "earns no points" in first and "Links to other chapters open them in the workbook's book." in first
    _built(tmp_path, monkeypatch, due=None, late_penalty=0.0, book_url="")  # --due none, --late-penalty 0, --book-url none
    assert deadlines.due_dates(root) == {} and "**Due:** no due date is set for this chapter" in _header(root).source
    assert "keeps its points" not in _header(root).source  # no due date: no late policy to state
    assert "this copy names it: that chapter is not in this folder" in _header(root).source


def test_a_chapter_built_before_gets_a_header_that_says_todays_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _built(tmp_path, monkeypatch, due=datetime(2026, 12, 10, 15, 59, tzinfo=UTC))
    other = root / "source" / "99_other" / "99_other.ipynb"  # a chapter of an earlier build, not built now
    other.parent.mkdir()
    nbformat.write(nbformat.read(root / "source" / TINY_CHAPTER / f"{TINY_CHAPTER}.ipynb", as_version=4), other)
    _built(tmp_path, monkeypatch, late_penalty=50.0)
    assert "loses 50% of the points it earns" in _header(root).source  # the chapter built now
    assert "no due date is set" in _header(root, "99_other").source and "`99_other.ipynb`" in _header(root, "99_other").source
    assert [cell.id for cell in nbformat.read(other, as_version=4).cells].count(release.HEADER_ID) == 1  # replaced, not added


# --- no promise of a removed solution ------------------------------------------------------------------------

_SOLUTION = re.compile(r"\bsolutions?\b", re.IGNORECASE)


@pytest.mark.parametrize("path", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_the_course_copy_speaks_of_no_solution_but_to_say_it_has_none(path: Path) -> None:
    """The chapters call a solution a solution and nothing else: in the course's copy only the header may say the word."""
    chapter = nbformat.read(path, as_version=4)
    notebook = course.course_notebook(chapter, path.stem)
    promising = [cell.source[:120] for cell in notebook.cells[1:] if cell.cell_type == "markdown" and _SOLUTION.search(cell.source)]
    assert not promising, f"{path.stem}: the course's copy, which has no solution, still speaks of one: {promising}"
    assert "without the solutions" in notebook.cells[0].source
    left_out = chapter_only_cells(chapter)  # what the book and JupyterLab still show: read as the chapter's own sentences
    assert all(_SOLUTION.search(chapter.cells[index].source) for index in left_out)
    assert len(notebook.cells) == len(chapter.cells) - len(find(chapter)) - len(left_out) + 2  # solutions and chapter-only out; header, licences in


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        (nbformat.v4.new_code_cell("print('the solution')"), "must be markdown"),
        (nbformat.v4.new_markdown_cell("## Solutions\n\nfolded below"), "without a heading"),
    ],
)
def test_a_chapter_only_cell_is_markdown_without_a_heading(cell: Any, says: str) -> None:
    cell.metadata["tags"] = [CHAPTER_ONLY_TAG]
    with pytest.raises(ExerciseLayoutError, match=says):
        chapter_only_cells(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · x"), cell]))


# --- links that work in the release ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "book_url", "released"),
    [
        ("see [01 · The step](01_global_step.ipynb#The-step).", "", "see 01 · The step."),
        ("see [the step](01_global_step.ipynb#The-step).", "", "see the step (chapter 01)."),
        ("chapter 11 ([A TF1 script](11_tf1_training_code.ipynb#A-TF1-script)) runs it", "", "chapter 11 (A TF1 script) runs it"),
        ("[01 · x](01_global_step.ipynb#x)", BOOK, f"[01 · x]({BOOK}/01_global_step.html#x)"),
        ("[00 · F](<00_start_here.ipynb#F(28,-28)>)", BOOK, f"[00 · F](<{BOOK}/00_start_here.html#F(28,-28)>)"),
        ("[00 · m](00_start_here.ipynb#minimize(loss,-step=...)-on-Keras)", BOOK, f"[00 · m]({BOOK}/00_start_here.html#minimize(loss,-step=...)-on-Keras)"),
        ("[here](03_gradient_clipping.ipynb#Own), [map](seed_map.md), [l](LICENSE), [w](https://x.org/a)", BOOK, None),  # kept
        ("`[not](01_global_step.ipynb)` and\n```\n[nor](01_global_step.ipynb)\n```", "", None),  # code: untouched
        ("[`helpers/train/cli.py`](../helpers/train/cli.py)", BOOK, "`helpers/train/cli.py`"),  # a file the folder lacks: text
    ],
)
def test_links_to_what_the_folder_lacks_point_at_the_book_or_become_text(markdown: str, book_url: str, released: str | None) -> None:
    assert release.rewrite_links(markdown, "03_gradient_clipping", book_url) == (markdown if released is None else released)


def _release_folder(folder: Path, path: Path, book_url: str) -> Path:
    """``release/<chapter>/`` as ``build_course`` and nbgrader make it: the course notebook, the licences, the seed map and the glossary."""
    folder.mkdir(parents=True)
    nbformat.write(course.course_notebook(nbformat.read(path, as_version=4), path.stem, settings=release.Settings(book_url=book_url)), folder / path.name)
    for licence in LICENSE_FILES:
        (folder / licence.name).write_bytes(licence.read_bytes())
    for page, text in release.bundled_pages(path.stem, book_url).items():
        (folder / page).write_text(text, encoding="utf-8")
    files = release.bundled_files(path.stem)
    assert sorted(entry.name for entry in folder.iterdir()) == sorted(files) and set(EXTRA_PAGES) <= set(files)
    return folder


@functools.cache
def _chapter_headings(name: str) -> frozenset[str]:
    return frozenset(anchors.heading_anchors(NOTEBOOKS_DIR / f"{name}.ipynb"))


def _link_targets(text: str) -> list[str]:
    """:func:`tests.anchors.rendered_link_targets` of ``text``, a table a row at a time (a row holds its links; rendering the seed map's
    tables whole takes nbconvert's Markdown renderer seconds)."""
    targets = []
    for block in re.split(r"\n\s*\n", text):
        rows = block.splitlines()
        parts = rows if rows and all(row.lstrip().startswith("|") for row in rows) else [block]
        targets += [target for part in parts for target in _rendered_link_targets(part)]
    return targets


@functools.cache
def _rendered_link_targets(markdown: str) -> tuple[str, ...]:
    """Most parts are the same in every release folder and in both variants (with and without the book's address)."""
    return tuple(anchors.rendered_link_targets(markdown))


def _anchors(page: Path) -> frozenset[str]:
    """The anchors of a notebook's or a Markdown page's headings, as nbconvert renders them (JupyterLab's)."""
    return _anchors_of_text(page.suffix, page.read_text(encoding="utf-8"))


@functools.cache
def _anchors_of_text(suffix: str, text: str) -> frozenset[str]:
    """Keyed by the page's text, not its path: every release folder is a new temporary path holding the same pages."""
    if suffix == ".ipynb":
        return frozenset(anchors.markdown_heading_anchors(*(cell.source for cell in nbformat.reads(text, as_version=4).cells if cell.cell_type == "markdown")))
    return frozenset(anchors.markdown_heading_anchors(text))


@pytest.mark.parametrize("book_url", ["", BOOK], ids=["no-book", "book"])
def test_every_link_of_every_release_folder_resolves_inside_it_or_is_the_served_book(tmp_path: Path, book_url: str) -> None:
    for path in CHAPTERS:
        folder = _release_folder(tmp_path / book_url.replace("/", "_") / path.stem, path, book_url)
        notebook = nbformat.read(folder / path.name, as_version=4)
        texts = {path.name: "\n\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")}
        texts |= {page: (folder / page).read_text(encoding="utf-8") for page in EXTRA_PAGES}
        for name, text in texts.items():
            for target in _link_targets(text):
                where = f"{path.stem}/{name} links to {target}"
                if target.startswith(BOOK):  # a page of the book, with a heading of its chapter
                    page, _, anchor = target.removeprefix(f"{BOOK}/").partition("#")
                    assert book_url and page.endswith(".html") and anchor in _chapter_headings(page.removesuffix(".html")), where
                    continue
                if target.startswith(("http://", "https://")):
                    continue
                file, _, anchor = target.partition("#")
                assert (folder / file).is_file(), where
                if anchor:
                    assert anchor in _anchors(folder / file), where


def test_the_seed_map_keeps_its_links_to_the_released_chapter_and_names_the_others() -> None:
    pages = release.bundled_pages("07_gradient_checking")
    assert "[07 · What a gradient check compares](07_gradient_checking.ipynb#What-a-gradient-check-compares)" in pages["seed_map.md"]
    assert "01_global_step.ipynb" not in pages["seed_map.md"] and "| [01 · tf.train in TensorFlow 2]" not in pages["seed_map.md"]
    assert "01 · tf.train in TensorFlow 2" in pages["seed_map.md"] and "[seed map](seed_map.md)" in pages["glossary.md"]
    assert set(pages) == set(EXTRA_PAGES) and all((NOTEBOOKS_DIR / page).is_file() for page in pages)


# --- with nbgrader: a late submission, autograded --------------------------------------------------------------


@pytest.mark.process
def test_a_submission_after_the_due_date_is_autograded_with_the_penalty_and_the_header_survives(tmp_path: Path) -> None:
    """The tiny course, due 2026-12-10 15:59 UTC at 10% a started day; a solved copy submitted 1.5 days late (nbgrader's
    ``timestamp.txt``), its header edited; ``nbgrader autograde`` (no sandbox: the notebook is the test's own)."""
    from nbgrader.api import Gradebook

    due = datetime(2026, 12, 10, 15, 59, tzinfo=UTC)
    chapter = tiny_chapter(tmp_path / "chapters")
    root = course.build_course([chapter], tmp_path / "course", due=due, late_penalty=10.0)
    released = nbformat.read(root / "release" / TINY_CHAPTER / chapter.name, as_version=4)
    header = released.cells[0]
    assert (header.id, header.source) == (release.HEADER_ID, _header(root).source) and "15:59 UTC" in header.source
    assert (header.metadata["deletable"], header.metadata["editable"]) == (False, False)  # nbgrader locked it in the students' copy
    assert sorted(entry.name for entry in (root / "release" / TINY_CHAPTER).iterdir()) == sorted(release.bundled_files(TINY_CHAPTER))

    for exercise in find(nbformat.read(chapter, as_version=4)):
        [answer] = [cell for cell in released.cells if cell.metadata.get("nbgrader", {}).get("grade_id") == f"exercise-{exercise.number}-answer"]
        answer.source = exercise.solution_code
    header.source = "**Due:** whenever I like."  # a student's edit of the locked header
    submitted = root / "submitted" / "late" / TINY_CHAPTER
    submitted.mkdir(parents=True)
    nbformat.write(released, submitted / chapter.name)
    late = due + timedelta(days=1, hours=12)
    (submitted / "timestamp.txt").write_text(f"{late:%Y-%m-%d %H:%M:%S.%f} UTC", encoding="utf-8")  # as nbgrader's exchange writes it

    course.run_nbgrader(root, "autograde", TINY_CHAPTER, "--student", "late", "--force", "--SandboxedExecute.sandbox=False")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id=course.COURSE_ID) as gradebook:
        assert gradebook.find_assignment(TINY_CHAPTER).duedate == due.replace(tzinfo=None)
        submission = gradebook.find_submission(TINY_CHAPTER, "late")
        notebook = gradebook.find_submission_notebook(TINY_CHAPTER, TINY_CHAPTER, "late")
        graded = (submission.total_seconds_late, float(notebook.score), notebook.late_submission_penalty, float(submission.late_submission_penalty))
    assert graded == (1.5 * deadlines.DAY_SECONDS, 5.0, 1.0, 1.0)  # two started days at 10% of 5 points
    autograded = nbformat.read(root / "autograded" / "late" / TINY_CHAPTER / chapter.name, as_version=4)
    assert autograded.cells[0].source == _header(root).source  # nbgrader put the locked header back


def test_every_image_in_notebooks_images_is_shown_by_a_chapter_and_released_with_it() -> None:
    """06's screenshots: the students' copy of a chapter carries the images its markdown shows, so ``images/NAME.png`` resolves."""
    shown = {path.stem: release.shown_images(nbformat.read(path, as_version=4)) for path in executor.notebooks()}
    assert sorted(image for images in shown.values() for image in images) == sorted(f"images/{path.name}" for path in (NOTEBOOKS_DIR / "images").iterdir())
    assert len(shown["06_tensorboard"]) == 4
    markdown = nbformat.v4.new_markdown_cell("![a](images/x.png) and ![b](images/y.png), again ![a](images/x.png); [a link](images/z.png)")
    assert release.shown_images(nbformat.v4.new_notebook(cells=[markdown])) == ["images/x.png", "images/y.png"]
