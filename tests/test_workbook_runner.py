"""helpers.workbook.executor, .commands and .refresh: selecting, running and refreshing notebooks (on tiny notebooks without TF); make run's cache."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest

from helpers.workbook import book, commands, executor, refresh
from helpers.workbook.__main__ import main

if TYPE_CHECKING:
    from conftest import ExecuteNotebook


def _notebook(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    parameters = nbformat.v4.new_code_cell("VALUE = 1")
    parameters.metadata["tags"] = ["parameters"]
    title = nbformat.v4.new_markdown_cell(f"# {path.stem}\n\nWhat {path.stem} shows.")  # a chapter has a title: the book's table of contents
    notebook.cells = [title, parameters] + [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(notebook, path)
    return path


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    monkeypatch.setattr(executor, "NOTEBOOKS_DIR", notebooks)
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    _notebook(notebooks / "00_good.ipynb", "print(VALUE * 2)")
    _notebook(notebooks / "01_bad.ipynb", "x = 1", "raise RuntimeError('boom\\nmore')")
    (notebooks / "notes.ipynb").write_text("{}")  # not NN_name: not part of the workbook
    return notebooks


def test_notebooks_are_listed_in_order(folder: Path) -> None:
    assert [path.stem for path in executor.notebooks()] == ["00_good", "01_bad"]


def test_select_by_prefix_and_unknown_selector(folder: Path) -> None:
    paths = executor.notebooks()
    assert [p.stem for p in executor.select(paths, ["01"])] == ["01_bad"]
    assert [p.stem for p in executor.select(paths, ["01_bad.ipynb", "00"])] == ["00_good", "01_bad"]
    assert executor.select(paths, None) == paths
    with pytest.raises(ValueError, match="no notebook matches '07'.*00_good, 01_bad"):
        executor.select(paths, ["07"])


@pytest.mark.parametrize(("text", "value"), [("7", 7), ("0.5", 0.5), ("True", True), ("adam", "adam"), ("'x'", "x")])
def test_parse_value_infers_types(text: str, value: object) -> None:
    assert commands.parse_value(text) == value


@dataclass(frozen=True)
class BookBuild:
    """One call of :func:`helpers.workbook.book.build`, recorded instead of run (the tiny book of tests/test_workbook_book.py builds one)."""

    chapters: list[book.Chapter]
    out_dir: Path
    notebooks_dir: Path


@pytest.fixture()
def book_builds(monkeypatch: pytest.MonkeyPatch) -> list[BookBuild]:
    """The books ``run`` asks for, recorded: what it passes to :func:`helpers.workbook.book.build`, which is not run."""
    builds: list[BookBuild] = []

    def record(chapters: Sequence[book.Chapter], out_dir: Path, *, notebooks_dir: Path) -> Path:
        builds.append(BookBuild(list(chapters), out_dir, notebooks_dir))
        return out_dir / "index.html"

    monkeypatch.setattr(book, "build_book", record)
    return builds


@pytest.mark.usefixtures("execute_notebook")
def test_run_reports_the_failing_notebook_and_cell(folder: Path, capsys: pytest.CaptureFixture[str], book_builds: list[BookBuild]) -> None:
    code = main(["run", "--no-progress", "-p", "VALUE", "21"])
    captured = capsys.readouterr()
    assert code == 1
    assert "| 00_good | ok |" in captured.out and "| 01_bad | FAILED: cell [4]" in captured.out
    # [4]: the execution count a reader sees, counting the cell papermill injects for -p
    assert "FAILED 01_bad: cell [4] `raise RuntimeError('boom\\nmore')`: RuntimeError: boom" in captured.err
    executed = nbformat.read(folder.parent / "build" / "executed" / "00_good.ipynb", as_version=4)
    outputs = [o.get("text", "") for cell in executed["cells"] for o in cell.get("outputs", [])]
    assert "42\n" in outputs  # the parameter reached the notebook
    assert (folder.parent / "build" / "executed" / "report.md").read_text().startswith("| notebook |")
    # make run ends with the book of its run, every chapter as executed, with how its run went (the build itself: tiny_book)
    [built] = book_builds
    executed_dir = folder.parent / "build" / "executed"
    assert built.out_dir == folder.parent / "build" / "book" and built.notebooks_dir == folder
    assert [(chapter.notebook, chapter.ok) for chapter in built.chapters] == [(executed_dir / "00_good.ipynb", True), (executed_dir / "01_bad.ipynb", False)]
    assert all(chapter.seconds and chapter.seconds > 0 for chapter in built.chapters)
    assert "book: build/book/index.html (" in captured.out
    assert sorted(path.name for path in (folder.parent / "build").iterdir()) == ["cache", "executed"]  # nothing else beside the book

    # the chapter that ran without a failure is in the cache: --cached reuses it, the failed one runs again
    book_builds.clear()
    assert main(["run", "--no-progress", "--cached", "-p", "VALUE", "21"]) == 1
    captured = capsys.readouterr()
    assert "    cached: key " in captured.out and "| 00_good | ok (cached: key " in captured.out and "| 01_bad | FAILED: cell [4]" in captured.out
    assert [chapter.ok for chapter in book_builds[0].chapters] == [True, False]
    # make book takes a chapter from make run's copy only for a run with the chapter's own parameters (VALUE = 1)
    book_builds.clear()
    assert main(["book"]) == 0 and "0 of 2 chapters from make run's executed copies" in capsys.readouterr().out
    assert [chapter.notebook for chapter in book_builds[0].chapters] == executor.notebooks()
    assert main(["run", "--no-progress", "--only", "00"]) == 0
    book_builds.clear()
    assert main(["book"]) == 0 and "1 of 2 chapters from make run's executed copies" in capsys.readouterr().out
    cached, stored = book_builds[0].chapters
    assert cached.notebook.parent.parent == folder.parent / "build" / "cache" / "executed" and cached.ok and stored == book.Chapter(folder / "01_bad.ipynb")


#: What ipykernel logs when a SIGINT reaches it inside a message handler. jupyter_client interrupts the kernel
#: before every graceful shutdown (``_async_shutdown_kernel`` calls ``_async_interrupt_kernel``, jupyter_client
#: 8.x), so whether this line appears depends on where the kernel is at that moment, not on the workbook.
SHUTDOWN_INTERRUPT_LINE = "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel."


@pytest.mark.usefixtures("execute_notebook")
def test_run_subset_succeeds_quietly(folder: Path, capfd: pytest.CaptureFixture[str], book_builds: list[BookBuild]) -> None:
    """One line per notebook and the report; the kernel runs over IPC, so no 'TCP without encryption' warning."""
    assert main(["run", "--only", "00", "--no-progress", "--fast"]) == 0
    out, err = capfd.readouterr()
    [built] = book_builds  # a chapter the run did not execute is in its book with its stored outputs, so every link resolves
    executed = folder.parent / "build" / "executed" / "00_good.ipynb"
    assert [(chapter.notebook, chapter.ok) for chapter in built.chapters] == [(executed, True), (folder / "01_bad.ipynb", None)]
    assert "1 notebooks** | ok" in out and out.splitlines()[:2] == ["[1/1] 00_good", out.splitlines()[1]]
    assert [line for line in err.splitlines() if line.strip() and line != SHUTDOWN_INTERRUPT_LINE] == [], err


def test_run_rejects_unknown_notebook_in_one_line(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--only", "99"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == "python -m helpers.workbook: error: no notebook matches '99'; the notebooks are: 00_good, 01_bad"


@pytest.mark.parametrize(("option", "says"), [(["-p", "FAST", "no"], "FAST = 'no' (str)"), (["-p", "SEED", "-1"], "SEED = -1 (int)")])
def test_run_refuses_a_notebook_parameter_the_chapters_refuse_before_any_kernel(
    folder: Path, capsys: pytest.CaptureFixture[str], option: list[str], says: str
) -> None:
    assert main(["run", "--no-progress", *option]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"python -m helpers.workbook: error: notebook parameter {says} is not ") and f"pass e.g. -p {option[1]} " in line
    assert not (folder.parent / "build" / "executed").exists()  # no notebook ran


@pytest.mark.usefixtures("execute_notebook")
def test_refresh_stores_clean_outputs_and_keeps_a_failing_notebook(folder: Path) -> None:
    bad_before = (folder / "01_bad.ipynb").read_text()
    assert main(["refresh", "--no-progress"]) == 1
    assert (folder / "01_bad.ipynb").read_text() == bad_before  # nothing lost
    refreshed = nbformat.read(folder / "00_good.ipynb", as_version=4)
    code_cells = [cell for cell in refreshed["cells"] if cell["cell_type"] == "code"]
    assert [cell["execution_count"] for cell in code_cells] == [1, 2]
    assert code_cells[1]["outputs"][0]["text"] == "2\n"
    assert "papermill" not in refreshed["metadata"]
    assert all("papermill" not in cell["metadata"] and "execution" not in cell["metadata"] for cell in code_cells)


def test_report_totals() -> None:
    results = [
        executor.Result("00_a", True, 1.25, Path("a")),
        executor.Result("01_b", False, 2.0, Path("b"), "cell [4] `f()`: ValueError: x"),
    ]
    table = commands.report_table(results)
    assert "| 00_a | ok | 1.2 s |" in table and "FAILED: cell [4]" in table
    assert table.splitlines()[-1] == "| **2 notebooks** | 1 failed | 3.2 s |"


def test_stored_notebooks_merge_split_streams_and_lose_run_metadata() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["papermill"] = {"duration": 1.0}
    cell = nbformat.v4.new_code_cell("...")
    cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00"}
    figure = nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>"})
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="a\n"),
        nbformat.v4.new_output("stream", name="stdout", text="b\n"),  # a flush between two prints
        figure,
        nbformat.v4.new_output("stream", name="stdout", text="c\n"),
    ]
    notebook.cells = [cell]
    stored = refresh.strip_volatile(notebook)
    assert [output.get("text") for output in stored.cells[0].outputs] == ["a\nb\n", None, "c\n"]
    assert "papermill" not in stored.metadata and "execution" not in stored.cells[0].metadata


def test_two_kernels_started_at_once_in_one_folder_both_answer(folder: Path, tmp_path: Path, execute_notebook: ExecuteNotebook) -> None:
    """The IPC sockets are unique per kernel (in the temporary folder), not ``kernel-ipc-1``... in the working folder."""
    import concurrent.futures

    slow = _notebook(folder / "02_slow.ipynb", "import time\ntime.sleep(1.0)\nprint(VALUE)")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(execute_notebook, slow, tmp_path / f"out{index}.ipynb", {"VALUE": index}, progress=False, cwd=folder) for index in range(2)]
        results = [run.result() for run in runs]
    assert all(result.ok for result in results), [result.failure for result in results]
    assert sorted(path.name for path in folder.iterdir()) == ["00_good.ipynb", "01_bad.ipynb", "02_slow.ipynb", "notes.ipynb"]  # no socket files left behind
