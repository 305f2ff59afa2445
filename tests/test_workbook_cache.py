"""helpers.workbook.cache: keys that change with what a run depends on, and only then; entries on and off."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.workbook import cache


@pytest.fixture(autouse=True)
def build_area(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.delenv(cache.CACHE_VARIABLE, raising=False)
    return tmp_path / "build"


def _notebook() -> Any:
    notebook = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell("SEED = 7\nFAST = False")
    parameters.metadata["tags"] = ["parameters"]
    work = nbformat.v4.new_code_cell("print(SEED)")
    work.outputs = [nbformat.v4.new_output("stream", name="stdout", text="7\n")]
    work.execution_count = 2
    notebook.cells = [nbformat.v4.new_markdown_cell("# 00 · A chapter"), parameters, work]
    return notebook


def _key(notebook: Any, parameters: dict[str, object] | None = None, environment: dict[str, str] | None = None) -> str:
    return cache.key(notebook, parameters or {"SEED": 7}, environment or {"TF_ENABLE_ONEDNN_OPTS": ""})


def test_the_key_ignores_outputs_and_counts_but_not_the_source_the_parameters_or_the_environment() -> None:
    notebook = _notebook()
    base = _key(notebook)
    rerun = copy.deepcopy(notebook)
    rerun.cells[2].outputs, rerun.cells[2].execution_count = [], 9
    assert _key(rerun) == base, "a run's outputs are not one of its inputs"
    edited = copy.deepcopy(notebook)
    edited.cells[2].source = "print(SEED + 1)"
    prose = copy.deepcopy(notebook)
    prose.cells[0].source = "# 00 · Another title"
    others = {
        "code": _key(edited),
        "prose": _key(prose),
        "parameters": _key(notebook, {"SEED": 8}),
        "environment": _key(notebook, environment={"TF_ENABLE_ONEDNN_OPTS": "1"}),
        "extra": cache.key(notebook, {"SEED": 7}, {"TF_ENABLE_ONEDNN_OPTS": ""}, extra=[b"stored outputs"]),
    }
    assert base not in others.values() and len(set(others.values())) == len(others), others


def test_the_code_files_are_the_chapters_imports_the_machinery_the_data_and_the_pins(tmp_path: Path) -> None:
    for name in ("helpers/__init__.py", "helpers/train/step.py", "helpers/workbook/executor.py", "helpers/workbook/course.py", "data/digits.npz"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "requirements.txt").write_text("tensorflow==2.21.0\n")
    found = [path.relative_to(tmp_path).as_posix() for path in cache.code_files(tmp_path)]
    assert found == ["data/digits.npz", "helpers/__init__.py", "helpers/train/step.py", "helpers/workbook/executor.py", "requirements.txt"]


def test_every_code_file_of_the_repository_is_in_the_environment_digest() -> None:
    names = {path.name for path in cache.code_files()}
    assert {"__init__.py", "digits.npz", "requirements.txt", "cache.py"} <= names
    assert len(cache.environment_digest()) == 64


def test_a_record_is_found_by_its_key_and_only_while_the_cache_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.lookup("validated", "ab" * 32) is None
    path = cache.record("validated", "ab" * 32, {"chapter": "00_x"})
    assert path is not None and path.parent == cache.cache_root() / "validated"
    found = cache.lookup("validated", "ab" * 32)
    assert found is not None and found["chapter"] == "00_x" and found["key"] == "ab" * 32 and found["recorded"]
    assert cache.lookup("executed", "ab" * 32) is None, "the kinds are apart"
    monkeypatch.setenv(cache.CACHE_VARIABLE, "0")
    assert cache.lookup("validated", "ab" * 32) is None
    assert cache.record("validated", "cd" * 32, {}) is None and not (cache.cache_root() / "validated" / f"{'cd' * 32}.json").exists()


def test_an_unreadable_record_counts_as_none_and_an_unknown_kind_is_refused() -> None:
    path = cache.cache_root() / "validated" / f"{'ef' * 32}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"chapter": ')
    assert cache.lookup("validated", "ef" * 32) is None
    with pytest.raises(ValueError, match="no cache kind 'passed'; the kinds are validated, executed"):
        cache.lookup("passed", "ef" * 32)


def test_an_executed_copy_is_kept_with_its_time_and_found_by_the_run_key(tmp_path: Path) -> None:
    chapter = tmp_path / "00_x.ipynb"
    nbformat.write(_notebook(), chapter)
    key = cache.run_key(chapter, {})
    assert key == cache.run_key(chapter, {"SEED": 7}), "the chapter's defaults are its parameters"
    assert key != cache.run_key(chapter, {"SEED": 8})
    assert key is not None and cache.executed(key) is None
    cache.store_executed(key, chapter, 12.34)
    found = cache.executed(key)
    assert found is not None and found[1] == 12.3 and json.loads(found[0].read_text()) == json.loads(chapter.read_text())
    assert found[0].name == chapter.name, "under the chapter's own name, as the book names its page"


def test_a_file_that_is_not_a_notebook_has_no_run_key(tmp_path: Path) -> None:
    (tmp_path / "cut.ipynb").write_text('{"cells": [')
    (tmp_path / "list.ipynb").write_text("[]")
    assert cache.run_key(tmp_path / "cut.ipynb", {}) is None and cache.run_key(tmp_path / "list.ipynb", {}) is None
    assert cache.run_key(tmp_path / "missing.ipynb", {}) is None and cache.executed(None) is None


def test_the_parameters_cell_is_read_without_running_it() -> None:
    assert cache.notebook_parameters(_notebook()) == {"SEED": 7, "FAST": False}
    assert cache.notebook_parameters(nbformat.v4.new_notebook()) == {}
