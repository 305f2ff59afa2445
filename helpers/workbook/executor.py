"""Executing the workbook's notebooks: the chapter list, and :func:`execute`, the one way the project runs a notebook.

``make run``, ``make refresh``, ``make configs``, the tests and the benchmarks call :func:`execute` (papermill,
its kernel over local IPC sockets); drift's run in its own virtual environment calls :func:`execute_all` through
this module's entry point, ``python -m helpers.workbook.executor OUT WORK [NOTEBOOK ...]``, which writes
``OUT/results.json``. The commands are :mod:`helpers.workbook.commands`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.errors import first_line
from helpers.failures import UsageError
from helpers.paths import NOTEBOOKS_DIR


@dataclass
class Result:
    """The outcome of executing one notebook."""

    name: str
    ok: bool
    seconds: float
    output: Path
    failure: str = ""
    cached: str = ""  #: the cache key (short) when the copy was reused instead of executed (``make run --cached``)


#: Notebooks numbered from here on are appendices (``99_how_this_workbook_is_checked``): run, tested and translated like the
#: chapters, they sort after them, and the book lists them after its other pages.
APPENDIX_FROM = 90


def notebooks(directory: Path | None = None) -> list[Path]:
    """The workbook's notebooks in reading order (``NN_name.ipynb``; default folder ``notebooks/``), the appendices last."""
    return sorted((NOTEBOOKS_DIR if directory is None else directory).glob("[0-9][0-9]_*.ipynb"))


def is_appendix(notebook: Path) -> bool:
    """Whether ``notebook`` (``NN_name.ipynb``) is an appendix: numbered :data:`APPENDIX_FROM` or above."""
    return int(notebook.name[:2]) >= APPENDIX_FROM


def select(paths: Sequence[Path], only: Sequence[str] | None) -> list[Path]:
    """Keep the notebooks whose name starts with one of ``only`` (``"01"``, ``"01_global_step"``).

    A selector that matches nothing raises :class:`~helpers.failures.UsageError` listing the notebooks.
    """
    if not only:
        return list(paths)
    chosen: list[Path] = []
    for selector in only:
        key = Path(selector).name.removesuffix(".ipynb")
        matches = [path for path in paths if path.stem.startswith(key)]
        if not matches:
            names = ", ".join(path.stem for path in paths)
            raise UsageError(f"no notebook matches {selector!r}; the notebooks are: {names}")
        chosen.extend(match for match in matches if match not in chosen)
    return sorted(chosen)


def _ipc_kernel_manager() -> type:
    """A Jupyter kernel manager whose kernel talks over local IPC sockets instead of TCP.

    With TCP, ipykernel warns on every start that its traffic is not encrypted
    (``IPKernelApp.init_sockets``); IPC sockets are files, reachable only on this machine, so the
    warning does not apply and is not printed. The socket files are named after the connection file,
    which gets a unique name in the temporary folder, where jupyter_client puts an unnamed one: with
    no name, jupyter_client calls the sockets ``kernel-ipc-1`` ... in the current folder, so two
    kernels started at once in one folder bind the same sockets and one never answers ("Kernel didn't
    respond"). The path stays short, as a socket's must (about 100 bytes on Linux).
    """
    import tempfile
    import uuid

    from jupyter_client.manager import AsyncKernelManager

    class IpcKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: object) -> None:
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("connection_file", str(Path(tempfile.gettempdir()) / f"kernel-workbook-{uuid.uuid4().hex}.json"))
            super().__init__(**kwargs)

    return IpcKernelManager


def execute(
    notebook: Path,
    output: Path,
    parameters: dict[str, object],
    *,
    progress: bool = True,
    cwd: Path | None = None,
) -> Result:
    """Execute ``notebook`` into ``output`` with papermill, in ``cwd`` (default: the notebook's folder)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    output.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(notebook),
            str(output),
            parameters=parameters,
            cwd=str(cwd if cwd is not None else notebook.parent),
            progress_bar=progress,
            log_output=False,
            kernel_manager_class=_ipc_kernel_manager(),
            # papermill writes the whole notebook at every cell's start and end by default; a chapter of 140 cells then
            # spends a quarter to a third of its run saving (benchmarks/README.md, section 9). It is written once, at the end, also
            # when a cell fails (papermill stores the error before raising).
            request_save_on_cell_execute=False,
        )
    except PapermillExecutionError as error:
        failure = f"cell [{error.exec_count}] `{first_line(str(error.source))[:60]}`: {error.ename}: {first_line(str(error.evalue))}"
        return Result(notebook.stem, False, time.perf_counter() - start, output, failure)
    except Exception as error:  # kernel died, notebook unreadable, ...
        return Result(notebook.stem, False, time.perf_counter() - start, output, f"{type(error).__name__}: {error}")
    return Result(notebook.stem, True, time.perf_counter() - start, output)


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """Set ``variables`` in this process's environment (the kernels it starts inherit them) until the block ends."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute_all(out: Path, work: Path, only: Sequence[str] | None = None, *, label: str = "run") -> list[dict[str, Any]]:
    """Run the notebooks (in this interpreter's environment) into ``out``, their build folders under ``work``; one entry each.

    The build area is ``work/build`` and each kernel starts in ``work/notebooks``, so the paths the notebooks print
    (``build/05_checkpoints/...`` and ``../build/05_checkpoints/...``) read exactly as in the stored outputs.
    """
    kernel_folder = work / "notebooks"
    kernel_folder.mkdir(parents=True, exist_ok=True)
    results = []
    with environment({"WORKBOOK_BUILD_DIR": str(work / "build")}):
        for path in select(notebooks(), only):
            print(f"[{label}] {path.stem}", flush=True)
            result = execute(path, out / path.name, {}, progress=False, cwd=kernel_folder)
            results.append({"name": result.name, "ok": result.ok, "seconds": round(result.seconds, 1), "failure": result.failure or ""})
    return results


#: The file :func:`main` writes beside the executed notebooks: :func:`execute_all`'s entries.
RESULTS_FILE = "results.json"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m helpers.workbook.executor OUT WORK [NOTEBOOK ...]``: :func:`execute_all`, its entries in ``OUT/results.json``."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.workbook.executor",
        description="Run the notebooks into OUT, their build folders under WORK/build, and write OUT/results.json (drift runs it in its own environment).",
    )
    parser.add_argument("out", type=Path, help="where the executed notebooks and results.json go")
    parser.add_argument("work", type=Path, help="the notebooks' build folders go under WORK/build")
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = execute_all(args.out, args.work, args.notebooks or None, label="drift")
    (args.out / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
