"""Every notebook: hygiene of the stored file, its exercises' layout, and what the chapter runs need.

Executing the chapters is :mod:`chapter_runs`' job (a pytest plugin, ``-p tests.chapter_runs`` in
pyproject.toml): nbval executes each chapter once per parameter set, with every exercise answered, and
compares the stored outputs strictly at the default parameters.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from helpers.parameters import PARAMETERS, check_parameters
from helpers.workbook import executor, exercise_layout
from helpers.workbook.cache import notebook_parameters
from tests.chapter_runs import RUNS

NOTEBOOKS = executor.notebooks()
MAX_NOTEBOOK_BYTES = 1_500_000  # figures are PNG; a notebook past this stores too much
MIN_EXERCISES = 2
#: The line every setup cell runs right after `import helpers`, before TensorFlow loads (helpers.parameters).
CHECK_CALL = f"helpers.check_parameters({', '.join(f'{name}={name}' for name in PARAMETERS)})"
ABSOLUTE_PATH = re.compile(r"(/(home|root|tmp|work|Users|private|var/folders)/|[A-Z]:\\\\)")


@pytest.mark.parametrize("run", RUNS, ids=[run.name for run in RUNS])
def test_the_chapter_runs_pass_values_every_chapter_accepts(run: object) -> None:
    for path in NOTEBOOKS:
        check_parameters(**{**notebook_parameters(nbformat.read(path, as_version=4)), **run.parameters})  # type: ignore[attr-defined]


def test_the_workbook_has_its_notebooks_in_order() -> None:
    names = [path.stem for path in NOTEBOOKS]
    assert names[:2] == ["00_start_here", "01_global_step"]
    chapters = [int(path.name[:2]) for path in NOTEBOOKS if not executor.is_appendix(path)]
    assert chapters == list(range(len(chapters))), "chapter numbers must run 00, 01, 02, ... without gaps"
    appendices = [int(path.name[:2]) for path in NOTEBOOKS if executor.is_appendix(path)]
    assert appendices == list(range(100 - len(appendices), 100)), "appendices are numbered down from 99: 99, then 98 before it"
    assert names[-1] == "99_how_this_workbook_is_checked", "the appendix on how the workbook is checked comes last"


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
    defaults = notebook_parameters(notebook)
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


def test_notebooks_folder_holds_only_the_chapters_and_their_pages() -> None:
    """Nothing a run writes lands beside the notebooks (they write under build/ only)."""
    folder = NOTEBOOKS[0].parent
    stray = sorted(entry.name for entry in folder.iterdir() if not entry.name.startswith(".") and entry.suffix not in (".ipynb", ".md"))
    assert stray == ["images", "locales"], f"files in notebooks/ that are not notebooks, pages, their images or their translations: {stray}"
    images = sorted(path.relative_to(folder).as_posix() for path in (folder / "images").rglob("*") if path.is_file())
    shown = {link for path in NOTEBOOKS for link in re.findall(r"!\[[^\]]*\]\((images/[^)]+)\)", path.read_text(encoding="utf-8"))}
    assert set(images) == shown, f"images/ holds exactly the images a chapter shows (![alt](images/NAME.png)): {sorted(set(images) ^ shown)}"
    assert all(name.endswith(".png") and (folder / name).stat().st_size < 150_000 for name in images), "images are PNG files under 150 kB"
    translations = {path.relative_to(folder / "locales").as_posix() for path in (folder / "locales").rglob("*") if path.is_file()}
    pages = [page.stem for page in (*NOTEBOOKS, *folder.glob("*.md"))] + ["index"]
    assert translations == {f"zh_CN/LC_MESSAGES/{page}.po" for page in pages}, "only .po files: Sphinx's .mo files go to the build"

