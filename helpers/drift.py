"""Drift guard: run the workbook against the newest TensorFlow and Keras and report which claims changed.

``python -m helpers.drift`` (``make drift``) builds a virtual environment of its own,
``build/drift/venv-latest`` (or ``venv-nightly``), with the newest TensorFlow, Keras and TensorBoard on the package index (the
latest releases; ``--nightly``: ``tf-nightly``, ``keras-nightly`` and ``tb-nightly``) and everything
else ``requirements.txt`` pins; executes every notebook there with papermill, as ``make run`` does,
into ``build/drift/executed`` (the notebooks' own build folders under ``build/drift/work/build``); runs
the glossary's and the seed map's tests there (an API they call current that the new version
removed fails them) and compares each current API name's status, pinned and newest (removed or
deprecated, :mod:`helpers.workbook.glossary`); and compares each executed notebook with the stored one: the comparison nbval
makes, with the same sanitizer (``tests/nbval_sanitize.cfg``), cell by cell. The report,
``build/drift/report.md`` and ``report.json``, says per notebook whether it ran, which cell failed
and why (a failed ``assert`` is a claim that changed), which cells' outputs changed (a short diff),
and what new warnings or deprecations it wrote to stderr.

The pinned environment (``.venv``) is never touched: the drift venv is separate, and only it
installs anything. The exit status is 0 when nothing drifted, 1 when a notebook failed or changed,
printed a new warning, or a glossary or seed-map check failed, and 2 when the environment could not be
built or run (a scheduled job can alert on non-zero). Nothing here runs in ``make test``;
``tests/test_drift.py`` checks the comparison on small notebooks without building an environment.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from helpers.paths import build_root, display_path, repo_root

#: The packages a drift run replaces, and what it installs instead (latest release, or nightly).
MOVING = {"tensorflow": "tf-nightly", "keras": "keras-nightly", "tensorboard": "tb-nightly"}
#: The output data nbval does not compare (its default ``skip_compare`` without nbdime, nbval 0.11): raster
#: figures, which differ by a pixel between library versions, and widget ids, which are random.
SKIPPED_MIMETYPES = ("image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json")
IGNORE_OUTPUT_TAG = "nbval-ignore-output"
INJECTED_TAG = "injected-parameters"
#: A line of stderr that is worth a maintainer's attention.
WARNING_LINE = re.compile(r"warn|deprecat|removed in a future|will be removed|no longer supported", re.IGNORECASE)
MAX_DIFF_LINES = 12


def venv_for(nightly: bool) -> Path:
    """The drift environment: ``build/drift/venv-nightly`` or ``build/drift/venv-latest``, one per kind.

    Two, because ``tf-nightly`` and ``tensorflow`` install the same ``tensorflow`` package: one
    environment switched from one to the other would hold both, overwriting each other's files.
    """
    return drift_root() / ("venv-nightly" if nightly else "venv-latest")


def drift_root() -> Path:
    """``build/drift``: the venvs, the executed notebooks, their work folders and the report."""
    return build_root() / "drift"


def sanitizers(config: Path | None = None) -> list[tuple[re.Pattern[str], str]]:
    """The regex replacements of ``tests/nbval_sanitize.cfg``, read with nbval's own parser."""
    from nbval.plugin import get_sanitize_patterns

    path = config if config is not None else repo_root() / "tests" / "nbval_sanitize.cfg"
    return [(re.compile(pattern), replacement) for pattern, replacement in get_sanitize_patterns(path.read_text(encoding="utf-8"))]


def drift_patterns() -> list[tuple[re.Pattern[str], str]]:
    """What differs by construction in a drift run, on top of nbval's sanitizer: the version line of every
    setup cell (the report's header gives the versions). The build folders read the same (:func:`execute_all`)."""
    return [(re.compile(r"tensorflow \S+ \| keras \S+"), "tensorflow VERSION | keras VERSION")]


def sanitize(text: str, patterns: Sequence[tuple[re.Pattern[str], str]]) -> str:
    for pattern, replacement in patterns:
        text = pattern.sub(replacement, text)
    return text


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def compared_outputs(cell: Any, patterns: Sequence[tuple[re.Pattern[str], str]]) -> list[str]:
    """A cell's outputs as nbval compares them, sanitized: streams and every kind of result data but
    :data:`SKIPPED_MIMETYPES`. One difference, on purpose: stderr is left out here and reported
    separately, as new warnings (:func:`stderr_lines`), since a new deprecation notice is news, not a
    changed claim. Consecutive stdout outputs are merged first, as nbval merges streams.
    """
    lines: list[str] = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            if output.get("name") == "stderr":
                continue
            text = f"[stdout] {_text(output.get('text', ''))}"
            if lines and lines[-1].startswith("[stdout] "):
                lines[-1] += _text(output.get("text", ""))
                continue
            lines.append(text)
        elif kind in ("execute_result", "display_data"):
            for key, value in sorted(output.get("data", {}).items()):
                if key not in SKIPPED_MIMETYPES:
                    lines.append(f"[{kind} {key}] {_text(value)}")
        elif kind == "error":
            lines.append(f"[error] {output.get('ename')}: {output.get('evalue')}")
    return [sanitize(line, patterns) for line in lines]


def stderr_lines(cell: Any, patterns: Sequence[tuple[re.Pattern[str], str]]) -> list[str]:
    """The non-empty lines a cell wrote to stderr, sanitized."""
    text = "".join(_text(output.get("text", "")) for output in cell.get("outputs", []) if output.get("output_type") == "stream" and output.get("name") == "stderr")
    return [sanitize(line, patterns) for line in text.splitlines() if line.strip()]


@dataclass
class CellChange:
    """One code cell whose outputs differ: its position among the code cells (1-based), its first line, a short diff."""

    cell: int
    source: str
    diff: list[str]


@dataclass
class NotebookDrift:
    """What changed in one notebook between its stored outputs and a run in the drift environment."""

    name: str
    ran: bool
    failure: str = ""
    failed_assert: bool = False
    changed: list[CellChange] = field(default_factory=list)
    new_warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        if not self.ran:
            return "a claim changed (an assert failed)" if self.failed_assert else "fails"
        return f"{len(self.changed)} cell(s) changed" if self.changed else "unchanged"


def _code_cells(notebook: Any) -> list[Any]:
    return [cell for cell in notebook.cells if cell.cell_type == "code" and INJECTED_TAG not in cell.get("metadata", {}).get("tags", [])]


def compare(stored: Any, executed: Any, patterns: Sequence[tuple[re.Pattern[str], str]], *, name: str = "") -> NotebookDrift:
    """Compare an executed notebook with the stored one, code cell by code cell.

    A cell tagged ``nbval-ignore-output`` is not compared, as nbval does not compare it. The first
    error output in the executed copy is the failure (an ``AssertionError`` is a claim that changed);
    cells after it did not run and are not compared. Lines on stderr that the stored cell did not
    have and that look like a warning or deprecation are collected in ``new_warnings``.
    """
    drift = NotebookDrift(name=name, ran=True)
    stored_cells, executed_cells = _code_cells(stored), _code_cells(executed)
    if len(stored_cells) != len(executed_cells):
        raise ValueError(f"{name}: {len(stored_cells)} code cells stored, {len(executed_cells)} executed: not the same notebook")
    for number, (old, new) in enumerate(zip(stored_cells, executed_cells, strict=True), start=1):
        first_line = (new.source.strip().splitlines() or [""])[0][:80]
        errors = [output for output in new.get("outputs", []) if output.get("output_type") == "error"]
        if errors:
            error = errors[0]
            drift.ran = False
            drift.failed_assert = error.get("ename") == "AssertionError"
            drift.failure = f"cell {number} `{first_line}`: {error.get('ename')}: {(str(error.get('evalue', '')).strip().splitlines() or [''])[0]}"
        known = set(stderr_lines(old, patterns))
        drift.new_warnings += [f"cell {number}: {line}" for line in stderr_lines(new, patterns) if line not in known and WARNING_LINE.search(line)]
        if errors:
            break
        if new.execution_count is None:  # papermill stopped before this cell
            break
        if IGNORE_OUTPUT_TAG in new.get("metadata", {}).get("tags", []):
            continue
        before, after = compared_outputs(old, patterns), compared_outputs(new, patterns)
        if before != after:
            unified = difflib.unified_diff("\n".join(before).splitlines(), "\n".join(after).splitlines(), "stored", "newest", n=0, lineterm="")
            diff = [line for line in list(unified)[2:] if not line.startswith("@@")]
            shown = diff[:MAX_DIFF_LINES] + ([f"... {len(diff) - MAX_DIFF_LINES} more lines"] if len(diff) > MAX_DIFF_LINES else [])
            drift.changed.append(CellChange(number, first_line, shown))
    return drift


def markdown_report(drifts: Sequence[NotebookDrift], environment: dict[str, Any], checks: dict[str, str], api_changes: dict[str, str] | None = None) -> str:
    """The report a maintainer reads: the versions, a table per notebook, then each notebook's details."""
    lines = ["# Drift report", "", "Versions in the drift environment: " + ", ".join(f"{name} {version}" for name, version in environment.get("versions", {}).items())]
    lines += [f"Pinned: {', '.join(environment.get('pinned', []))}. Command: `{environment.get('command', '')}`. Date: {environment.get('date', '')}.", ""]
    lines += ["| notebook | verdict | changed cells | new warnings | time |", "|---|---|---:|---:|---:|"]
    for drift in drifts:
        lines.append(f"| {drift.name} | {drift.verdict} | {len(drift.changed)} | {len(drift.new_warnings)} | {drift.seconds:.1f} s |")
    lines += ["", "## The glossary and the seed map", ""]
    lines += [f"- `{test}`: {result}" for test, result in checks.items()] or ["- not run"]
    lines += ["", "API names the glossary calls current whose status changed (pinned → newest; `helpers.workbook.glossary`):", ""]
    lines += [f"- `{name}`: {change}" for name, change in sorted((api_changes or {}).items())] or ["- none"]
    for drift in drifts:
        if drift.verdict == "unchanged" and not drift.new_warnings:
            continue
        lines += ["", f"## {drift.name}", ""]
        if drift.failure:
            lines += [f"**Stopped at** {drift.failure}", ""]
        for change in drift.changed:
            lines += [f"Cell {change.cell} `{change.source}`:", "", "```diff", *change.diff, "```", ""]
        if drift.new_warnings:
            lines += ["New warnings on stderr:", ""] + [f"- {warning}" for warning in drift.new_warnings]
    return "\n".join(lines) + "\n"


def write_report(
    drifts: Sequence[NotebookDrift], environment: dict[str, Any], checks: dict[str, str], out: Path, api_changes: dict[str, str] | None = None
) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.json`` into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    markdown, document = out / "report.md", out / "report.json"
    markdown.write_text(markdown_report(drifts, environment, checks, api_changes), encoding="utf-8")
    payload = {
        "environment": environment,
        "checks": checks,
        "api_changes": api_changes or {},
        "notebooks": [dict(asdict(drift), verdict=drift.verdict) for drift in drifts],
    }
    document.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return markdown, document


# --- building the environment and running the notebooks there -------------------------------------


def requirement_lines(nightly: bool) -> list[str]:
    """``requirements.txt`` with TensorFlow, Keras and TensorBoard unpinned (or their nightly builds); the rest as pinned."""
    lines = []
    for raw in (repo_root() / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"[=<>!~\[ ]", line, maxsplit=1)[0].lower()
        if name in MOVING:
            line = MOVING[name] if nightly else name
        lines.append(line)
    return lines


def _run(command: Sequence[str], **options: Any) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(command), flush=True)
    return subprocess.run(list(command), check=True, text=True, **options)


def build_environment(venv: Path, *, nightly: bool) -> Path:
    """Create ``venv`` (if missing) and install the newest TensorFlow stack into it; return its Python."""
    python = venv / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)])
    requirements = venv.parent / f"requirements-{venv.name}.txt"
    requirements.write_text("\n".join(requirement_lines(nightly)) + "\n", encoding="utf-8")
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--upgrade"]
    _run([*pip, *(["--pre"] if nightly else []), "-r", str(requirements)])
    _run([*pip, "--no-deps", "-e", str(repo_root())])
    return python


def versions(python: Path) -> dict[str, str]:
    """The installed versions of the moving packages in the environment of ``python`` (:func:`helpers.environment.installed_version` there)."""
    names = [*MOVING, *MOVING.values()]
    code = (
        "import json, sys\nfrom helpers.environment import installed_version\n"
        "print(json.dumps({name: version for name in sys.argv[1:] if (version := installed_version(name)) is not None}))"
    )
    completed = subprocess.run([str(python), "-c", code, *names], cwd=repo_root(), check=True, capture_output=True, text=True)
    return dict(json.loads(completed.stdout))


def execute_all(out: Path, work: Path, only: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Run every notebook (in this interpreter's environment) into ``out``; their build folders under ``work``."""
    from helpers.workbook import runner

    # The build area is work/build and each kernel starts in work/notebooks, so the paths the notebooks print
    # (`build/05_checkpoints/...` and `../build/05_checkpoints/...`) read exactly as in the stored outputs.
    os.environ["WORKBOOK_BUILD_DIR"] = str(work / "build")
    kernel_folder = work / "notebooks"
    kernel_folder.mkdir(parents=True, exist_ok=True)
    results = []
    for path in runner.select(runner.notebooks(), only):
        print(f"[drift] {path.stem}", flush=True)
        result = runner.execute(path, out / path.name, {}, progress=False, cwd=kernel_folder)
        results.append({"name": result.name, "ok": result.ok, "seconds": round(result.seconds, 1), "failure": result.failure or ""})
    return results


def api_status_in(python: Path) -> dict[str, str]:
    """:func:`helpers.workbook.glossary.current_api_status` in the environment of ``python``."""
    completed = subprocess.run([str(python), "-m", "helpers.workbook.glossary"], cwd=repo_root(), check=True, capture_output=True, text=True)
    return dict(json.loads(completed.stdout.strip().splitlines()[-1]))


def api_changes(pinned: dict[str, str], newest: dict[str, str]) -> dict[str, str]:
    """``{name: "ok → deprecated"}`` for every name whose status differs."""
    return {name: f"{pinned.get(name, 'absent')} → {newest.get(name, 'absent')}" for name in sorted(set(pinned) | set(newest)) if pinned.get(name) != newest.get(name)}


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
    import nbformat

    from helpers.workbook import runner

    root = drift_root()
    executed, work = root / "executed", root / "work"
    if compare_only:
        if not (executed / "run.json").is_file():
            raise ValueError(f"nothing to compare: {display_path(executed)} holds no run; run without --compare-only first")
        last_run = json.loads((executed / "run.json").read_text(encoding="utf-8"))
        python, nightly = Path(last_run["python"]), bool(last_run["nightly"])
    else:
        venv = venv_for(nightly)
        python = venv / "bin" / "python" if reuse and (venv / "bin" / "python").exists() else build_environment(venv, nightly=nightly)
        for folder in (executed, work):
            if folder.exists():
                shutil.rmtree(folder)
        command = [str(python), "-m", "helpers.drift", "execute", "--out", str(executed), "--work", str(work), *(["--only", *only] if only else [])]
        _run(command, cwd=repo_root())
        (executed / "run.json").write_text(json.dumps({"python": str(python), "nightly": nightly}) + "\n", encoding="utf-8")
    found = versions(python)
    results = {entry["name"]: entry for entry in json.loads((executed / "results.json").read_text(encoding="utf-8"))}
    patterns = sanitizers() + drift_patterns()
    drifts = []
    for path in runner.select(runner.notebooks(), only):
        if path.stem not in results:
            continue  # not part of the last run (--only)
        output = executed / path.name
        if not output.is_file():
            drifts.append(NotebookDrift(name=path.stem, ran=False, failure=results.get(path.stem, {}).get("failure", "no output written")))
            continue
        entry = compare(nbformat.read(path, as_version=4), nbformat.read(output, as_version=4), patterns, name=path.stem)
        entry.seconds = float(results.get(path.stem, {}).get("seconds", 0.0))
        if not entry.failure and not results.get(path.stem, {}).get("ok", True):
            entry.ran, entry.failure = False, results[path.stem]["failure"]
        drifts.append(entry)
    environment = {
        "versions": found,
        "pinned": [line for line in (repo_root() / "requirements.txt").read_text(encoding="utf-8").split() if line.split("==")[0] in MOVING],
        "command": "python -m helpers.drift" + (" --nightly" if nightly else "") + (" --compare-only" if compare_only else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    changes = api_changes(api_status_in(Path(sys.executable)), api_status_in(python))
    markdown, _ = write_report(drifts, environment, checks_in(python), root, changes)
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.drift", description="Run the workbook against the newest TensorFlow and report what changed.")
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
