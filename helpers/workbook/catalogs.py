"""The Chinese edition's gettext catalogs: reading them, and the pipeline that keeps them up to date with the English.

:func:`update` (``make translations``) extracts the book's messages from the stored notebooks and pages
(``sphinx-build -b gettext``) and merges them into ``notebooks/locales/zh_CN/LC_MESSAGES/*.po`` with
``sphinx-intl update``: a new message arrives untranslated, a changed one keeps its old translation marked fuzzy.
What needs a translator then is :mod:`helpers.workbook.translations`' job.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook.editions import TRANSLATED_LANGUAGE, TRANSLATIONS_DIR


def catalogs(language: str = TRANSLATED_LANGUAGE, locales: Path = TRANSLATIONS_DIR) -> list[Path]:
    """Every ``.po`` file of ``language``, sorted."""
    return sorted((locales / language / "LC_MESSAGES").glob("*.po"))


def read(path: Path) -> Catalog:
    """A ``.po`` file as babel's catalog."""
    with path.open("rb") as handle:
        return read_po(handle)


def extract(out_dir: Path) -> Path:
    """The book's messages as ``.pot`` files in ``out_dir``, extracted from the stored notebooks and pages."""
    from helpers.workbook import book, executor

    with tempfile.TemporaryDirectory(prefix="workbook-gettext-") as folder:
        sources = Path(folder) / "sources"
        book.stage([book.Chapter(path) for path in executor.notebooks()], sources, notebooks_dir=NOTEBOOKS_DIR)
        book.sphinx("gettext", sources, out_dir, doctrees=Path(folder) / "doctrees")
    return out_dir


def update(locales: Path = TRANSLATIONS_DIR, language: str = TRANSLATED_LANGUAGE) -> None:
    """Merge the messages of today's sources into the catalogs (sphinx-intl: new ones untranslated, changed ones fuzzy)."""
    with tempfile.TemporaryDirectory(prefix="workbook-pot-") as folder:
        pot = extract(Path(folder) / "pot")
        command = [sys.executable, "-m", "sphinx_intl", "update", "-p", str(pot), "-l", language, "-d", str(locales), "-w", "0", "--no-obsolete"]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode:
            raise RuntimeError(f"sphinx-intl update failed: {result.stderr.strip() or result.stdout.strip()}")
        for path in (locales / language / "LC_MESSAGES").glob("*.po"):
            if not (pot / f"{path.stem}.pot").is_file():  # a page that is gone
                path.unlink()
    shutil.rmtree(locales / language / "LC_MESSAGES" / "__pycache__", ignore_errors=True)
