"""helpers.workbook.executor's entry point and environment, and the one compare loop drift and configs share
(helpers.workbook.drift.compare.compare_run), without starting a kernel."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from helpers.workbook import executor
from helpers.workbook.drift.compare import compare_run


def test_environment_sets_variables_for_the_block_and_restores_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_TEST_KEPT", "before")
    monkeypatch.delenv("WORKBOOK_TEST_NEW", raising=False)
    with executor.environment({"WORKBOOK_TEST_KEPT": "during", "WORKBOOK_TEST_NEW": "1"}):
        assert (os.environ["WORKBOOK_TEST_KEPT"], os.environ["WORKBOOK_TEST_NEW"]) == ("during", "1")
    assert os.environ["WORKBOOK_TEST_KEPT"] == "before" and "WORKBOOK_TEST_NEW" not in os.environ


def test_the_entry_point_drift_runs_writes_each_notebooks_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m helpers.workbook.executor OUT WORK [NOTEBOOK ...]``: what drift runs in its own environment."""
    calls: list[tuple[Path, Path, Any]] = []

    def execute_all(out: Path, work: Path, only: Any, *, label: str) -> list[dict[str, Any]]:
        calls.append((out, work, only))
        return [{"name": "01_x", "ok": False, "seconds": 1.5, "failure": "cell 3: boom"}]

    monkeypatch.setattr(executor, "execute_all", execute_all)
    assert executor.main([str(tmp_path / "out"), str(tmp_path / "work"), "01"]) == 0
    assert calls == [(tmp_path / "out", tmp_path / "work", ["01"])]
    assert json.loads((tmp_path / "out" / executor.RESULTS_FILE).read_text()) == [{"name": "01_x", "ok": False, "seconds": 1.5, "failure": "cell 3: boom"}]


def _notebook(path: Path, printed: str) -> None:
    cell = new_code_cell("print(value)", execution_count=1, outputs=[new_output("stream", name="stdout", text=printed)])
    cell.metadata = {"tags": []}
    nbformat.write(new_notebook(cells=[cell]), path)


def test_compare_run_reports_each_notebook_of_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stored, executed = tmp_path / "notebooks", tmp_path / "executed"
    stored.mkdir()
    executed.mkdir()
    monkeypatch.setattr(executor, "NOTEBOOKS_DIR", stored)
    for name in ("00_same", "01_changed", "02_died", "03_missing"):
        _notebook(stored / f"{name}.ipynb", "1\n")
    _notebook(executed / "00_same.ipynb", "1\n")
    _notebook(executed / "01_changed.ipynb", "2\n")
    _notebook(executed / "02_died.ipynb", "1\n")  # written, but the kernel died after the last cell
    results = [
        {"name": "00_same", "ok": True, "seconds": 1.0, "failure": ""},
        {"name": "01_changed", "ok": True, "seconds": 2.0, "failure": ""},
        {"name": "02_died", "ok": False, "seconds": 3.0, "failure": "DeadKernelError: Kernel died"},
        {"name": "03_missing", "ok": False, "seconds": 0.5, "failure": ""},
    ]
    found = {drift.name: drift for drift in compare_run(executed, results, [])}
    assert list(found) == ["00_same", "01_changed", "02_died", "03_missing"]
    assert found["00_same"].verdict == "unchanged" and found["00_same"].seconds == 1.0
    assert found["01_changed"].verdict == "1 cell(s) changed"
    assert (found["02_died"].ran, found["02_died"].failure) == (False, "DeadKernelError: Kernel died")
    assert (found["03_missing"].ran, found["03_missing"].failure) == (False, "no output written")
