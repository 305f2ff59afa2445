"""helpers.workbook.book: the book in English and Chinese (Sphinx, MyST-NB), built from the stored notebooks (no execution)."""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

from helpers.paths import NOTEBOOKS_DIR, repo_root
from helpers.workbook import book, executor, translated_copies
from helpers.workbook.editions import BOOK_TOGGLE, CHECK, FOLDED, LANGUAGES, text
from helpers.workbook.markdown import folded_sections
from tests.conftest import BOOK_INPUTS

EXTERNAL_RESOURCE = re.compile(r"<(script|link|img|iframe|source|video|audio)\b[^>]*\b(src|href)=\"(https?:)?//", re.IGNORECASE)
CSS_URL = re.compile(r"url\(\s*['\"]?(?!data:)([^)'\"]+)", re.IGNORECASE)
LOCAL_LINK = re.compile(r'(?:href|src)="(?!https?:|mailto:|#|data:)([^"#?]+)(?:\?[^"#]*)?(#[^"]*)?"')


#: What a notebook saved by JupyterLab says of its language (MyST-NB highlights code cells with it).
PYTHON = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}, "language_info": {"name": "python"}}
EDITIONS = [language for language, _, _ in LANGUAGES]


def _plain(fragment: str) -> str:
    """HTML as the text a reader sees."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _article(page: Path) -> str:
    """The page's article: what the source says, without the sidebars and the page's metadata."""
    content = page.read_text(encoding="utf-8")
    return content[content.index("<article") : content.index("</article>")]


def _pages(edition: Path) -> list[Path]:
    return sorted(path for path in edition.glob("*.html") if path.name not in {"genindex.html", "search.html"})


@pytest.mark.parametrize("language", EDITIONS)
def test_the_index_lists_every_chapter_in_order_with_its_run(built_book: Path, language: str) -> None:
    index = (built_book / language / "index.html").read_text(encoding="utf-8")
    table = index[index.index('class="workbook-chapters'):index.index("</table>")]
    assert re.findall(r'href="(\d{2}_\w+\.html)"', table) == [f"{path.stem}.html" for path in executor.notebooks()]
    for page, shown in re.findall(r'href="(\d{2}_\w+\.html)">(.*?)</a>', table):  # each title whole, code spans included
        heading = re.search(r"<h1>(.*?)<a class=\"headerlink\"", _article(built_book / language / page), re.DOTALL)
        assert heading and _plain(shown) == _plain(heading.group(1)), (page, _plain(shown))
    ok, failed = text(language, "ok", seconds=1.5), text(language, "failed", seconds=2.0)  # the run built_book shows (tests/conftest.py)
    assert table.count(ok) == len(executor.notebooks()) - 1 and table.count(failed) == 1
    others = re.findall(r'href="(\w+)\.html"', index[index.index("workbook-other-pages"):])
    assert others[:3] == ["seed_map", "glossary", "teaching"]


def test_the_landing_page_leads_to_the_english_edition_and_links_both(built_book: Path) -> None:
    landing = (built_book / "index.html").read_text(encoding="utf-8")
    assert 'url=en/index.html"' in landing and 'href="zh_CN/index.html"' in landing
    assert sorted(path.name for path in built_book.iterdir()) == ["en", "index.html", "zh_CN"]


@pytest.mark.parametrize("language", EDITIONS)
def test_pages_are_complete_offline_and_every_link_resolves(built_book: Path, language: str) -> None:
    edition = built_book / language
    pages = _pages(edition)
    expected = {f"{path.stem}.html" for path in executor.notebooks()} | {"index.html", "seed_map.html", "glossary.html", "teaching.html"}
    assert {page.name for page in pages} == expected
    for page in pages + [edition / "search.html"]:
        content = page.read_text(encoding="utf-8")
        assert not EXTERNAL_RESOURCE.search(content), f"{page.name} loads {EXTERNAL_RESOURCE.search(content).group(0)}"
        for target, anchor in LOCAL_LINK.findall(content):
            resolved = (page.parent / unquote(target)).resolve()
            assert resolved.is_file(), f"{language}/{page.name} links to missing {target}"
            if anchor and resolved.suffix == ".html":
                # compared percent-decoded, as a browser matches a fragment with an id
                ids = {unquote(html.unescape(found)) for found in re.findall(r'id="([^"]+)"', resolved.read_text(encoding="utf-8"))}
                assert unquote(anchor[1:]) in ids, f"{language}/{page.name} links to {target}{anchor}, which has no such id"
    for css in edition.glob("_static/**/*.css"):
        for url in CSS_URL.findall(css.read_text(encoding="utf-8", errors="replace")):
            assert not url.startswith(("http:", "https:", "//")), f"{css.name} loads {url}"


@pytest.mark.parametrize("language", EDITIONS)
def test_a_chapter_shows_text_code_outputs_figures_closed_solutions_and_its_download(built_book: Path, language: str) -> None:
    edition = built_book / language
    chapter = (edition / "08_capstone.html").read_text(encoding="utf-8")
    stored = nbformat.read(NOTEBOOKS_DIR / "08_capstone.ipynb", as_version=4)
    solutions = [cell for cell in stored.cells if "solution" in cell.metadata.get("tags", [])]
    assert "quiet_tensorflow_logs" in chapter and 'class="highlight' in chapter  # highlighted code
    assert "finished at step" in chapter  # an output
    figures = re.findall(r'<img[^>]+src="(_images/[^"]+\.png)"', chapter)
    assert figures and all((edition / figure).is_file() for figure in figures)
    assert chapter.count("<details><summary>") == len(solutions) and "<details open" not in chapter  # solutions stay closed
    assert (edition / "_sources" / "08_capstone.ipynb").read_bytes() == (NOTEBOOKS_DIR / "08_capstone.ipynb").read_bytes()
    assert 'href="_sources/08_capstone.ipynb"' in chapter  # the download button
    assert "copybutton.js" in chapter and (edition / "_static" / "copybutton.js").is_file()
    assert 'data-mode="dark"' in chapter or "theme-switch-button" in chapter  # the light/dark switch


@pytest.mark.parametrize("language", EDITIONS)
def test_a_file_a_chapter_shows_whole_is_highlighted_from_the_repository(built_book: Path, language: str) -> None:
    """05 shows ``helpers/resume_lab.py`` with ``literalinclude``: the file as it is today, never a stored output that could go stale."""
    page = (built_book / language / "05_checkpoints.html").read_text(encoding="utf-8")
    assert book.SHOWN_SOURCES[0] == "helpers/resume_lab.py" and set(book.SHOWN_SOURCES) <= set(BOOK_INPUTS)  # an edit rebuilds the test book
    for name in re.findall(r"^def (\w+)", (repo_root() / book.SHOWN_SOURCES[0]).read_text(encoding="utf-8"), re.MULTILINE):
        assert f'<span class="k">def</span><span class="w"> </span><span class="nf">{name}</span>' in page, name


@pytest.mark.parametrize("language", EDITIONS)
def test_every_page_links_the_same_page_in_the_other_edition(built_book: Path, language: str) -> None:
    other = next(name for name in EDITIONS if name != language)
    for page in _pages(built_book / language):
        content = page.read_text(encoding="utf-8")
        assert f'href="../{other}/{page.name}"' in content, f"{language}/{page.name} has no switch to {other}"
        assert (built_book / other / page.name).is_file()


@pytest.mark.parametrize("language", EDITIONS)
def test_every_page_ends_with_the_licences_and_their_links_open_them_in_the_book(built_book: Path, language: str) -> None:
    footer = text(language, "footer")
    for page in _pages(built_book / language):
        assert footer in page.read_text(encoding="utf-8"), f"{language}/{page.name} lacks the licence line"
    for source in book.LICENSE_FILES:
        assert (built_book / language / f"{source.name}.txt").read_bytes() == source.read_bytes(), source.name


def test_the_chinese_edition_shows_the_translations_and_keeps_the_code_and_outputs(built_book: Path) -> None:
    messages = translated_copies.translated_messages("04_learning_rate_schedules")
    title = "04 · Learning-rate schedules"
    english, chinese = ((built_book / language / "04_learning_rate_schedules.html").read_text(encoding="utf-8") for language in EDITIONS)
    if title in messages:
        assert html.escape(messages[title]) in chinese and f"<h1>{title}" not in chinese.replace("<span", "")
    code = re.findall(r'<div class="highlight[^"]*"><pre>.*?</pre>', english, re.DOTALL)
    assert code and code == re.findall(r'<div class="highlight[^"]*"><pre>.*?</pre>', chinese, re.DOTALL)
    assert '<html lang="zh-CN"' in chinese or '<html lang="zh_CN"' in chinese
    cells = nbformat.read(NOTEBOOKS_DIR / "04_learning_rate_schedules.ipynb", as_version=4).cells
    alts = [alt for alt in (cell.metadata.get("mystnb", {}).get("image", {}).get("alt") for cell in cells) if alt]
    assert alts, "04 has figures with alt text"
    for alt in alts:  # each figure is described in the page's language
        assert f'alt="{html.escape(alt, quote=False)}"' in english and f'alt="{html.escape(messages[alt], quote=False)}"' in chinese, alt[:60]


def _search_index(edition: Path) -> dict[str, object]:
    content = (edition / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(content[content.index("(") + 1 : content.rindex(")")])


def _pages_found(index: dict[str, object], word: str) -> set[str]:
    """The pages whose text or headings hold ``word``, as the search page looks it up (a word of a heading is kept once, there)."""
    names = index["docnames"]
    assert isinstance(names, list)
    found: set[str] = set()
    for key in ("terms", "titleterms"):
        table = index[key]
        assert isinstance(table, dict)
        numbers = table.get(word, [])
        found |= {names[number] for number in (numbers if isinstance(numbers, list) else [numbers])}
    return found


def test_search_finds_a_term_in_each_language(built_book: Path) -> None:
    assert "04_learning_rate_schedules" in _pages_found(_search_index(built_book / "en"), "cosinedecay")
    # the glossary's Chinese terms are words of the Chinese search (jieba would cut 学习率 into 学习 + 率)
    chinese = _search_index(built_book / "zh_CN")
    assert {"04_learning_rate_schedules", "glossary"} <= _pages_found(chinese, "学习率")
    assert "05_checkpoints" in _pages_found(chinese, "检查点")


def _folding_notebook() -> nbformat.NotebookNode:
    """Rule, a folded history with a folded subsection, then the next section; a fence hides a fake heading."""
    cells = [
        nbformat.v4.new_markdown_cell("## The rule"),
        nbformat.v4.new_code_cell("rule_value = 1"),
        nbformat.v4.new_markdown_cell("### History: how it was", metadata={FOLDED: True}),
        nbformat.v4.new_code_cell("history_value = 1"),
        nbformat.v4.new_markdown_cell("```\n## not a heading\n```"),
        nbformat.v4.new_markdown_cell("#### Deeper", metadata={FOLDED: True}),
        nbformat.v4.new_code_cell("deeper_value = 1"),
        nbformat.v4.new_markdown_cell("### Back to the rule\n\ntext"),
        nbformat.v4.new_markdown_cell("## Empty fold", metadata={FOLDED: True}),
        nbformat.v4.new_markdown_cell("## Next"),
    ]
    return nbformat.v4.new_notebook(cells=cells, metadata=PYTHON)


def test_a_folded_heading_folds_its_section_up_to_the_next_heading_of_its_level() -> None:
    assert folded_sections(_folding_notebook()) == [(3, 6), (6, 6)]


@pytest.mark.parametrize("path", executor.notebooks(), ids=[path.stem for path in executor.notebooks()])
def test_every_folded_heading_in_a_chapter_folds_something(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    headings = [index for index, cell in enumerate(notebook.cells) if cell.metadata.get(FOLDED)]
    assert sorted(first - 1 for first, _ in folded_sections(notebook)) == headings, "a folded heading with no cells under it"


def _tiny_chapters(notebooks: Path) -> list[Path]:
    """Three small chapters: ``00_first`` and ``01_second``, each a title, a summary and a code cell with its output
    (``00_first`` then has a folded check cell; ``01_second`` ends with an error, as papermill leaves a chapter whose run
    failed), and ``02_fold``, the folds."""
    notebooks.mkdir(parents=True, exist_ok=True)
    for name in ("00_first", "01_second"):
        code = nbformat.v4.new_code_cell("print(6 * 7)", execution_count=1)
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
        cells = [nbformat.v4.new_markdown_cell(f"# {name}\n\nWhat {name} teaches."), code]
        if name == "00_first":
            check = nbformat.v4.new_code_cell("assert 6 * 7 == 42\nhelpers.checked()", execution_count=2)
            check.metadata = {"tags": [CHECK, BOOK_TOGGLE], "jupyter": {"source_hidden": True}}
            check.outputs = [nbformat.v4.new_output("stream", name="stdout", text="✓ 1 claim checked\n")]
            cells.append(check)
        if name == "01_second":
            failed = nbformat.v4.new_code_cell("raise RuntimeError('boom')", execution_count=2)
            failed.outputs = [nbformat.v4.new_output("error", ename="RuntimeError", evalue="boom", traceback=["RuntimeError: boom"])]
            cells.append(failed)
        nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=PYTHON), notebooks / f"{name}.ipynb")
    folds = _folding_notebook()
    folds.cells.insert(0, nbformat.v4.new_markdown_cell("# 02 · Folds\n\nWhat the folds teach."))
    nbformat.write(folds, notebooks / "02_fold.ipynb")
    return executor.notebooks(notebooks)


def _files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@dataclass(frozen=True)
class TinyBook:
    """The tiny chapters' book, built by ``python -m helpers.workbook book`` over a previous book and two builds' leftovers."""

    notebooks: Path  #: the chapters (:func:`_tiny_chapters`)
    out: Path  #: ``build/book``
    status: int  #: the command's exit status
    printed: str  #: what it printed
    running_build: Path  #: the temporary folder of another build, still at work: it must stay


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory: pytest.TempPathFactory) -> TinyBook:
    """The one good tiny build of this file (its tests only read it)."""
    from helpers.workbook.__main__ import main

    root = tmp_path_factory.mktemp("tiny")
    out = root / "build" / "book"
    out.mkdir(parents=True)
    (out / "99_removed_chapter.html").write_text("a page of the previous book")
    killed_build = out.parent / ".book.partial-999999999-abc"  # a build killed midway (no such process id)
    running_build = out.parent / f".book.partial-{os.getpid()}-abc"  # another build still at work
    for folder in (killed_build, running_build):
        folder.mkdir()
        (folder / "index.html").write_text("half a book")
    notebooks = root / "notebooks"
    _tiny_chapters(notebooks)
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(executor, "NOTEBOOKS_DIR", notebooks)
        patch.setenv("WORKBOOK_BUILD_DIR", str(root / "build"))
        status = main(["book"])
    return TinyBook(notebooks, out, status, printed.getvalue(), running_build)


def test_a_good_build_replaces_the_previous_book_whole(tiny_book: TinyBook) -> None:
    out = tiny_book.out
    assert tiny_book.status == 0 and tiny_book.printed.startswith("book: build/book/index.html ("), tiny_book.printed  # the landing page
    pages = ["00_first.html", "01_second.html", "LICENSE-docs.txt", "LICENSE.txt", "index.html", "teaching.html"]
    assert (out / "index.html").is_file() and not (out / "99_removed_chapter.html").exists()
    assert sorted(path.name for path in out.iterdir()) == ["en", "index.html", "zh_CN"]
    for language in EDITIONS:
        assert set(pages) <= {name.removeprefix(f"{language}/") for name in _files(out) if name.count("/") == 1}
        assert "01_second" in (out / language / "index.html").read_text(encoding="utf-8")
        second = (out / language / "01_second.html").read_text(encoding="utf-8")
        assert "42" in second and "RuntimeError" in second  # a chapter whose run failed is in the book, its error shown
    assert sorted(path.name for path in out.parent.iterdir()) == sorted(["book", tiny_book.running_build.name])  # its own temporary folder is gone
    assert out.stat().st_mode & 0o755 == 0o755  # readable by a web server, like a folder made with mkdir


def test_a_check_cell_shows_its_output_and_hides_its_code_behind_a_toggle_labelled_in_each_language(tiny_book: TinyBook) -> None:
    for language in EDITIONS:
        page = _article(tiny_book.out / language / "00_first.html")
        toggle = re.search(r"<details[^>]*>\s*<summary[^>]*>(.*?)</summary>(.*?)</details>", page, re.DOTALL)
        assert toggle and text(language, "show_check") in toggle.group(1) and "checked" in toggle.group(2), language
        assert "✓ 1 claim checked" in page[toggle.end() :], language  # the one line, in sight


def test_the_book_renders_a_folded_section_closed_under_its_heading(tiny_book: TinyBook) -> None:
    for language in EDITIONS:
        page = _article(tiny_book.out / language / "02_fold.html")
        folded = re.findall(r'<details class="workbook-fold"><summary>([^<]*)</summary>', page)
        assert folded == [text(language, "fold", count=4), text(language, "fold_one")] and "<details open" not in page
        opened, closed = page.index(folded[0]), page.rindex("</details>")
        assert opened < page.index("history_value") < page.index("deeper_value") < closed < page.index("Back to the rule")
        assert page.index('id="history-how-it-was"') < opened < page.index('id="deeper"')  # the heading itself stays in sight


def test_the_teachers_page_is_teaching_md_and_the_index_links_it(tiny_book: TinyBook) -> None:
    """Issue 22, item 6: one home for the teachers' text (``notebooks/teaching.md`` since issue 33), rendered as a page of the book."""
    page = _article(tiny_book.out / "en" / "teaching.html")
    assert "<h1>Teaching a course (nbgrader)<a" in page and "grade</span>" in page and "Adding an exercise" in page
    assert 'href="teaching.html"' in (tiny_book.out / "en" / "index.html").read_text(encoding="utf-8")


def test_the_teachers_page_is_staged_from_teaching_md_alone(tmp_path: Path) -> None:
    """The staged page is ``notebooks/teaching.md`` byte for byte, titled by its one ``#`` heading; the README is not a source of the book."""
    teaching = (NOTEBOOKS_DIR / "teaching.md").read_text(encoding="utf-8")
    assert teaching.startswith("# Teaching a course (nbgrader)\n") and "\n# " not in teaching
    book.stage([], tmp_path, notebooks_dir=tmp_path / "no-notebooks")
    assert (tmp_path / "teaching.md").read_text(encoding="utf-8") == teaching
    assert ("notebooks/teaching.md", "teaching.md") in book.REPOSITORY_PAGES and "README.md" not in {source for source, _ in book.REPOSITORY_PAGES}
    assert "teaching.md" not in book.EXTRA_PAGES  # so neither the students' release nor the translated copies carry it


def test_a_failing_build_keeps_the_previous_book_byte_for_byte_and_names_the_file(
    tiny_book: TinyBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notebook truncated to invalid JSON: ``book`` exits 3 with one line naming it; ``build/book`` is the previous book.

    The previous book is the tiny book, which ``book`` built from the same chapters; the failing build stops at the
    damaged file, before any ``sphinx-build``.
    """
    from helpers.workbook.__main__ import main

    notebooks = tmp_path / "notebooks"
    shutil.copytree(tiny_book.notebooks, notebooks)
    shutil.copytree(tiny_book.out, tmp_path / "build" / "book")
    monkeypatch.setattr(executor, "NOTEBOOKS_DIR", notebooks)
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    assert tiny_book.status == 0
    previous = _files(tmp_path / "build" / "book")

    damaged = notebooks / "01_second.ipynb"
    damaged.write_text(damaged.read_text(encoding="utf-8")[:200], encoding="utf-8")  # what an editor killed mid-save leaves
    assert main(["book"]) == book.BookError.exit_status == 3
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert "usage:" not in err and out == ""
    assert "notebooks/01_second.ipynb: NotJSONError: Notebook does not appear to be JSON" in line and "previous one is kept" in line, line
    assert _files(tmp_path / "build" / "book") == previous
    assert sorted(path.name for path in (tmp_path / "build").iterdir()) == ["book"]  # the partial build is gone


@dataclass(frozen=True)
class FailedBuild:
    """A build that ``sphinx-build`` refused: the error, and where the book would have gone."""

    error: book.BookError
    out: Path


@pytest.fixture(scope="module")
def failing_tiny_build(tmp_path_factory: pytest.TempPathFactory) -> FailedBuild:
    """The one failing tiny build of this file: ``01_second`` links to a heading of ``00_first`` that does not exist."""
    root = tmp_path_factory.mktemp("failing")
    paths = _tiny_chapters(root / "notebooks")
    notebook = nbformat.read(paths[1], as_version=4)
    notebook.cells[0].source += "\n\nSee [the first chapter](00_first.ipynb#No-such-heading)."
    nbformat.write(notebook, paths[1])
    with pytest.raises(book.BookError) as raised:
        book.build_book([book.Chapter(path) for path in paths], root / "book", notebooks_dir=root / "notebooks")
    return FailedBuild(raised.value, root / "book")


def test_a_link_that_resolves_nowhere_fails_the_build_and_names_it(failing_tiny_build: FailedBuild) -> None:
    """Warnings are errors: a link to a heading that does not exist (as JupyterLab would write it) stops the build."""
    assert re.search(r"01_second.*No-such-heading", str(failing_tiny_build.error)), failing_tiny_build.error
    assert not failing_tiny_build.out.exists()


def test_the_book_lists_an_appendix_last_after_its_other_pages(tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ["00_first", "01_second", "99_appendix"]:
        cells = [nbformat.v4.new_markdown_cell(f"# {name[:2]} · {name[3:]}\n\nWhat {name} holds.")]
        nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=PYTHON), notebooks / f"{name}.ipynb")
    (notebooks / "seed_map.md").write_text("# Seed map\n", encoding="utf-8")
    found = executor.notebooks(notebooks)
    assert [path.stem for path in found] == ["00_first", "01_second", "99_appendix"]
    assert [executor.is_appendix(path) for path in found] == [False, False, True]
    book.stage([book.Chapter(path) for path in found], tmp_path / "sources", notebooks_dir=notebooks)
    index = (tmp_path / "sources" / "index.md").read_text(encoding="utf-8")
    toctree = index[index.index("```{toctree}") :].splitlines()[4:-1]
    assert toctree == ["00_first", "01_second", "seed_map", "teaching", "99_appendix"]
    assert list(json.loads((tmp_path / "sources" / book.RUN_STATUS).read_text(encoding="utf-8"))) == ["00_first", "01_second", "99_appendix"]
