"""The workbook in another kernel configuration: ``python -m helpers.workbook configs`` (``make configs``).

On an x86 CPU, TensorFlow runs one of two families of CPU kernels: oneDNN's, which fuse ops such as
MatMul+BiasAdd+Relu into one kernel, or Eigen's. Which one a process gets depends on the CPU, and
``TF_ENABLE_ONEDNN_OPTS`` forces it either way (:func:`helpers.environment.onednn_enabled` reports it).
Some results differ between the two: a NaN through a fused ReLU, the kernel names in a profile, the
last digits of a loss. The stored outputs come from one of them, and a claim that holds only on one
must say so.

This command runs every notebook (or ``--only`` some) once per :data:`CONFIGURATIONS` entry, with that
entry's environment variables, in the pinned environment, as ``make run`` runs them (papermill,
default parameters, :func:`helpers.workbook.executor.execute_all`); then compares each executed notebook with
the stored one cell by cell with the drift guard's loop (:func:`helpers.workbook.drift.compare.compare_run`: nbval's
comparison and sanitizer), and writes
``build/configurations/report.md`` (and ``report.json``): per configuration, what TensorFlow said
about its kernels, then a row per notebook (ran, or the cell and assert that failed; how many cells
changed) and each changed cell's diff. A changed cell is information (a number printed at a precision
the other family does not reproduce, a kernel name); a failed assert is a claim that does not hold in
that configuration. Its exit statuses are the command line's (:mod:`helpers.workbook.commands`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from helpers.environment import ONEDNN_VARIABLE
from helpers.failures import UsageError
from helpers.paths import build_root, repo_root
from helpers.workbook.drift.compare import NotebookDrift, compare_run, sanitizers
from helpers.workbook.drift.report import notebook_details, notebook_table
from helpers.workbook.executor import environment, execute_all


@dataclass(frozen=True)
class Configuration:
    """A way to run the workbook: a name, the environment variables that make it, what it is."""

    name: str
    variables: dict[str, str]
    description: str


#: The configurations the workbook is checked in. The stored outputs are a default run on the machine
#: that last refreshed them, which is one of these two.
CONFIGURATIONS = (
    Configuration("onednn-off", {ONEDNN_VARIABLE: "0"}, "TensorFlow's Eigen CPU kernels (oneDNN forced off)"),
    Configuration("onednn-on", {ONEDNN_VARIABLE: "1"}, "oneDNN's CPU kernels, fused MatMul+BiasAdd+Relu among them (forced on)"),
)


def configuration(name: str) -> Configuration:
    """The entry of :data:`CONFIGURATIONS` called ``name`` (:class:`~helpers.failures.UsageError` naming the known ones otherwise)."""
    for entry in CONFIGURATIONS:
        if entry.name == name:
            return entry
    raise UsageError(f"no configuration {name!r}; known: {', '.join(entry.name for entry in CONFIGURATIONS)}")


def configurations_root() -> Path:
    """``build/configurations``: one folder per configuration (executed notebooks, work folders) and the report."""
    return build_root() / "configurations"


def environment_of(entry: Configuration) -> dict[str, str]:
    """This process's environment with the configuration's variables set (the kernels papermill starts inherit it)."""
    return {**os.environ, **entry.variables}


def kernels_reported(entry: Configuration) -> bool:
    """What TensorFlow itself says in that configuration: whether oneDNN's kernels are on (a new process)."""
    code = "import helpers; helpers.quiet_tensorflow_logs(); from helpers.environment import onednn_enabled; print(onednn_enabled())"
    completed = subprocess.run([sys.executable, "-c", code], env=environment_of(entry), cwd=repo_root(), check=True, capture_output=True, text=True)
    return completed.stdout.strip().splitlines()[-1] == "True"


def run_in(entry: Configuration, only: Sequence[str] | None) -> list[NotebookDrift]:
    """Execute the notebooks in one configuration (in this process's environment plus its variables) and compare each with its stored outputs."""
    root = configurations_root() / entry.name
    executed, work = root / "executed", root / "work"
    for folder in (executed, work):
        if folder.exists():
            shutil.rmtree(folder)
    with environment(entry.variables):  # the kernels papermill starts inherit them
        results = execute_all(executed, work, only, label=entry.name)
    return compare_run(executed, results, sanitizers())


def markdown_report(runs: Sequence[tuple[Configuration, bool, Sequence[NotebookDrift]]], command: str) -> str:
    """The report: per configuration, its variables and TensorFlow's answer, the notebook table, the changed cells."""
    lines = ["# The workbook in other kernel configurations", "", f"Command: `{command}`. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."]
    for entry, onednn, drifts in runs:
        variables = " ".join(f"{name}={value}" for name, value in entry.variables.items())
        failed = [drift.name for drift in drifts if not drift.ran]
        lines += ["", f"## {entry.name}: {entry.description}", "", f"`{variables}`; TensorFlow reports oneDNN kernels {'on' if onednn else 'off'}."]
        lines += [f"Every notebook ran: {'no, ' + ', '.join(failed) + ' failed' if failed else 'yes'}.", ""]
        lines += notebook_table(drifts)
        lines += notebook_details(drifts, level="###")
    return "\n".join(lines) + "\n"


def run_all(chosen: Sequence[Configuration], only: Sequence[str] | None, names: Sequence[str]) -> tuple[Path, list[str]]:
    """Run the notebooks in each configuration, write ``report.md`` and ``report.json``; the report's path and what failed where."""
    runs = []
    for entry in chosen:
        print(f"[configurations] {entry.name}: {entry.description}", flush=True)
        runs.append((entry, kernels_reported(entry), run_in(entry, only)))
    command = "python -m helpers.workbook configs" + "".join(f" {name}" for name in names) + (f" --only {' '.join(only)}" if only else "")
    root = configurations_root()
    root.mkdir(parents=True, exist_ok=True)
    report = root / "report.md"
    report.write_text(markdown_report(runs, command), encoding="utf-8")
    document: dict[str, Any] = {
        "command": command,
        "configurations": [
            {**asdict(entry), "onednn_reported": onednn, "notebooks": [dict(asdict(drift), verdict=drift.verdict) for drift in drifts]}
            for entry, onednn, drifts in runs
        ],
    }
    report.with_suffix(".json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return report, [f"{drift.name} ({entry.name})" for entry, _, drifts in runs for drift in drifts if not drift.ran]
