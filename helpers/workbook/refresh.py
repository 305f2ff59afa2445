"""Storing the notebooks' clean outputs: :func:`refresh`, behind ``python -m helpers.workbook refresh [01 ...]`` (``make refresh``).

``refresh`` is for contributors: it executes each notebook from top to bottom into the build
area and, only if that run succeeds, replaces the stored notebook with the executed copy,
stripped of run-specific metadata (papermill timings, execution timestamps) and with each cell's
consecutive stream outputs merged into one (a flush between two prints would otherwise show as a
stray blank line), so that strict nbval validates against one clean run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import nbformat

from helpers.paths import build_root, display_path
from helpers.workbook.executor import execute

#: Cell-level metadata keys that change on every run and are removed from stored notebooks.
VOLATILE_CELL_KEYS = ("papermill", "execution", "ExecuteTime", "collapsed", "scrolled")
VOLATILE_NOTEBOOK_KEYS = ("papermill", "widgets")


def strip_volatile(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Prepare an executed notebook for storage, in place.

    Removes run-specific metadata (timings, timestamps) and merges each cell's consecutive
    stream outputs of the same name (nbconvert's ``CoalesceStreamsPreprocessor``; nbval merges
    streams the same way before comparing, so validation is unaffected).
    """
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    for key in VOLATILE_NOTEBOOK_KEYS:
        notebook.get("metadata", {}).pop(key, None)
    for cell in notebook.get("cells", []):
        metadata = cell.get("metadata", {})
        for key in VOLATILE_CELL_KEYS:
            metadata.pop(key, None)
    CoalesceStreamsPreprocessor().preprocess(notebook, {})
    return notebook


def refresh(paths: Sequence[Path], *, progress: bool = True) -> list[str]:
    """Execute each notebook into the build area and, if it ran, store it back cleaned (:func:`strip_volatile`); the names of those that failed.

    A notebook that fails is left as it was, and named on stderr with the cell that failed.
    """
    staging = build_root() / "refresh"
    failed = []
    for path in paths:
        print(f"refreshing {path.stem} ...", flush=True)
        result = execute(path, staging / path.name, {}, progress=progress)
        if not result.ok:
            print(f"  FAILED ({result.failure}); {path.name} left unchanged, see {display_path(result.output)}", file=sys.stderr)
            failed.append(path.stem)
            continue
        executed = nbformat.read(result.output, as_version=4)
        nbformat.write(strip_volatile(executed), path)
        print(f"  stored clean outputs ({result.seconds:.1f} s)")
    return failed
