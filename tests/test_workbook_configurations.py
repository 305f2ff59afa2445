"""helpers.workbook.configurations: the configurations, the report and the command's refusals, without running a notebook."""

from __future__ import annotations

import pytest

from helpers.environment import ONEDNN_VARIABLE
from helpers.workbook import configurations
from helpers.workbook.commands import main
from helpers.workbook.drift.compare import CellChange, NotebookDrift


def test_both_kernel_families_are_configured_by_the_one_variable() -> None:
    settings = {entry.name: entry.variables for entry in configurations.CONFIGURATIONS}
    assert settings == {"onednn-off": {ONEDNN_VARIABLE: "0"}, "onednn-on": {ONEDNN_VARIABLE: "1"}}
    assert configurations.environment_of(configurations.configuration("onednn-on"))[ONEDNN_VARIABLE] == "1"


def test_an_unknown_configuration_is_refused_naming_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="no configuration 'gpu'; known: onednn-off, onednn-on"):
        configurations.configuration("gpu")
    assert main(["configs", "gpu"]) == 2
    assert capsys.readouterr().err == "python -m helpers.workbook: error: no configuration 'gpu'; known: onednn-off, onednn-on\n"


def test_a_bad_only_is_refused_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["configs", "onednn-on", "--only", "77"]) == 2
    assert "no notebook matches '77'" in capsys.readouterr().err


def test_the_report_names_the_variables_what_tensorflow_said_and_each_change() -> None:
    entry = configurations.configuration("onednn-on")
    drifts = [
        NotebookDrift(name="06_tensorboard", ran=True, changed=[CellChange(12, "print(kernels)", ["-MatMul", "+_MklMatMul"])], seconds=20.0),
        NotebookDrift(name="10_inside_fit", ran=False, failure="cell 30 `assert stopped`: AssertionError: ", failed_assert=True, seconds=9.0),
    ]
    report = configurations.markdown_report([(entry, True, drifts)], "python -m helpers.workbook configs onednn-on")
    assert "`TF_ENABLE_ONEDNN_OPTS=1`; TensorFlow reports oneDNN kernels on." in report
    assert "Every notebook ran: no, 10_inside_fit failed." in report
    assert "| 06_tensorboard | 1 cell(s) changed | 1 | 0 | 20.0 s |" in report
    assert "| 10_inside_fit | a claim changed (an assert failed) | 0 | 0 | 9.0 s |" in report
    assert "### 06_tensorboard" in report and "+_MklMatMul" in report and "**Stopped at** cell 30" in report
