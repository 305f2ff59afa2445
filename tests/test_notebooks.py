"""Every notebook: hygiene of the stored file, its exercises, and a papermill run with other parameters.

Strict output validation is nbval's job: `pytest` collects `notebooks/*.ipynb` with `--nbval`
(see pyproject.toml) and compares every stored output with a fresh run, stubs unsolved. The
papermill runs here fill in every exercise's wrong and right answers, at two parameter sets (another
seed in the fast mode, and the default seed in the full mode with the other family of CPU kernels), so a
check whose verdict depends on SEED or FAST fails one of them, and every chapter's asserts run with
oneDNN's kernels and with Eigen's.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import nbformat
import pytest

from helpers.environment import ONEDNN_VARIABLE, onednn_enabled
from helpers.parameters import PARAMETERS, check_parameters
from helpers.workbook import executor, exercise_layout

NOTEBOOKS = executor.notebooks()
MAX_NOTEBOOK_BYTES = 1_500_000  # figures are PNG; a notebook past this stores too much
MIN_EXERCISES = 2
#: Parameters for the second run: another seed and the fast mode. Asserts must hold here too.
OTHER_PARAMETERS = {"SEED": 1234, "FAST": True}
#: The notebook's own default seed in the full mode: with OTHER_PARAMETERS, the exercises' checks run at both seeds and both modes.
FULL_PARAMETERS = {"FAST": False}
#: Each parameter set the answered copy runs with, whether it runs with the other CPU kernels, and its name in the test id.
#: The full-mode run sets TF_ENABLE_ONEDNN_OPTS to the opposite of this machine's default, so every chapter's asserts
#: also run in the other kernel family (oneDNN's or Eigen's; README, *Kernel configurations*); nbval runs the default.
ANSWERED_RUNS = {"other-seed-fast": (OTHER_PARAMETERS, False), "default-seed-full-other-kernels": (FULL_PARAMETERS, True)}
#: The line every setup cell runs right after `import helpers`, before TensorFlow loads (helpers.parameters).
CHECK_CALL = f"helpers.check_parameters({', '.join(f'{name}={name}' for name in PARAMETERS)})"
ABSOLUTE_PATH = re.compile(r"(/(home|root|tmp|work|Users|private|var/folders)/|[A-Z]:\\\\)")


@pytest.mark.parametrize("run", list(ANSWERED_RUNS))
def test_the_answered_runs_pass_values_every_chapter_accepts(run: str) -> None:
    check_parameters(**ANSWERED_RUNS[run][0])


def test_the_workbook_has_its_notebooks_in_order() -> None:
    names = [path.stem for path in NOTEBOOKS]
    assert names[:2] == ["00_start_here", "01_global_step"]
    numbers = [int(name[:2]) for name in names]
    assert numbers == list(range(len(numbers))), "notebook numbers must run 00, 01, 02, ... without gaps"


def test_start_here_lists_every_notebook() -> None:
    text = "".join(cell.source for cell in nbformat.read(NOTEBOOKS[0], as_version=4).cells)
    for path in NOTEBOOKS:
        assert f"`{path.stem}`" in text, f"00_start_here does not mention {path.stem}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_hygiene(path: Path) -> None:
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    assert "papermill" not in notebook.metadata, "stored with run metadata: use `make refresh`"

    cells = notebook.cells
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith(f"# {path.stem[:2]} · ")
    code = [cell for cell in cells if cell.cell_type == "code"]
    tagged = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    defaults = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(tagged[0].source).body if isinstance(node, ast.Assign)}
    assert list(defaults) == list(PARAMETERS), f"the parameters cell sets {list(defaults)}, not the notebook parameters {list(PARAMETERS)}"
    check_parameters(**defaults)
    assert defaults["FAST"] is False, "the stored outputs are the full run's"
    assert code.index(tagged[0]) == 0, "the parameters cell comes before any other code"

    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), f"execution counts {counts}: store one clean run (`make refresh`)"
    text = "\n".join(cell.source for cell in cells)
    assert "quiet_tensorflow_logs()" in code[1].source, "the setup cell silences TF before importing it"
    assert CHECK_CALL in code[1].source, f"the setup cell checks the parameters first: {CHECK_CALL}"
    assert text.count("helpers.run_dir(") == 1, "one build folder per notebook"
    for cell in code:
        assert cell.source.strip(), "no empty code cells"
        # run alone (its variable undefined), IPython would write a file literally named `{VAR}` beside the notebook
        assert not re.match(r"%%writefile .*[{$]", cell.source), "write a script to a path in a variable with Path(...).write_text"
        assert "papermill" not in cell.metadata and "execution" not in cell.metadata
        for output in cell.outputs:
            assert output.output_type != "error", f"stored error in cell [{cell.execution_count}]"
            if output.output_type == "stream":
                assert output.name == "stdout" or not output.text.strip(), f"stderr in cell [{cell.execution_count}]: {output.text[:200]}"
            rendered = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            assert not ABSOLUTE_PATH.search(rendered), f"absolute path in cell [{cell.execution_count}]: {rendered[:200]}"
    assert not ABSOLUTE_PATH.search(text), "absolute path in the notebook's source"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_exercises_are_stored_unsolved(path: Path) -> None:
    """The reader gets the task, not the answer: stubs unsolved, solutions collapsed below the check."""
    notebook = nbformat.read(path, as_version=4)
    found = exercise_layout.find(notebook)  # raises ExerciseLayoutError naming the cell that breaks the layout
    assert len(found) >= MIN_EXERCISES, f"{path.stem} has {len(found)} exercises"
    for exercise in found:
        task = notebook.cells[exercise.stub - 1]
        assert task.cell_type == "markdown" and f"**Exercise {exercise.number}.**" in task.source
        printed = "".join(output.get("text", "") for output in notebook.cells[exercise.check].outputs)
        assert printed.startswith(f"Exercise {exercise.number}: not solved yet. Hint: "), (exercise.number, printed)


@pytest.mark.notebook
@pytest.mark.parametrize("run", list(ANSWERED_RUNS))
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs_with_the_exercises_answered(path: Path, run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every exercise answered with each of its wrong answers, then each of its right answers.

    The notebook's own asserts must pass; each check must reject every wrong answer stored in its
    solution cell's metadata, with feedback naming that answer's mistake, and accept every right
    answer (see :func:`helpers.workbook.exercise_layout.with_answers`). Run at each of ``ANSWERED_RUNS``.
    """
    parameters, other_kernels = ANSWERED_RUNS[run]
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    if other_kernels:  # the kernel started for this notebook inherits the setting
        monkeypatch.setenv(ONEDNN_VARIABLE, "0" if onednn_enabled() else "1")
    answered = tmp_path / "answered" / path.name
    answered.parent.mkdir()
    nbformat.write(exercise_layout.with_answers(nbformat.read(path, as_version=4)), answered)
    result = executor.execute(answered, tmp_path / path.name, dict(parameters), progress=False, cwd=path.parent)
    kernels = f" and {ONEDNN_VARIABLE}={os.environ[ONEDNN_VARIABLE]}" if other_kernels else ""
    assert result.ok, f"{path.stem} with {parameters}{kernels} and the exercises answered: {result.failure}"
    executed = nbformat.read(result.output, as_version=4)
    injected = [cell for cell in executed.cells if "injected-parameters" in cell.metadata.get("tags", [])]
    assert injected and all(f"{name} = {value!r}" in injected[0].source for name, value in parameters.items())
    assert (tmp_path / "build" / path.stem).is_dir(), "the notebook writes under its own build folder"


def test_notebooks_folder_holds_only_the_chapters_and_their_pages() -> None:
    """Nothing a run writes lands beside the notebooks (they write under build/ only)."""
    folder = NOTEBOOKS[0].parent
    stray = sorted(entry.name for entry in folder.iterdir() if not entry.name.startswith(".") and entry.suffix not in (".ipynb", ".md"))
    assert stray == ["locales"], f"files in notebooks/ that are not notebooks, pages or their translations: {stray}"
    translations = {path.relative_to(folder / "locales").as_posix() for path in (folder / "locales").rglob("*") if path.is_file()}
    pages = [page.stem for page in (*NOTEBOOKS, *folder.glob("*.md"))] + ["index", "teaching"]
    assert translations == {f"zh_CN/LC_MESSAGES/{page}.po" for page in pages}, "only .po files: Sphinx's .mo files go to the build"

