"""``python -m helpers.workbook.drift`` (``make drift``): the command line of the drift guard (see :mod:`helpers.workbook.drift`)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from helpers.paths import display_path
from helpers.workbook.drift.run import drift, execute_all


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.workbook.drift", description="Run the workbook against the newest TensorFlow and report what changed."
    )
    parser.add_argument("--nightly", action="store_true", help="tf-nightly, keras-nightly and tb-nightly instead of the latest releases")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks (number prefix or name)")
    parser.add_argument("--reuse", action="store_true", help="reuse the drift environment (build/drift/venv-latest or venv-nightly) as it is: no install")
    parser.add_argument("--compare-only", action="store_true", help="compare the last run's notebooks again and rewrite the report (no install, no run)")
    sub = parser.add_subparsers(dest="command")
    execute = sub.add_parser("execute", help="(used inside the drift environment) run the notebooks and write results.json")
    execute.add_argument("--out", type=Path, required=True)
    execute.add_argument("--work", type=Path, required=True)
    execute.add_argument("--only", nargs="+", metavar="NOTEBOOK")
    args = parser.parse_args(argv)
    if args.command == "execute":
        args.out.mkdir(parents=True, exist_ok=True)
        results = execute_all(args.out, args.work, args.only)
        (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        return 0
    try:
        report = drift(nightly=args.nightly, only=args.only, reuse=args.reuse, compare_only=args.compare_only)
    except subprocess.CalledProcessError as error:
        print(f"drift: `{' '.join(map(str, error.cmd))}` failed with exit status {error.returncode}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"drift: {error}", file=sys.stderr)
        return 2
    print(report.read_text(encoding="utf-8"))
    print(f"report: {display_path(report)} and report.json beside it")
    document = json.loads(report.with_suffix(".json").read_text(encoding="utf-8"))
    drifted = [entry["name"] for entry in document["notebooks"] if entry["verdict"] != "unchanged" or entry["new_warnings"]]
    failing_checks = [test for test, line in document["checks"].items() if "failed" in line or "error" in line]
    return 1 if drifted or failing_checks or document["api_changes"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
