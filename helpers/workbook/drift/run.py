"""The drift guard's run: the notebooks in the drift environment, the glossary's API check and the glossary's and seed map's tests there.

The notebooks run in the drift environment through :func:`helpers.workbook.executor.execute_all`'s entry point;
:func:`drift` is the whole run, compared with the stored notebooks and reported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from helpers.failures import UsageError
from helpers.paths import display_path, repo_root
from helpers.workbook.drift.compare import api_changes, compare_run, drift_patterns, sanitizers
from helpers.workbook.drift.environment import MOVING, build_environment, drift_root, run_logged, venv_for, versions
from helpers.workbook.drift.report import write_report
from helpers.workbook.executor import RESULTS_FILE, notebooks, select


def api_status_in(python: Path) -> dict[str, str]:
    """:func:`helpers.workbook.glossary.current_api_status` in the environment of ``python``."""
    completed = subprocess.run([str(python), "-m", "helpers.workbook.glossary"], cwd=repo_root(), check=True, capture_output=True, text=True)
    return dict(json.loads(completed.stdout.strip().splitlines()[-1]))


def checks_in(python: Path) -> dict[str, str]:
    """The glossary's and the seed map's tests run in the drift environment: their closing lines."""
    found = {}
    for test in ("tests/test_glossary.py", "tests/test_seed_map.py"):
        completed = subprocess.run(
            [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", test], cwd=repo_root(), capture_output=True, text=True
        )
        tail = [line for line in completed.stdout.splitlines() if line.strip()]
        failures = [line for line in tail if line.startswith("FAILED") or line.startswith("E ")][:8]
        found[test] = (tail[-1] if tail else f"exit {completed.returncode}") + ("".join(f"; {line}" for line in failures) if failures else "")
    return found


def drift(*, nightly: bool, only: Sequence[str] | None, reuse: bool, compare_only: bool = False) -> Path:
    """Build (or reuse) the drift environment, run the notebooks there, compare, and write the report; return report.md.

    ``compare_only`` compares the notebooks of the last run again (after a change to the comparison or
    the stored notebooks) without installing or executing anything.
    """
    root = drift_root()
    executed, work = root / "executed", root / "work"
    if compare_only:
        if not (executed / "run.json").is_file():
            raise UsageError(f"nothing to compare: {display_path(executed)} holds no run; run without --compare-only first")
        last_run = json.loads((executed / "run.json").read_text(encoding="utf-8"))
        python, nightly = Path(last_run["python"]), bool(last_run["nightly"])
    else:
        venv = venv_for(nightly)
        python = venv / "bin" / "python" if reuse and (venv / "bin" / "python").exists() else build_environment(venv, nightly=nightly)
        for folder in (executed, work):
            if folder.exists():
                shutil.rmtree(folder)
        command = [str(python), "-m", "helpers.workbook.executor", str(executed), str(work), *(only or [])]
        run_logged(command, cwd=repo_root())
        (executed / "run.json").write_text(json.dumps({"python": str(python), "nightly": nightly}) + "\n", encoding="utf-8")
    found = versions(python)
    chosen = {path.stem for path in select(notebooks(), only)}
    results = [entry for entry in json.loads((executed / RESULTS_FILE).read_text(encoding="utf-8")) if entry["name"] in chosen]
    drifts = compare_run(executed, results, sanitizers() + drift_patterns())
    environment = {
        "versions": found,
        "pinned": [line for line in (repo_root() / "requirements.txt").read_text(encoding="utf-8").split() if line.split("==")[0] in MOVING],
        "command": "python -m helpers.workbook drift" + (" --nightly" if nightly else "") + (" --compare-only" if compare_only else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    changes = api_changes(api_status_in(Path(sys.executable)), api_status_in(python))
    markdown, _ = write_report(drifts, environment, checks_in(python), root, changes)
    return markdown
