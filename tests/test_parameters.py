"""helpers.parameters: the check of the notebook parameters, on its own and as every chapter runs it.

The chapters are checked without a kernel: papermill's own ``parameterize_notebook`` injects the values
after the ``parameters`` cell (nothing executes), then the parameters cell, the injected cell and the setup
cell's statements up to and including the ``helpers.check_parameters(...)`` call run in this process.
One real papermill run shows the whole path: a wrong ``-p`` stops a chapter within seconds.
"""

from __future__ import annotations

import ast
import os
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from papermill.parameterize import parameterize_notebook

from helpers import ParameterError, check_parameters
from helpers.parameters import PARAMETERS
from helpers.workbook import executor

NOTEBOOKS = executor.notebooks()
#: For each notebook parameter, a value of the wrong type as papermill's CLI passes it (``-p FAST no``, ``-p SEED abc``).
WRONG_TYPE = {"SEED": "abc", "FAST": "no"}
#: Values the chapters must accept (the defaults and the test suite's other run).
GOOD = [{"SEED": 0, "FAST": False}, {"SEED": 1234, "FAST": True}, {"SEED": 2**32 - 1, "FAST": False}]


def test_every_parameter_has_a_wrong_value_to_test() -> None:
    assert sorted(WRONG_TYPE) == sorted(PARAMETERS)


@pytest.mark.parametrize("values", GOOD, ids=str)
def test_accepted_values_pass_silently(values: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    assert check_parameters(**values) is None
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(
    ("name", "value", "received"),
    [
        ("FAST", "no", "'no' (str)"),
        ("FAST", "False", "'False' (str)"),
        ("FAST", 0, "0 (int)"),
        ("FAST", 1.0, "1.0 (float)"),
        ("FAST", None, "None (NoneType)"),
        ("SEED", "abc", "'abc' (str)"),
        ("SEED", "7", "'7' (str)"),
        ("SEED", 7.0, "7.0 (float)"),
        ("SEED", True, "True (bool)"),
        ("SEED", None, "None (NoneType)"),
        ("SEED", -1, "-1 (int)"),
        ("SEED", 2**32, "4294967296 (int)"),
    ],
)
def test_a_wrong_value_is_one_error_naming_the_parameter_and_what_it_accepts(name: str, value: object, received: str) -> None:
    with pytest.raises(ParameterError) as caught:
        check_parameters(**{name: value})
    accepts = {"SEED": "an int in [0, 2**32)", "FAST": "True or False"}[name]
    example = {"SEED": "7", "FAST": "True"}[name]
    assert str(caught.value) == f"notebook parameter {name} = {received} is not {accepts}: pass e.g. -p {name} {example}"
    assert isinstance(caught.value, ValueError)


def test_every_wrong_parameter_is_named_in_the_one_error() -> None:
    with pytest.raises(ParameterError, match=r"^notebook parameter SEED = 'abc' .*; notebook parameter FAST = 'no' .*$"):
        check_parameters(SEED="abc", FAST="no")


def test_a_name_that_is_not_a_parameter_is_a_mistake_in_the_chapter() -> None:
    with pytest.raises(TypeError, match="got EPOCHS; the notebook parameters are SEED, FAST"):
        check_parameters(SEED=0, EPOCHS=3)


def test_the_range_of_seed_is_what_numpy_seeding_accepts() -> None:
    import numpy as np

    np.random.seed(2**32 - 1)
    with pytest.raises(ValueError):
        np.random.seed(2**32)
    check_parameters(SEED=2**32 - 1)
    with pytest.raises(ParameterError):
        check_parameters(SEED=2**32)


def run_until_the_check(path: Path, parameters: dict[str, object]) -> dict[str, object]:
    """Inject ``parameters`` as papermill does and run a chapter's first cells up to its parameter check, in this process.

    Returns the namespace. Fails if the setup cell has no ``helpers.check_parameters(...)`` call, or imports
    TensorFlow or Keras before it.
    """
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["papermill"] = {}  # what papermill's execute_notebook adds before it parameterizes
    injected = parameterize_notebook(notebook, parameters)
    code = [cell for cell in injected.cells if cell.cell_type == "code"]
    assert "injected-parameters" in code[1].metadata["tags"]
    statements = ast.parse(code[2].source).body
    calls = [index for index, statement in enumerate(statements) if _is_check_call(statement)]
    assert calls, f"{path.stem}'s setup cell does not call helpers.check_parameters"
    before = statements[: calls[0] + 1]
    imported = [alias.name for statement in before if isinstance(statement, ast.Import | ast.ImportFrom) for alias in statement.names]
    imported += [statement.module or "" for statement in before if isinstance(statement, ast.ImportFrom)]
    assert not [name for name in imported if name.split(".")[0] in ("tensorflow", "keras")], f"{path.stem} imports TensorFlow before the check"
    namespace: dict[str, object] = {}
    exec(compile(code[0].source + "\n" + code[1].source, f"{path.stem}:parameters", "exec"), namespace)
    exec(compile(ast.Module(body=before, type_ignores=[]), f"{path.stem}:setup", "exec"), namespace)
    return namespace


def _is_check_call(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and ast.unparse(statement.value.func) == "helpers.check_parameters"


@pytest.mark.parametrize("name", list(PARAMETERS))
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_every_chapter_refuses_a_wrong_type_for_each_parameter_before_tensorflow(path: Path, name: str) -> None:
    with pytest.raises(ParameterError, match=rf"^notebook parameter {name} = {WRONG_TYPE[name]!r} \(str\) is not "):
        run_until_the_check(path, {name: WRONG_TYPE[name]})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_every_chapter_accepts_its_defaults_and_the_other_run(path: Path) -> None:
    assert run_until_the_check(path, {})["FAST"] is False
    namespace = run_until_the_check(path, {"SEED": 1234, "FAST": True})
    assert (namespace["SEED"], namespace["FAST"]) == (1234, True)


def test_papermill_with_a_wrong_fast_fails_within_seconds(tmp_path: Path, python: str) -> None:
    """The issue's command, ``papermill 05_checkpoints.ipynb out.ipynb -p FAST no``: it failed only late, or ran."""
    chapter = next(path for path in NOTEBOOKS if path.stem.startswith("05"))
    command = [python, "-m", "papermill", str(chapter), str(tmp_path / "out.ipynb"), "-p", "FAST", "no", "--cwd", str(chapter.parent)]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=_env(tmp_path))
    seconds = time.monotonic() - start
    assert result.returncode != 0
    assert "ParameterError: notebook parameter FAST = 'no' (str) is not True or False: pass e.g. -p FAST True" in result.stderr, result.stderr[-2000:]
    assert seconds < 20, f"failed after {seconds:.1f} s"
    assert not (tmp_path / "build").exists()  # stopped before its build folder was made


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "WORKBOOK_BUILD_DIR": str(tmp_path / "build")}
