"""Section "notebooks": each notebook's wall time against the floor of any notebook that uses TensorFlow.

The floor is a one-cell notebook that only quiets TensorFlow's logs and imports it: a kernel start,
papermill's overhead and the TensorFlow import, which every chapter pays before its first line of
teaching. Floor and notebook run alternately (the order rotates each repetition), each executed with
:func:`helpers.workbook.executor.execute` as ``make run`` does. ``WORKBOOK_BUILD_DIR`` points at a scratch folder
during the section, so what the notebooks write lands there (removed at the end), not in ``build/``;
the executed copies are kept in ``<out>/executed/`` for their per-cell timings.
nbformat and papermill are imported when the section runs, so ``--help`` stays instant.

A notebook that fails is timed up to the failure and marked ``(FAILED)`` (``details["failed"]`` holds
the failures); the section goes on with the next one, and the script exits with status 1 at the end.

Papermill stores each cell's wall time in the executed notebook as ``metadata.papermill.duration``;
the section reports the cells that dominate each notebook (at its defaults), with their first source line.
Each notebook also runs with ``FAST=True`` (the parameter of the test suite's second run of each chapter), so the
page shows what the fast mode saves.
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.measure import TIMES, Comparison, Options, compare, format_value, progress

SECTION = "notebooks"
#: One run per notebook and floor by default: the ten notebooks take minutes each round.
DEFAULT_REPEATS = 1
DOMINANT_CELLS = 3
FLOOR_SOURCE = "from helpers.environment import quiet_tensorflow_logs\n\nquiet_tensorflow_logs()\nimport tensorflow"
#: ``--quick``: a floor and a notebook that never import TensorFlow (the smoke test's kernels start in about a second).
QUICK_FLOOR_SOURCE = "import sys"
QUICK_NOTEBOOK_SOURCE = "total = sum(range(100_000))\nassert total == 4_999_950_000"


def one_cell_notebook(path: Path, source: str) -> Path:
    """Write a notebook with one code cell and a ``python3`` kernelspec to ``path``."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


@contextlib.contextmanager
def environment_variable(name: str, value: str) -> Iterator[None]:
    """Set an environment variable for the block (kernels started inside inherit it), then restore it."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def first_line(source: str, width: int = 80) -> str:
    """A cell's first non-blank source line, shortened to ``width`` characters."""
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def cell_durations(executed: Path) -> list[dict[str, Any]]:
    """Every code cell of an executed notebook: its execution count, papermill's ``duration`` (s) and first line."""
    import nbformat

    cells = nbformat.read(executed, as_version=4).cells
    found = []
    for cell in cells:
        duration = cell.get("metadata", {}).get("papermill", {}).get("duration")
        if cell.cell_type == "code" and duration is not None:
            found.append({"cell": cell.get("execution_count"), "seconds": float(duration), "first_line": first_line(cell.source)})
    return found


def dominant_cells(runs: list[list[dict[str, Any]]], count: int = DOMINANT_CELLS) -> list[dict[str, Any]]:
    """The ``count`` cells with the longest mean duration over ``runs`` (the cell lists of each repetition)."""
    if not runs:
        return []
    merged = []
    for index, cell in enumerate(runs[0]):
        values = [run[index]["seconds"] for run in runs if index < len(run)]
        merged.append({**cell, "seconds": round(sum(values) / len(values), 3)})
    return sorted(merged, key=lambda cell: cell["seconds"], reverse=True)[:count]


def targets(options: Options, scratch: Path) -> list[Path]:
    """The notebooks to time: the workbook's (``--notebooks`` selects), or with ``--quick`` one tiny generated notebook."""
    from helpers.workbook import executor

    if options.quick:
        return [one_cell_notebook(scratch / "sources" / "00_tiny.ipynb", QUICK_NOTEBOOK_SOURCE)]
    return executor.select(executor.notebooks(), list(options.notebooks) or None)


def run(options: Options) -> list[Comparison]:
    """Time every selected notebook at its defaults and with ``FAST=True`` against the floor, alternately."""
    from helpers.workbook import executor

    repeats = options.repeats_for(DEFAULT_REPEATS)
    executed_dir = options.out / "executed"
    results: list[Comparison] = []
    with options.scratch("notebooks") as scratch:
        floor_name = "floor: empty kernel" if options.quick else "floor: import tensorflow"
        floor = one_cell_notebook(scratch / "sources" / "floor.ipynb", QUICK_FLOOR_SOURCE if options.quick else FLOOR_SOURCE)
        paths = targets(options, scratch)

        def floor_side() -> float:
            result = executor.execute(floor, scratch / "floor-executed.ipynb", {}, progress=False, cwd=floor.parent)
            if not result.ok:
                raise RuntimeError(f"the floor notebook failed: {result.failure}")
            return result.seconds

        with environment_variable("WORKBOOK_BUILD_DIR", str(scratch / "build")):
            if not options.quick:  # not counted: the first kernel start meets cold caches (--quick saves this kernel start)
                progress(f"[{SECTION}] warming up the floor notebook (not counted)")
                floor_side()
            for number, path in enumerate(paths, start=1):
                progress(f"[{SECTION}] [{number}/{len(paths)}] {path.stem} vs the floor: {repeats} repetition(s)")
                runs: list[list[dict[str, Any]]] = []
                failures: list[str] = []

                def notebook_side(
                    path: Path = path, runs: list[list[dict[str, Any]]] = runs, failures: list[str] = failures, fast: bool = False
                ) -> float:
                    output = executed_dir / (f"{path.stem}-fast.ipynb" if fast else path.name)
                    result = executor.execute(path, output, {"FAST": True} if fast else {}, progress=False, cwd=path.parent)
                    if not result.ok:
                        failures.append(result.failure)
                    if result.output.is_file() and not fast:
                        runs.append(cell_durations(result.output))
                    return result.seconds

                sides: dict[str, Callable[[], float]] = {floor_name: floor_side, path.stem: notebook_side}
                if not options.quick:  # the tiny notebook has no FAST parameter
                    sides[f"{path.stem}, FAST=True"] = functools.partial(notebook_side, fast=True)
                comparison = compare(
                    SECTION,
                    path.stem,
                    sides,
                    baseline=floor_name,
                    unit="s",
                    repeats=repeats,
                    ratio_kind=TIMES,
                    ratio_label="× floor",
                    warmup=False,
                )
                fast_side = f"{path.stem}, FAST=True"
                if fast_side in comparison.samples:
                    pairs = zip(comparison.samples[fast_side], comparison.samples[path.stem], strict=True)
                    fast_ratio = statistics.median(fast / full for fast, full in pairs)
                    comparison.details["fast_over_default"] = round(fast_ratio, 3)
                    comparison.notes.append(f"FAST=True takes {fast_ratio:.2f}× the default run's time (median over repetitions)")
                slowest = dominant_cells(runs)
                comparison.details.update(
                    {
                        "dominant_cells": slowest,
                        "cells_total_s": round(sum(cell["seconds"] for cell in runs[-1]), 3) if runs else None,
                        "code_cells": len(runs[-1]) if runs else None,
                    }
                )
                if failures:
                    comparison.name = f"{path.stem} (FAILED)"
                    comparison.details["failed"] = failures
                    comparison.notes.append(f"FAILED in {len(failures)} of {repeats} run(s), first: {failures[0]}; its time runs up to the failure")
                    progress(f"    FAILED: {failures[0]}")
                shown = "; ".join(f"[{cell['cell']}] {format_value(cell['seconds'], 's')} `{cell['first_line'].replace('`', chr(39))}`" for cell in slowest)
                comparison.notes.append(f"slowest cells (papermill's `duration`, mean over runs): {shown}")
                progress(f"    {format_value(comparison.stats(path.stem).median, 's')} vs floor {format_value(comparison.stats(floor_name).median, 's')}")
                results.append(comparison)
    return results
