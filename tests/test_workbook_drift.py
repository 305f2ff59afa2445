"""helpers.workbook.drift: the comparison of stored and newly executed notebooks, on small notebooks, with no environment built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from helpers.paths import build_root, display_path, repo_root
from helpers.workbook.drift.compare import IGNORE_OUTPUT_TAG, INJECTED_TAG, api_changes, compare, drift_patterns, sanitizers
from helpers.workbook.drift.environment import drift_root, requirement_lines
from helpers.workbook.drift.report import write_report


def cell(source: str, *outputs: Any, tags: tuple[str, ...] = (), count: int | None = 1) -> Any:
    made = new_code_cell(source, outputs=list(outputs), execution_count=count)
    made.metadata = {"tags": list(tags)}
    return made


def stdout(text: str) -> Any:
    return new_output("stream", name="stdout", text=text)


def stderr(text: str) -> Any:
    return new_output("stream", name="stderr", text=text)


@pytest.fixture(scope="module")
def patterns() -> list[Any]:
    return sanitizers()


def pair() -> tuple[Any, Any]:
    """A stored notebook and its run under a newer TensorFlow: a value changed, a warning appeared, an assert failed."""
    stored = new_notebook(cells=[
        cell("print(value)", stdout("value 1.0000\n")),
        cell("print(model)", stdout("<Model at 0x7f001234>\n")),
        cell("time it", stdout("12.3 ms\n"), tags=(IGNORE_OUTPUT_TAG,)),
        cell("use_api()", stdout("ok\n")),
        cell("assert claim()", stdout("checked\n")),
        cell("after()", stdout("after\n")),
    ])
    executed = new_notebook(cells=[
        cell("print(value)", stdout("value 1.0001\n")),
        cell("print(model)", stdout("<Model at 0x7fabcdef>\n")),  # another address: sanitized away
        cell("time it", stdout("15.9 ms\n"), tags=(IGNORE_OUTPUT_TAG,)),
        cell("use_api()", stdout("ok\n"), stderr("DeprecationWarning: use_api is deprecated and will be removed\nplain progress line\n")),
        cell("assert claim()", new_output("error", ename="AssertionError", evalue="the claim no longer holds", traceback=[])),
        cell("after()", count=None),
    ])
    return stored, executed


def test_a_changed_value_a_new_warning_and_a_failed_assert_are_reported(patterns: list[Any]) -> None:
    stored, executed = pair()
    result = compare(stored, executed, patterns, name="99_tiny")
    assert [change.cell for change in result.changed] == [1]  # not the address (sanitized), not the ignored timing
    assert result.changed[0].diff == ["-[stdout] value 1.0000", "+[stdout] value 1.0001"]
    assert result.new_warnings == ["cell 4: DeprecationWarning: use_api is deprecated and will be removed"]  # the progress line is no warning
    assert not result.ran and result.failed_assert
    assert result.failure == "cell 5 `assert claim()`: AssertionError: the claim no longer holds"
    assert result.verdict == "a claim changed (an assert failed)"


def test_an_unchanged_run_and_a_new_error_that_is_not_an_assert(patterns: list[Any]) -> None:
    stored, _ = pair()
    same = compare(stored, stored, patterns, name="same")
    assert same.ran and not same.changed and not same.new_warnings and same.verdict == "unchanged"

    _, executed = pair()
    executed.cells[3].outputs = [new_output("error", ename="AttributeError", evalue="module 'tf' has no attribute 'old_api'", traceback=[])]
    broken = compare(stored, executed, patterns, name="broken")
    assert broken.failure.startswith("cell 4 `use_api()`: AttributeError") and not broken.failed_assert
    assert broken.verdict == "fails" and [change.cell for change in broken.changed] == [1]  # cells after the error are not compared


def test_papermill_s_injected_cell_is_skipped_and_a_different_notebook_is_refused(patterns: list[Any]) -> None:
    stored, executed = pair()
    executed.cells.insert(0, cell("SEED = 1", tags=(INJECTED_TAG,)))
    assert [change.cell for change in compare(stored, executed, patterns).changed] == [1]
    executed.cells.append(cell("extra()"))
    with pytest.raises(ValueError, match="not the same notebook"):
        compare(stored, executed, patterns, name="other")


def test_the_report_in_markdown_and_json(tmp_path: Path, patterns: list[Any]) -> None:
    stored, executed = pair()
    result = compare(stored, executed, patterns, name="99_tiny")
    environment = {
        "versions": {"tf-nightly": "2.99.0.dev1"}, "pinned": ["tensorflow==2.21.0"], "command": "python -m helpers.workbook.drift --nightly", "date": "today"
    }
    checks = {"tests/test_glossary.py": "1 failed, 9 passed"}
    markdown, document = write_report([result, compare(stored, stored, patterns, name="00_same")], environment, checks, tmp_path)
    text = markdown.read_text(encoding="utf-8")
    assert "| 99_tiny | a claim changed (an assert failed) | 1 | 1 |" in text and "| 00_same | unchanged | 0 | 0 |" in text
    assert "tf-nightly 2.99.0.dev1" in text and "`tests/test_glossary.py`: 1 failed, 9 passed" in text
    assert "+[stdout] value 1.0001" in text and "## 00_same" not in text  # only what changed gets a section
    loaded = json.loads(document.read_text(encoding="utf-8"))
    assert loaded["notebooks"][0]["verdict"] == "a claim changed (an assert failed)" and loaded["notebooks"][0]["changed"][0]["cell"] == 1


def test_the_drift_requirements_move_only_tensorflow_keras_and_tensorboard() -> None:
    latest, nightly = requirement_lines(nightly=False), requirement_lines(nightly=True)
    assert {"tensorflow", "keras", "tensorboard"} <= set(latest) and not any(line.startswith("tensorflow==") for line in latest)
    assert {"tf-nightly", "keras-nightly", "tb-nightly"} <= set(nightly) and "tensorflow" not in nightly
    pinned = [line for line in latest if "==" in line]
    assert pinned and pinned == [line for line in nightly if "==" in line]  # everything else stays as requirements.txt pins it
    assert drift_root().name == "drift" and drift_root().parent == build_root()


def test_the_version_line_is_not_drift_and_the_drift_run_s_paths_read_as_stored(patterns: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    everything = patterns + drift_patterns()
    stored = new_notebook(cells=[cell("setup()", stdout("Python 3.11 | tensorflow 2.21.0 | keras 3.15.1\n"))])
    executed = new_notebook(cells=[cell("setup()", stdout("Python 3.11 | tensorflow 2.23.0.dev20261026 | keras 3.16.0.dev2026102704\n"))])
    assert compare(stored, executed, everything).changed == []
    assert [change.cell for change in compare(stored, executed, patterns).changed] == [1]  # nbval's sanitizer alone sees it
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(repo_root() / "build" / "drift" / "work" / "build"))  # what execute_all sets
    assert display_path(build_root() / "05_checkpoints" / "ckpt-1") == "build/05_checkpoints/ckpt-1"


def test_api_names_whose_status_changed_are_listed(tmp_path: Path, patterns: list[Any]) -> None:
    changes = api_changes({"tf.a": "ok", "tf.b": "ok", "tf.c": "deprecated"}, {"tf.a": "deprecated", "tf.b": "ok", "tf.c": "missing"})
    assert changes == {"tf.a": "ok → deprecated", "tf.c": "deprecated → missing"}
    stored, _ = pair()
    markdown, document = write_report([compare(stored, stored, patterns, name="00")], {}, {}, tmp_path, changes)
    assert "- `tf.a`: ok → deprecated" in markdown.read_text(encoding="utf-8")
    assert json.loads(document.read_text(encoding="utf-8"))["api_changes"] == changes


def test_result_data_is_compared_like_nbval_but_raster_figures_are_not(patterns: list[Any]) -> None:
    def result(data: dict[str, str]) -> Any:
        return new_notebook(cells=[cell("show()", new_output("display_data", data=data))])

    stored = result({"text/plain": "<Figure>", "image/png": "AAAA", "text/html": "<b>1</b>"})
    assert compare(stored, result({"text/plain": "<Figure>", "image/png": "BBBB", "text/html": "<b>1</b>"}), patterns).changed == []
    html_changed = compare(stored, result({"text/plain": "<Figure>", "image/png": "AAAA", "text/html": "<b>2</b>"}), patterns)
    assert html_changed.changed[0].diff == ["-[display_data text/html] <b>1</b>", "+[display_data text/html] <b>2</b>"]
