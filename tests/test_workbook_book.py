"""helpers.workbook.book: the offline HTML book, built from the stored notebooks (no execution)."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook import book, runner

EXTERNAL_RESOURCE = re.compile(r"<(script|link|img|iframe|source|video|audio)\b[^>]*\b(src|href)=\"(https?:)?//", re.IGNORECASE)
CSS_URL = re.compile(r"url\(\s*['\"]?(?!data:)([^)'\"]+)", re.IGNORECASE)
LOCAL_LINK = re.compile(r'href="(?!https?:|mailto:|#|data:)([^"#]+)(#[^"]*)?"')


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("book") / "book"
    chapters = [book.Chapter(path, ok=True, seconds=1.5) for path in runner.notebooks()]
    chapters[-1] = book.Chapter(chapters[-1].notebook, ok=False, seconds=2.0)
    index = book.build(chapters, out, notebooks_dir=NOTEBOOKS_DIR)
    assert index == out / "index.html"
    return out


def test_the_index_lists_every_chapter_in_order_with_its_run(built: Path) -> None:
    index = (built / "index.html").read_text(encoding="utf-8")
    pages = re.findall(r'<td><a href="(\d{2}_\w+\.html)">', index)
    assert pages == [f"{path.stem}.html" for path in runner.notebooks()]
    for path in runner.notebooks():
        title, summary = book.title_and_summary(nbformat.read(path, as_version=4))
        assert title and summary and title in index, path.stem
    assert index.count("ran ok in 1.5 s") == len(pages) - 1 and "FAILED after 2.0 s" in index
    assert 'href="seed_map.html"' in index and 'href="glossary.html"' in index


def test_pages_are_complete_and_offline(built: Path) -> None:
    for page in sorted(built.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert not EXTERNAL_RESOURCE.search(text), f"{page.name} loads {EXTERNAL_RESOURCE.search(text).group(0)}"
        assert not CSS_URL.findall(text), f"{page.name} has CSS url({CSS_URL.findall(text)[:1]})"
        for target, anchor in LOCAL_LINK.findall(text):
            assert (built / target).is_file(), f"{page.name} links to missing {target}"
            if anchor:
                # compared percent-decoded, as a browser matches a fragment with an id
                ids = {unquote(html.unescape(found)) for found in re.findall(r'id="([^"]+)"', (built / target).read_text(encoding="utf-8"))}
                assert unquote(anchor[1:]) in ids, f"{page.name} links to {target}{anchor}, which has no such id"
    chapter = (built / "08_capstone.html").read_text(encoding="utf-8")
    stored = nbformat.read(NOTEBOOKS_DIR / "08_capstone.ipynb", as_version=4)
    solutions = [cell for cell in stored.cells if "solution" in cell.metadata.get("tags", [])]
    assert "Capstone" in chapter and "quiet_tensorflow_logs" in chapter and "highlight" in chapter  # text and highlighted code
    assert "finished at step" in chapter and "data:image/png;base64," in chapter  # an output and a figure
    assert chapter.count("<details>") == len(solutions) and "<details open" not in chapter  # solutions stay closed


def test_every_page_ends_with_one_licence_line_whose_links_open_the_licences_in_the_book(built: Path) -> None:
    pages = sorted(built.glob("*.html"))
    assert len(pages) == 1 + len(runner.notebooks()) + len(book.EXTRA_PAGES) + len(book.README_PAGES)  # the index, chapters, seed map, glossary, teachers
    assert "\n" not in book.FOOTER and re.findall(r'href="([^"]+)"', book.FOOTER) == ["LICENSE.txt", "LICENSE-docs.txt"]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        ends_with_footer = re.search(re.escape(book.FOOTER) + r"\s*</body>\s*</html>\s*$", text)
        assert text.count(book.FOOTER) == 1 and ends_with_footer, f"{page.name} does not end with the licences"
    for source in book.LICENSE_FILES:
        assert (built / f"{source.name}.txt").read_bytes() == source.read_bytes(), source.name


def test_links_between_notebooks_become_links_between_pages(built: Path) -> None:
    seed_map = (built / "seed_map.html").read_text(encoding="utf-8")
    assert ".ipynb" not in "".join(LOCAL_LINK.findall(seed_map)[0]) and re.search(r'href="\d{2}_\w+\.html#', seed_map)


def _folding_notebook() -> nbformat.NotebookNode:
    """Rule, a folded history with a folded subsection, then the next section; a fence hides a fake heading."""
    cells = [
        nbformat.v4.new_markdown_cell("## The rule"),
        nbformat.v4.new_code_cell("rule_value = 1"),
        nbformat.v4.new_markdown_cell("### History: how it was", metadata={book.FOLDED: True}),
        nbformat.v4.new_code_cell("history_value = 1"),
        nbformat.v4.new_markdown_cell("```\n## not a heading\n```"),
        nbformat.v4.new_markdown_cell("#### Deeper", metadata={book.FOLDED: True}),
        nbformat.v4.new_code_cell("deeper_value = 1"),
        nbformat.v4.new_markdown_cell("### Back to the rule\n\ntext"),
        nbformat.v4.new_markdown_cell("## Empty fold", metadata={book.FOLDED: True}),
        nbformat.v4.new_markdown_cell("## Next"),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def test_a_folded_heading_folds_its_section_up_to_the_next_heading_of_its_level() -> None:
    assert book.folded_sections(_folding_notebook()) == [(3, 6), (6, 6)]


def test_the_book_renders_a_folded_section_closed_under_its_heading(tmp_path: Path) -> None:
    path = tmp_path / "99_fold.ipynb"
    nbformat.write(_folding_notebook(), path)
    page = book._render_notebook(path)
    folded = re.findall(r'<details class="book-fold"><summary>([^<]*)</summary>', page)
    assert folded == ["Show this part (4 cells)", "Show this part (1 cell)"] and "<details open" not in page
    opened, closed = page.index("Show this part (4 cells)"), page.rindex("</details>")
    assert opened < page.index("history_value") < page.index("deeper_value") < closed < page.index("Back to the rule")
    assert page.index('<h3 id="History:-how-it-was"') < opened < page.index('<h4 id="Deeper"')  # the heading itself stays in sight


@pytest.mark.parametrize("path", runner.notebooks(), ids=[path.stem for path in runner.notebooks()])
def test_every_folded_heading_in_a_chapter_folds_something(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    headings = [index for index, cell in enumerate(notebook.cells) if cell.metadata.get(book.FOLDED)]
    assert sorted(first - 1 for first, _ in book.folded_sections(notebook)) == headings, "a folded heading with no cells under it"


def _tiny_chapters(notebooks: Path) -> list[Path]:
    """Two small chapters, ``00_first`` and ``01_second``, each a title, a summary and a code cell with its output."""
    notebooks.mkdir(parents=True, exist_ok=True)
    for name in ("00_first", "01_second"):
        code = nbformat.v4.new_code_cell("print(6 * 7)", execution_count=1)
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
        cells = [nbformat.v4.new_markdown_cell(f"# {name}\n\nWhat {name} teaches."), code]
        nbformat.write(nbformat.v4.new_notebook(cells=cells), notebooks / f"{name}.ipynb")
    return runner.notebooks(notebooks)


def _files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_good_build_replaces_the_previous_book_whole(tmp_path: Path) -> None:
    out = tmp_path / "build" / "book"
    out.mkdir(parents=True)
    (out / "99_removed_chapter.html").write_text("a page of the previous book")
    killed_build = out.parent / ".book.partial-999999999-abc"  # a build killed midway (no such process id)
    running_build = out.parent / f".book.partial-{os.getpid()}-abc"  # another build still at work
    for folder in (killed_build, running_build):
        folder.mkdir()
        (folder / "index.html").write_text("half a book")
    paths = _tiny_chapters(tmp_path / "notebooks")
    index = book.build([book.Chapter(path) for path in paths], out, notebooks_dir=tmp_path / "notebooks")
    pages = ["00_first.html", "01_second.html", "LICENSE-docs.txt", "LICENSE.txt", "index.html", "teaching.html"]
    assert index == out / "index.html" and sorted(_files(out)) == pages
    assert "01_second" in index.read_text(encoding="utf-8") and "42" in (out / "01_second.html").read_text(encoding="utf-8")
    assert sorted(path.name for path in out.parent.iterdir()) == sorted(["book", running_build.name])  # its own temporary folder is gone
    assert out.stat().st_mode & 0o755 == 0o755  # readable by a web server, like a folder made with mkdir


def test_a_failing_build_keeps_the_previous_book_byte_for_byte_and_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notebook truncated to invalid JSON: ``book`` exits 3 with one line naming it; ``build/book`` is the previous book."""
    from helpers.workbook.__main__ import BOOK_EXIT_CODE, main

    notebooks = tmp_path / "notebooks"
    paths = _tiny_chapters(notebooks)
    monkeypatch.setattr(runner, "NOTEBOOKS_DIR", notebooks)
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    assert main(["book"]) == 0
    previous = _files(tmp_path / "build" / "book")
    capsys.readouterr()

    damaged = paths[1]
    damaged.write_text(damaged.read_text(encoding="utf-8")[:200], encoding="utf-8")  # what an editor killed mid-save leaves
    assert main(["book"]) == BOOK_EXIT_CODE == 3
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert "usage:" not in err and out == ""
    assert "notebooks/01_second.ipynb: NotJSONError: Notebook does not appear to be JSON" in line and "previous one is kept" in line, line
    assert _files(tmp_path / "build" / "book") == previous
    assert sorted(path.name for path in (tmp_path / "build").iterdir()) == ["book"]  # the partial build is gone


def test_the_teachers_page_is_the_readme_section_and_the_index_links_it(tmp_path: Path) -> None:
    """Issue 22, item 6: one home for the teachers' text (the README), rendered as a page of the book."""
    out = tmp_path / "book"
    book.build([book.Chapter(path) for path in _tiny_chapters(tmp_path / "notebooks")], out, notebooks_dir=tmp_path / "notebooks")
    page = (out / "teaching.html").read_text(encoding="utf-8")
    assert '<h2 id="Teaching-a-course-(nbgrader)">Teaching a course (nbgrader)' in page and "make grade" in page and "Adding an exercise" in page
    assert "## The capstone command" not in book.readme_section("Teaching a course (nbgrader)")
    assert '<a href="teaching.html">Teaching a course (nbgrader)</a>' in (out / "index.html").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="no section '## Nowhere'"):
        book.readme_section("Nowhere")
