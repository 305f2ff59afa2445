"""The workbook as a book: Sphinx with MyST-NB and sphinx-book-theme, in English and in Chinese, offline.

:func:`build_book` stages the sources in a temporary folder (the executed or stored chapters, the seed map, the
glossary, the teachers' page (``notebooks/teaching.md``), ``book_sphinx/index.md`` with its table of contents, and
how each chapter's run went) and runs ``sphinx-build`` once per language of
:data:`helpers.workbook.editions.LANGUAGES`, with warnings as errors, into ``<book>/en/`` and
``<book>/zh_CN/``; ``<book>/index.html`` leads to the English edition. The configuration is
``book_sphinx/conf.py``; what depends on the build (run status, language switch, folded sections,
footer) is :mod:`helpers.workbook.sphinx_ext`; translations are ``notebooks/locales/zh_CN/LC_MESSAGES/*.po``
(:mod:`helpers.workbook.catalogs`). The previous book is replaced only once both editions are built. Reading the
Markdown (headings, folded sections) is :mod:`helpers.workbook.markdown`'s job.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.errors import first_line
from helpers.failures import CommandError
from helpers.paths import display_path, repo_root
from helpers.processes import dead_owners, owned_prefix
from helpers.workbook.editions import EXTRA, LANGUAGES, RUN_STATUS, STAGED_TRANSLATIONS, TRANSLATIONS_DIR
from helpers.workbook.executor import is_appendix

#: Pages besides the chapters, built from Markdown files in ``notebooks/`` when present (each titled by its own first heading).
EXTRA_PAGES = ("seed_map.md", "glossary.md")
#: The folder of images the chapters show as ``![alt](images/NAME.png)``, copied beside them (the dashboard's screenshots).
IMAGES = "images"
#: Pages for teachers, built from a Markdown file of the repository, their one home: (the file, the page's source file in
#: the book). Not in :data:`EXTRA_PAGES`, so that neither the students' release nor the translated copies carry them.
REPOSITORY_PAGES = (("notebooks/teaching.md", "teaching.md"),)
#: Files of the repository a chapter shows whole, with MyST's ``literalinclude`` directive (``/helpers/resume_lab.py``: a path
#: from the book's sources, where they are staged at the same place). A stored output never holds them, so they cannot go stale.
SHOWN_SOURCES = ("helpers/resume_lab.py", "helpers/train/step.py", "helpers/train/calls.py")
#: The Sphinx configuration folder (``conf.py``, ``index.md``, templates).
CONF_DIR = Path(__file__).resolve().parent / "book_sphinx"
#: The repository's licence files, copied into each edition as ``<name>.txt``: a browser shows a ``.txt`` file as text,
#: from ``file://`` and from a web server alike, where a file with no suffix may be offered as a download.
LICENSE_FILES = (repo_root() / "LICENSE", repo_root() / "LICENSE-docs")


@dataclass(frozen=True)
class Chapter:
    """One notebook of the book, with the outcome of the run that executed it (None: stored outputs)."""

    notebook: Path
    ok: bool | None = None
    seconds: float | None = None


class BookError(CommandError):
    """A source of the book could not be read or rendered; the message names the file. The previous book is kept."""

    exit_status = 3
    meaning = "the book could not be built (the previous book is kept)"

    def line(self) -> str:
        return f"the book could not be built, the previous one is kept: {self}"


@contextlib.contextmanager
def _naming(source: Path) -> Iterator[None]:
    """Turn any error while reading or rendering ``source`` into :class:`BookError` naming it, with the error's first line."""
    try:
        yield
    except Exception as error:  # unreadable, not JSON, not a notebook nbconvert can render: each says which file
        raise BookError(f"{display_path(source, keep_outside=True)}: {type(error).__name__}: {first_line(str(error))}") from error


def _temporary_folder(target: Path, kind: str) -> Path:
    """A new empty folder beside ``target``, ``.book.<kind>-<pid>-<random>``: in the same file system, and named after its process."""
    return Path(tempfile.mkdtemp(prefix=owned_prefix(f".{target.name}.{kind}-"), dir=target.parent))


def _remove_leftovers(target: Path) -> None:
    """Delete the temporary folders beside ``target`` of builds whose process is gone (killed mid-build); a running build's stay."""
    for folder in dead_owners(target.parent, re.escape(f".{target.name}.") + r"[a-z]+-"):
        shutil.rmtree(folder, ignore_errors=True)


def _replace_folder(target: Path, replacement: Path) -> None:
    """Put ``replacement`` where ``target`` is (two renames in one file system), then delete the old ``target``."""
    if not target.exists():
        replacement.rename(target)
        return
    retired = _temporary_folder(target, "old")
    target.rename(retired / target.name)
    replacement.rename(target)
    shutil.rmtree(retired)


def stage(chapters: Sequence[Chapter], folder: Path, *, notebooks_dir: Path) -> None:
    """Write the book's sources into ``folder``: the chapters, the extra pages, the teachers' page, the appendices, the index, the run status."""
    folder.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    appendices: list[str] = []
    for chapter in chapters:
        with _naming(chapter.notebook):
            nbformat.validate(nbformat.read(chapter.notebook, as_version=4))
            shutil.copyfile(chapter.notebook, folder / f"{chapter.notebook.stem}.ipynb")
        (appendices if is_appendix(chapter.notebook) else names).append(chapter.notebook.stem)
    for name in EXTRA_PAGES:
        if (notebooks_dir / name).is_file():
            shutil.copyfile(notebooks_dir / name, folder / name)
            names.append(Path(name).stem)
    if (notebooks_dir / IMAGES).is_dir():  # relative image paths resolve in the staged copy as in notebooks/
        shutil.copytree(notebooks_dir / IMAGES, folder / IMAGES, dirs_exist_ok=True)
    for file_name, page in REPOSITORY_PAGES:
        with _naming(repo_root() / file_name):
            shutil.copyfile(repo_root() / file_name, folder / page)
        names.append(Path(page).stem)
    for shown in SHOWN_SOURCES:
        with _naming(repo_root() / shown):
            (folder / shown).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo_root() / shown, folder / shown)
    names += appendices  # after the seed map, the glossary and the teachers' page: the book's last pages
    toctree = "\n".join(["", "```{toctree}", ":hidden:", ":maxdepth: 1", "", *names, "```", ""])
    (folder / "index.md").write_text((CONF_DIR / "index.md").read_text(encoding="utf-8") + toctree, encoding="utf-8")
    statuses = {chapter.notebook.stem: {"ok": chapter.ok, "seconds": chapter.seconds} for chapter in chapters}
    (folder / RUN_STATUS).write_text(json.dumps(statuses, indent=1), encoding="utf-8")
    translations = notebooks_dir / TRANSLATIONS_DIR.name
    if translations.is_dir():  # Sphinx compiles each .po file into a .mo file beside it: in the copy, not in the repository
        shutil.copytree(translations, folder / STAGED_TRANSLATIONS, ignore=shutil.ignore_patterns("*.mo"), dirs_exist_ok=True)
    (folder / EXTRA).mkdir(exist_ok=True)
    for source in LICENSE_FILES:
        with _naming(source):
            shutil.copyfile(source, folder / EXTRA / f"{source.name}.txt")


def sphinx(builder: str, sources: Path, out_dir: Path, *, language: str = "en", doctrees: Path | None = None) -> None:
    """Run ``sphinx-build -b <builder>`` on staged ``sources`` with warnings as errors; :class:`BookError` with its warnings if it fails."""
    command = [
        sys.executable, "-m", "sphinx", "-b", builder, "-q", "-W", "--keep-going", "-c", str(CONF_DIR),
        "-D", f"language={language}", "-d", str(doctrees or sources.parent / f".doctrees-{builder}-{language}"),
        str(sources), str(out_dir),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        problems = [line for line in lines if "WARNING" in line or "ERROR" in line] or lines[-5:]
        shown = "; ".join(line.replace(str(sources) + os.sep, "") for line in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise BookError(f"sphinx-build -b {builder} ({language}) failed: {shown}{more}")


def _landing_page() -> str:
    """``<book>/index.html``: straight on to the English edition, with a link to each."""
    links = " · ".join(f'<a href="{language}/index.html" hreflang="{tag}">{label}</a>' for language, label, tag in LANGUAGES)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0; url={LANGUAGES[0][0]}/index.html">'
        f"<title>TensorFlow 2 training utilities</title></head><body><p>{links}</p></body></html>\n"
    )


def build_book(chapters: Sequence[Chapter], out_dir: Path, *, notebooks_dir: Path) -> Path:
    """Write the book into ``out_dir`` (one folder per language), replacing the book there only once it is all written.

    The sources are staged and the editions built in a temporary folder beside ``out_dir``
    (``.book.partial-*``), so a source that fails raises :class:`BookError` naming it and leaves the
    previous book exactly as it was. Such folders left by a build that was killed are deleted when the
    next build starts. Returns the landing page's path.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(out_dir)
    partial = _temporary_folder(out_dir, "partial")
    partial.chmod(0o755)  # mkdtemp's folder is private (0o700); the book is meant to be served and shared
    try:
        sources, pages = partial / "sources", partial / "pages"
        stage(chapters, sources, notebooks_dir=notebooks_dir)
        for language, _, _ in LANGUAGES:
            sphinx("html", sources, pages / language, language=language, doctrees=partial / f"doctrees-{language}")
            shutil.rmtree(pages / language / ".doctrees", ignore_errors=True)
            (pages / language / ".buildinfo").unlink(missing_ok=True)
        shutil.rmtree(pages / "jupyter_execute", ignore_errors=True)  # MyST-NB's copies of the notebooks; the pages hold what they need
        (pages / "index.html").write_text(_landing_page(), encoding="utf-8")
        _replace_folder(out_dir, pages)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return out_dir / "index.html"
