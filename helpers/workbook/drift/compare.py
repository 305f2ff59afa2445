"""Comparing a notebook run in the drift environment with the stored one, as nbval compares them, cell by cell."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.errors import first_line
from helpers.paths import repo_root

#: The output data nbval does not compare (its default ``skip_compare`` without nbdime, nbval 0.11): raster
#: figures, which differ by a pixel between library versions, and widget ids, which are random.
SKIPPED_MIMETYPES = ("image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json")
IGNORE_OUTPUT_TAG = "nbval-ignore-output"
INJECTED_TAG = "injected-parameters"
#: A line of stderr that is worth a maintainer's attention.
WARNING_LINE = re.compile(r"warn|deprecat|removed in a future|will be removed|no longer supported", re.IGNORECASE)
MAX_DIFF_LINES = 12


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
    streams = [output for output in cell.get("outputs", []) if output.get("output_type") == "stream" and output.get("name") == "stderr"]
    text = "".join(_text(output.get("text", "")) for output in streams)
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
        source = first_line(new.source)[:80]
        errors = [output for output in new.get("outputs", []) if output.get("output_type") == "error"]
        if errors:
            error = errors[0]
            drift.ran = False
            drift.failed_assert = error.get("ename") == "AssertionError"
            drift.failure = f"cell {number} `{source}`: {error.get('ename')}: {first_line(str(error.get('evalue', '')))}"
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
            drift.changed.append(CellChange(number, source, shown))
    return drift


def api_changes(pinned: dict[str, str], newest: dict[str, str]) -> dict[str, str]:
    """``{name: "ok → deprecated"}`` for every name whose status differs."""
    changed = [name for name in sorted(set(pinned) | set(newest)) if pinned.get(name) != newest.get(name)]
    return {name: f"{pinned.get(name, 'absent')} → {newest.get(name, 'absent')}" for name in changed}


def compare_run(executed: Path, results: Sequence[dict[str, Any]], patterns: Sequence[tuple[re.Pattern[str], str]]) -> list[NotebookDrift]:
    """Each notebook of a run (``results``: :func:`helpers.workbook.executor.execute_all`'s entries, in order) against its stored copy.

    ``executed`` holds the executed notebooks; the stored ones are the workbook's. A notebook with no executed copy,
    or whose run failed outside its cells (the kernel died), is reported as not run, with the run's reason.
    """
    import nbformat

    from helpers.workbook.executor import notebooks

    stored = {path.stem: path for path in notebooks()}
    found = []
    for result in results:
        name, output = result["name"], executed / f"{result['name']}.ipynb"
        if not output.is_file():
            found.append(NotebookDrift(name=name, ran=False, failure=result.get("failure") or "no output written"))
            continue
        drift = compare(nbformat.read(stored[name], as_version=4), nbformat.read(output, as_version=4), patterns, name=name)
        drift.seconds = float(result.get("seconds", 0.0))
        if not drift.failure and not result.get("ok", True):
            drift.ran, drift.failure = False, result["failure"]
        found.append(drift)
    return found
