"""What the book costs: the time and size of each edition, built from the stored notebooks.

    .venv/bin/python -m benchmarks.book

Stages the sources as :func:`helpers.workbook.book.build_book` does, runs ``sphinx-build`` once per language
(a fresh build each, as ``make book`` runs it), and prints one line per edition: its build time, its size
on disk and its number of files, then the whole book's. Absolute numbers, on this machine, that day; the
tests prove what the book holds, this only measures.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.measure import machine
from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook import book, executor
from helpers.workbook.editions import LANGUAGES


def size(folder: Path) -> tuple[int, int]:
    """Bytes and number of files under ``folder``."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    return sum(path.stat().st_size for path in files), len(files)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m benchmarks.book", description=__doc__.splitlines()[0]).parse_args(argv)
    print(machine())
    with tempfile.TemporaryDirectory(prefix="workbook-book-") as folder:
        root = Path(folder)
        started = time.perf_counter()
        book.stage([book.Chapter(path) for path in executor.notebooks()], root / "sources", notebooks_dir=NOTEBOOKS_DIR)
        print(f"stage the sources ({len(executor.notebooks())} chapters and 4 pages): {time.perf_counter() - started:.1f} s")
        print("| edition | build | size | files |\n|---|---|---|---|")
        total_seconds, total_bytes, total_files = 0.0, 0, 0
        for language, label, _ in LANGUAGES:
            started = time.perf_counter()
            book.sphinx("html", root / "sources", root / "pages" / language, language=language, doctrees=root / f"doctrees-{language}")
            seconds = time.perf_counter() - started
            nbytes, files = size(root / "pages" / language)
            total_seconds, total_bytes, total_files = total_seconds + seconds, total_bytes + nbytes, total_files + files
            print(f"| {language} ({label}) | {seconds:.1f} s | {nbytes / 1e6:.1f} MB | {files} |")
        print(f"| **both** | **{total_seconds:.1f} s** | **{total_bytes / 1e6:.1f} MB** | **{total_files}** |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
