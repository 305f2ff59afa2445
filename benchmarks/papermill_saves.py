"""What papermill's save at every cell costs a chapter: the same chapter run with it and without it, alternately.

    python -m benchmarks.papermill_saves [--notebooks 02 03] [--repeats 2]

By default papermill writes the whole executed notebook at the start and at the end of every cell
(``request_save_on_cell_execute=True``), so a chapter of 140 cells is serialised, validated and written about
280 times. ``helpers.workbook.executor.execute`` turns that off: the notebook is written once, at the end (and when
a cell fails, with its error). Both sides run the stored chapter at its defaults, in its folder, with the build
folder in a scratch directory; the table gives each side's median and the ratio per repetition (without ÷ with).
Not part of ``make bench``; ``benchmarks/README.md`` has a published run. ``--quick`` times a one-cell notebook
that never imports TensorFlow, to check the script in seconds.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.measure import TIMES, Comparison, compare, markdown_table, seconds
from benchmarks.notebooks import QUICK_NOTEBOOK_SOURCE, environment_variable, one_cell_notebook

DEFAULT_NOTEBOOKS = ("02", "03")


def time_chapter(notebook: Path, *, save_every_cell: bool, scratch: Path) -> float:
    """Wall seconds of one papermill run of ``notebook`` (build folder under ``scratch``), saving at every cell or not."""
    import papermill

    def run() -> None:
        with environment_variable("WORKBOOK_BUILD_DIR", str(scratch / "build")):
            papermill.execute_notebook(
                str(notebook),
                str(scratch / "executed.ipynb"),
                cwd=str(notebook.parent),
                progress_bar=False,
                log_output=False,
                request_save_on_cell_execute=save_every_cell,
            )

    return seconds(run)


def measure(notebooks: Sequence[Path], repeats: int, scratch: Path) -> list[Comparison]:
    """One comparison per notebook: saving at every cell (the baseline) against one save at the end."""
    return [
        compare(
            "papermill saves",
            notebook.stem,
            {
                "a save at every cell": lambda notebook=notebook: time_chapter(notebook, save_every_cell=True, scratch=scratch),  # type: ignore[misc]
                "one save at the end": lambda notebook=notebook: time_chapter(notebook, save_every_cell=False, scratch=scratch),  # type: ignore[misc]
            },
            baseline="a save at every cell",
            unit="s",
            repeats=repeats,
            ratio_kind=TIMES,
            ratio_label="× with saves",
            warmup=False,
        )
        for notebook in notebooks
    ]


def main(argv: Sequence[str] | None = None) -> int:
    from helpers.workbook import executor

    parser = argparse.ArgumentParser(prog="python -m benchmarks.papermill_saves", description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", nargs="+", default=list(DEFAULT_NOTEBOOKS), help="chapters by number or name (default: 02 03)")
    parser.add_argument("--repeats", type=int, default=2, help="repetitions per side (default 2)")
    parser.add_argument("--quick", action="store_true", help="a one-cell notebook without TensorFlow: checks the script")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    with tempfile.TemporaryDirectory(prefix="papermill-saves-") as folder:
        scratch = Path(folder)
        if args.quick:
            notebooks = [one_cell_notebook(scratch / "sources" / "00_tiny.ipynb", QUICK_NOTEBOOK_SOURCE)]
        else:
            notebooks = executor.select(executor.notebooks(), args.notebooks)
        print(markdown_table(measure(notebooks, args.repeats, scratch)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
