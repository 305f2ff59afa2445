"""Run the benchmarks and write ``results.json``, ``results.md`` and ``results.png``.

    python -m benchmarks.run [--quick] [--only loop instrumentation function checkpoint notebooks] [--repeats N] [--out DIR] [--notebooks 00 03]

Each section is a function ``run(options: Options) -> list[Comparison]`` (see
:mod:`benchmarks.measure`) registered in :data:`SECTIONS` under its name; ``--only`` picks sections by
name, in the registry's order. The default output folder is ``build/benchmarks``. ``--quick`` runs
tiny sizes with two repetitions (the smoke test in ``tests/test_benchmarks.py``); the numbers it
gives say nothing about speed. The exit status is 1 when a measured notebook failed (a section marks a
failed comparison with ``details["failed"]``; the results are written all the same).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import checkpoint, function, loop, notebooks
from benchmarks.measure import Comparison, Options, draw, machine, markdown_page, markdown_table, progress
from helpers.paths import build_root, display_path

Section = Callable[[Options], list[Comparison]]

#: The sections, in the order they run and appear on the page. Adding one is one line:
#: ``"name": module.run`` with ``run(options: Options) -> list[Comparison]``.
SECTIONS: dict[str, Section] = {
    "loop": loop.run_loop_vs_fit,
    "instrumentation": loop.run_instrumentation,
    "function": function.run,
    "checkpoint": checkpoint.run,
    "notebooks": notebooks.run,
}


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description="Measure the workbook's speed and cost claims as ratios of sides run alternately; write JSON, Markdown and a figure.",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and 2 repetitions: checks that the script works, measures nothing useful")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), metavar="SECTION", help=f"run only these sections (of: {', '.join(SECTIONS)})")
    parser.add_argument("--repeats", type=int, help="repetitions of every comparison (default: each section's own; 2 with --quick)")
    parser.add_argument("--out", type=Path, help="output folder (default: build/benchmarks)")
    parser.add_argument(
        "--notebooks", nargs="+", default=[], metavar="NOTEBOOK",
        help="the notebooks section times only these (number prefix or name; default: all); ignored with --quick, which times a tiny notebook",
    )
    return parser


def command(args: argparse.Namespace, out: Path) -> str:
    """The run's command line, for the page (the output folder shown relative to the repository when inside it)."""
    parts = ["python -m benchmarks.run"]
    if args.quick:
        parts.append("--quick")
    if args.only:
        parts += ["--only", *args.only]
    if args.repeats is not None:
        parts += ["--repeats", str(args.repeats)]
    if args.notebooks:
        parts += ["--notebooks", *args.notebooks]
    parts += ["--out", display_path(out, keep_outside=True)]
    return " ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    names = [name for name in SECTIONS if not args.only or name in args.only]
    if args.notebooks and not args.quick:
        from helpers.workbook import executor

        try:
            executor.select(executor.notebooks(), args.notebooks)
        except ValueError as error:
            parser.error(str(error))
    out = (args.out if args.out is not None else build_root() / "benchmarks").resolve()
    out.mkdir(parents=True, exist_ok=True)
    options = Options(out=out, quick=args.quick, repeats=args.repeats, notebooks=tuple(args.notebooks))

    machine_info = machine()
    started = time.perf_counter()
    results: list[Comparison] = []
    timings: dict[str, float] = {}
    for name in names:
        section_start = time.perf_counter()
        results.extend(SECTIONS[name](options))
        timings[name] = round(time.perf_counter() - section_start, 2)
        progress(f"[{name}] done in {timings[name]:.1f} s")

    run_command = command(args, out)
    figure = draw(results, out / "results.png")
    page = markdown_page(results, machine_info, command=run_command, figure=figure.name)
    (out / "results.md").write_text(page, encoding="utf-8")
    document = {
        "command": run_command,
        "machine": machine_info,
        "quick": args.quick,
        "sections": names,
        "section_seconds": timings,
        "seconds": round(time.perf_counter() - started, 2),
        "results": [result.to_json() for result in results],
    }
    (out / "results.json").write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    print()
    print(markdown_table(results))
    print(f"\nresults.json, results.md and results.png in {display_path(out, keep_outside=True)}")
    failed = [result for result in results if result.details.get("failed")]
    for result in failed:
        print(f"FAILED {result.section}: {result.name}: {result.details['failed'][0]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
