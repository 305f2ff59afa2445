"""The drift report a maintainer reads: ``report.md``, and the same as data in ``report.json``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from helpers.workbook.drift.compare import NotebookDrift


def notebook_table(drifts: Sequence[NotebookDrift]) -> list[str]:
    """One row per notebook: its verdict, how many cells changed, new warnings, its time (Markdown lines)."""
    lines = ["| notebook | verdict | changed cells | new warnings | time |", "|---|---|---:|---:|---:|"]
    return lines + [f"| {drift.name} | {drift.verdict} | {len(drift.changed)} | {len(drift.new_warnings)} | {drift.seconds:.1f} s |" for drift in drifts]


def notebook_details(drifts: Sequence[NotebookDrift], level: str = "##") -> list[str]:
    """For each notebook that changed: where it stopped, each changed cell's diff, its new warnings (Markdown lines)."""
    lines: list[str] = []
    for drift in drifts:
        if drift.verdict == "unchanged" and not drift.new_warnings:
            continue
        lines += ["", f"{level} {drift.name}", ""]
        if drift.failure:
            lines += [f"**Stopped at** {drift.failure}", ""]
        for change in drift.changed:
            lines += [f"Cell {change.cell} `{change.source}`:", "", "```diff", *change.diff, "```", ""]
        if drift.new_warnings:
            lines += ["New warnings on stderr:", ""] + [f"- {warning}" for warning in drift.new_warnings]
    return lines


def markdown_report(drifts: Sequence[NotebookDrift], environment: dict[str, Any], checks: dict[str, str], api_changes: dict[str, str] | None = None) -> str:
    """The report a maintainer reads: the versions, a table per notebook, then each notebook's details."""
    versions = ", ".join(f"{name} {version}" for name, version in environment.get("versions", {}).items())
    lines = ["# Drift report", "", "Versions in the drift environment: " + versions]
    lines += [f"Pinned: {', '.join(environment.get('pinned', []))}. Command: `{environment.get('command', '')}`. Date: {environment.get('date', '')}.", ""]
    lines += notebook_table(drifts)
    lines += ["", "## The glossary and the seed map", ""]
    lines += [f"- `{test}`: {result}" for test, result in checks.items()] or ["- not run"]
    lines += ["", "API names the glossary calls current whose status changed (pinned → newest; `helpers.workbook.glossary`):", ""]
    lines += [f"- `{name}`: {change}" for name, change in sorted((api_changes or {}).items())] or ["- none"]
    lines += notebook_details(drifts)
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
