"""The workbook as a static HTML book that works offline: ``build/book/index.html`` and one page per chapter.

:func:`build` renders executed notebooks with nbconvert's own HTML exporter (its "lab" template,
minus the scripts it would fetch from a CDN; see ``book_template/index.html.j2``), plus the seed map
and the glossary, and writes an index with every chapter in order, what it teaches, and the status
and wall time of the run that produced it. Figures are embedded in the pages; links between
notebooks (``05_checkpoints.ipynb#anchor``) or to the seed map and glossary (``seed_map.md``) become
links between pages (``05_checkpoints.html#anchor``);
exercise solutions stay in their ``<details>`` element, closed until the reader opens them, and so does
the body of a section whose heading JupyterLab opens folded (:func:`folded_sections`). Every page ends
with one line naming the licences (:data:`FOOTER`), linking to copies of ``LICENSE`` and ``LICENSE-docs``
that each build puts beside the pages, so the links work offline.

nbconvert is chosen over a site generator because it is already pinned for the tests, renders
exactly what JupyterLab shows, and needs no theme or plugin download at build time.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.paths import display_path, repo_root

#: Pages besides the chapters, built from Markdown files in ``notebooks/`` when present.
EXTRA_PAGES = (("seed_map.md", "Seed map: every claim of the three source texts"), ("glossary.md", "Glossary (English / 中文)"))
#: Pages built from a section of the README, their one home: (the section's heading, the page's file name).
README_PAGES = (("Teaching a course (nbgrader)", "teaching.html"),)
_PAGE_LINK = re.compile(r'href="(\d{2}_[A-Za-z0-9_]+\.ipynb|' + "|".join(re.escape(name) for name, _ in EXTRA_PAGES) + r')(#[^"]*)?"')
_TEMPLATE_DIR = Path(__file__).resolve().parent / "book_template"
#: The repository's licence files, copied into the book as ``<name>.txt``: a browser shows a ``.txt`` file as text,
#: from ``file://`` and from a web server alike, where a file with no suffix may be offered as a download.
LICENSE_FILES = (repo_root() / "LICENSE", repo_root() / "LICENSE-docs")
#: The last line of every page: the licences, each linking to its file in the book's folder.
FOOTER = (
    '<footer class="book-licence">Code under the Apache License 2.0 (<a href="LICENSE.txt">LICENSE</a>); '
    'prose and figures under CC BY 4.0 (<a href="LICENSE-docs.txt">LICENSE-docs</a>).</footer>'
)
#: The cell metadata key with which JupyterLab stores a heading folded, and opens it folded.
FOLDED = "jp-MarkdownHeadingCollapsed"
_HEADING = re.compile(r"^(#{1,6})\s")


@dataclass(frozen=True)
class Chapter:
    """One notebook of the book, with the outcome of the run that executed it (None: stored outputs)."""

    notebook: Path
    ok: bool | None = None
    seconds: float | None = None

    @property
    def page(self) -> str:
        return f"{self.notebook.stem}.html"


def title_and_summary(notebook: nbformat.NotebookNode) -> tuple[str, str]:
    """The first cell's ``# title`` and its first paragraph, as plain text."""
    source = notebook.cells[0].source if notebook.cells and notebook.cells[0].cell_type == "markdown" else ""
    lines = source.strip().splitlines()
    title = lines[0].lstrip("#").strip() if lines else ""
    paragraphs = [block.strip() for block in "\n".join(lines[1:]).split("\n\n") if block.strip()]
    summary = " ".join(paragraphs[0].split()) if paragraphs else ""
    return title, summary


def _heading_levels(cell: nbformat.NotebookNode) -> list[int]:
    """The level of each Markdown heading in a cell (``## x`` is 2), outside fenced code."""
    if cell.cell_type != "markdown":
        return []
    levels, fenced = [], False
    for line in cell.source.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            levels.append(len(match.group(1)))
    return levels


def folded_sections(notebook: nbformat.NotebookNode) -> list[tuple[int, int]]:
    """``(first, last)`` cell indices of the body of each section whose heading is stored folded.

    A heading cell whose metadata holds ``jp-MarkdownHeadingCollapsed: true`` opens folded in
    JupyterLab, hiding every cell up to the next heading of the same or a higher level; the book
    hides the same cells in a closed ``<details>`` under the heading. A folded heading with nothing
    under it gives no section.
    """
    cells = notebook.cells
    sections = []
    for start, cell in enumerate(cells):
        levels = _heading_levels(cell)
        if not (levels and cell.metadata.get(FOLDED)):
            continue
        end = start + 1
        while end < len(cells) and not any(level <= levels[0] for level in _heading_levels(cells[end])):
            end += 1
        if end > start + 1:
            sections.append((start + 1, end - 1))
    return sections


def _mark_folds(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Tell the book template where each folded body opens and closes (nested folds close in order)."""
    for first, last in folded_sections(notebook):
        count = last - first + 1
        notebook.cells[first].metadata.setdefault("book_fold_opens", []).append(f"Show this part ({count} cell{'s' if count > 1 else ''})")
        notebook.cells[last].metadata["book_fold_closes"] = notebook.cells[last].metadata.get("book_fold_closes", 0) + 1
    return notebook


def _local_links(page: str) -> str:
    """Links to a notebook or to an extra page's Markdown file become links to its page in the book."""
    return _PAGE_LINK.sub(lambda match: f'href="{Path(match.group(1)).stem}.html{match.group(2) or ""}"', page)


def _render_notebook(path: Path) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="book_template", extra_template_basedirs=[str(_TEMPLATE_DIR.parent)])
    body, _ = exporter.from_notebook_node(_mark_folds(nbformat.read(path, as_version=4)), resources={"book_footer": FOOTER})
    return _local_links(body)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;vertical-align:top}"
        "code{background:#f3f3f3;padding:0 .2rem}.failed{color:#b00}footer{margin-top:2rem;font-size:.85rem;color:#555}</style></head>"
        f"<body><nav><a href=\"index.html\">&larr; all chapters</a></nav>\n{body}\n{FOOTER}\n</body></html>\n"
    )


def _render_markdown_page(path: Path, title: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return _page(title, _local_links(markdown2html_mistune(path.read_text(encoding="utf-8"))))


def readme_section(heading: str, readme: Path | None = None) -> str:
    """The README's section under ``## <heading>``, heading included, up to the next ``## `` heading (``ValueError`` if none)."""
    text = (repo_root() / "README.md" if readme is None else readme).read_text(encoding="utf-8")
    start = text.find(f"\n## {heading}\n")
    if start < 0:
        raise ValueError(f"README.md has no section '## {heading}'")
    end = text.find("\n## ", start + 1)
    return text[start + 1 : end if end >= 0 else len(text)].strip() + "\n"


def _status(chapter: Chapter) -> str:
    if chapter.ok is None:
        return "stored outputs"
    if chapter.ok:
        return f"ran ok in {chapter.seconds:.1f} s"
    return f'<span class="failed">FAILED after {chapter.seconds:.1f} s</span>'


class BookError(Exception):
    """A source of the book could not be read or rendered; the message names the file. The previous book is kept."""


@contextlib.contextmanager
def _naming(source: Path) -> Iterator[None]:
    """Turn any error while reading or rendering ``source`` into :class:`BookError` naming it, with the error's first line."""
    try:
        yield
    except Exception as error:  # unreadable, not JSON, not a notebook nbconvert can render: each says which file
        reason = (str(error).strip().splitlines() or [""])[0]
        raise BookError(f"{display_path(source, keep_outside=True)}: {type(error).__name__}: {reason}") from error


def _write_pages(chapters: Sequence[Chapter], out_dir: Path, notebooks_dir: Path) -> Path:
    """Write every page and the index into ``out_dir`` (an empty folder); return the index page's path."""
    rows = []
    for chapter in chapters:
        with _naming(chapter.notebook):
            page = _render_notebook(chapter.notebook)
            title, summary = title_and_summary(nbformat.read(chapter.notebook, as_version=4))
        (out_dir / chapter.page).write_text(page, encoding="utf-8")
        rows.append(
            f'<tr><td><a href="{chapter.page}">{html.escape(title)}</a></td>'
            f"<td>{html.escape(summary)}</td><td>{_status(chapter)}</td></tr>"
        )
    extras = []
    for name, title in EXTRA_PAGES:
        source = notebooks_dir / name
        if source.is_file():
            page = Path(name).with_suffix(".html").name
            with _naming(source):
                text = _render_markdown_page(source, title)
            (out_dir / page).write_text(text, encoding="utf-8")
            extras.append(f'<li><a href="{page}">{html.escape(title)}</a></li>')
    for heading, page in README_PAGES:
        from nbconvert.filters.markdown_mistune import markdown2html_mistune

        with _naming(repo_root() / "README.md"):
            body_html = markdown2html_mistune(readme_section(heading))
        (out_dir / page).write_text(_page(heading, body_html), encoding="utf-8")
        extras.append(f'<li><a href="{page}">{html.escape(heading)}</a></li>')
    body = (
        "<h1>TensorFlow 2 training utilities: a tested workbook</h1>"
        "<p>Each chapter is a notebook executed top to bottom; its page shows the code, every output and every "
        "figure of that run. Exercise solutions are collapsed: open them after you have tried. "
        f"Built {time.strftime('%Y-%m-%d %H:%M')}; the pages work offline from this folder.</p>"
        "<table><tr><th>chapter</th><th>what it teaches</th><th>run</th></tr>" + "".join(rows) + "</table>"
        + (f"<h2>Also</h2><ul>{''.join(extras)}</ul>" if extras else "")
    )
    index = out_dir / "index.html"
    index.write_text(_page("TensorFlow 2 training utilities", body).replace('<nav><a href="index.html">&larr; all chapters</a></nav>\n', ""), encoding="utf-8")
    return index


def _copy_license_files(out_dir: Path) -> None:
    """Put the licence files beside the pages, where every page's footer links to them."""
    for source in LICENSE_FILES:
        with _naming(source):
            shutil.copyfile(source, out_dir / f"{source.name}.txt")


def _temporary_folder(target: Path, kind: str) -> Path:
    """A new empty folder beside ``target``, ``.book.<kind>-<pid>-<random>``: in the same file system, and named after its process."""
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.{kind}-{os.getpid()}-", dir=target.parent))


def _remove_leftovers(target: Path) -> None:
    """Delete the temporary folders beside ``target`` of builds whose process is gone (killed mid-build); a running build's stay."""
    for folder in target.parent.glob(f".{target.name}.*-*-*"):
        pid = folder.name.removeprefix(f".{target.name}.").split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process, alive
        pass
    return True


def _replace_folder(target: Path, replacement: Path) -> None:
    """Put ``replacement`` where ``target`` is (two renames in one file system), then delete the old ``target``."""
    if not target.exists():
        replacement.rename(target)
        return
    retired = _temporary_folder(target, "old")
    target.rename(retired / target.name)
    replacement.rename(target)
    shutil.rmtree(retired)


def build(chapters: Sequence[Chapter], out_dir: Path, *, notebooks_dir: Path) -> Path:
    """Write the book into ``out_dir``, replacing the book there only once every page is written; return the index's path.

    The pages are built in a temporary folder beside ``out_dir`` (``.book.partial-*``), so a source that
    fails raises :class:`BookError` naming it and leaves the previous book exactly as it was. Such folders
    left by a build that was killed are deleted when the next build starts.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(out_dir)
    partial = _temporary_folder(out_dir, "partial")
    partial.chmod(0o755)  # mkdtemp's folder is private (0o700); the book is meant to be served and shared
    try:
        _write_pages(chapters, partial, notebooks_dir)
        _copy_license_files(partial)
        _replace_folder(out_dir, partial)
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # gone already once it replaced the book
    return out_dir / "index.html"
