"""Execute the workbook's notebooks with papermill: ``python -m helpers.workbook run|book|list``.

``run`` executes the notebooks in order into ``build/executed/`` (the sources are not touched),
shows progress, prints a table of notebook, status and wall time (also written to
``build/executed/report.md``), builds the HTML book of that run in ``build/book/``
(:mod:`helpers.workbook.book`) and exits 1 naming the notebook and cell of every failure (3 when the book
cannot be built; the previous one stays). ``book`` builds the book from the stored outputs instead;
``list`` names the notebooks in order. :func:`execute` is the one way the project runs a notebook:
``make run``, ``make refresh``, ``make drift``, the tests and the benchmarks all call it.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from helpers.parameters import PARAMETERS, check_parameters
from helpers.paths import NOTEBOOKS_DIR, build_root, display_path


@dataclass
class Result:
    """The outcome of executing one notebook."""

    name: str
    ok: bool
    seconds: float
    output: Path
    failure: str = ""


def notebooks(directory: Path | None = None) -> list[Path]:
    """The workbook's notebooks in reading order (``NN_name.ipynb``; default folder ``notebooks/``)."""
    return sorted((NOTEBOOKS_DIR if directory is None else directory).glob("[0-9][0-9]_*.ipynb"))


def select(paths: Sequence[Path], only: Sequence[str] | None) -> list[Path]:
    """Keep the notebooks whose name starts with one of ``only`` (``"01"``, ``"01_global_step"``).

    A selector that matches nothing raises ``ValueError`` listing the notebooks.
    """
    if not only:
        return list(paths)
    chosen: list[Path] = []
    for selector in only:
        key = Path(selector).name.removesuffix(".ipynb")
        matches = [path for path in paths if path.stem.startswith(key)]
        if not matches:
            names = ", ".join(path.stem for path in paths)
            raise ValueError(f"no notebook matches {selector!r}; the notebooks are: {names}")
        chosen.extend(match for match in matches if match not in chosen)
    return sorted(chosen)


def parse_value(text: str) -> object:
    """A parameter value as papermill's CLI would infer it: Python literal if it is one, else str."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


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
        )
    except PapermillExecutionError as error:
        first_line = (str(error.evalue).strip().splitlines() or [""])[0]
        source_line = (str(error.source).strip().splitlines() or [""])[0][:60]
        failure = f"cell [{error.exec_count}] `{source_line}`: {error.ename}: {first_line}"
        return Result(notebook.stem, False, time.perf_counter() - start, output, failure)
    except Exception as error:  # kernel died, notebook unreadable, ...
        return Result(notebook.stem, False, time.perf_counter() - start, output, f"{type(error).__name__}: {error}")
    return Result(notebook.stem, True, time.perf_counter() - start, output)


def report(results: Sequence[Result]) -> str:
    """A Markdown table of notebook, status and wall time, with a total line."""
    lines = ["| notebook | status | wall time |", "|---|---|---:|"]
    for result in results:
        status = "ok" if result.ok else f"FAILED: {result.failure}"
        lines.append(f"| {result.name} | {status} | {result.seconds:.1f} s |")
    failed = sum(not result.ok for result in results)
    total = sum(result.seconds for result in results)
    lines.append(f"| **{len(results)} notebooks** | {'ok' if not failed else f'{failed} failed'} | {total:.1f} s |")
    return "\n".join(lines)


def run_command(args: argparse.Namespace) -> int:
    paths = select(notebooks(), args.only)
    parameters: dict[str, object] = {name: parse_value(value) for name, value in args.parameter}
    if args.fast:
        parameters["FAST"] = True
    # a value a chapter would refuse in its first code cell is refused here, before any kernel starts (exit 2)
    check_parameters(**{name: value for name, value in parameters.items() if name in PARAMETERS})
    output_dir = Path(args.output_dir) if args.output_dir else build_root() / "executed"
    results: list[Result] = []
    for number, path in enumerate(paths, start=1):
        print(f"[{number}/{len(paths)}] {path.stem}", flush=True)
        result = execute(path, output_dir / path.name, parameters, progress=not args.no_progress)
        print(f"    {'ok' if result.ok else 'FAILED'} in {result.seconds:.1f} s" + (f": {result.failure}" if not result.ok else ""), flush=True)
        results.append(result)
    table = report(results)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "report.md").write_text(table + "\n", encoding="utf-8")
    print()
    print(table)
    print(f"\nexecuted copies and report.md in {display_path(output_dir)}")
    from helpers.workbook import book

    ran = {result.name: book.Chapter(result.output, result.ok, result.seconds) for result in results if result.output.is_file()}
    # a chapter this run did not execute (--only) is in the book with its stored outputs, so every link between chapters resolves
    chapters = [ran.get(path.stem, book.Chapter(path)) for path in notebooks()]
    failures = [result for result in results if not result.ok]
    started = time.perf_counter()
    try:
        index = book.build(chapters, build_root() / "book", notebooks_dir=NOTEBOOKS_DIR)
        print(f"book: {display_path(index)} ({time.perf_counter() - started:.1f} s; {book.EDITIONS_LINE}; open it in a browser, it works offline)")
    finally:  # a book that fails (BookError, reported by the command line) still lists the notebooks that failed first
        for result in failures:
            print(f"FAILED {result.name}: {result.failure} (see {display_path(result.output)})", file=sys.stderr)
    return 1 if failures else 0


def book_command(_: argparse.Namespace) -> int:
    """Build the book from the notebooks' stored outputs, without executing anything.

    A notebook that cannot be rendered raises :class:`helpers.workbook.book.BookError` naming it; the previous book stays.
    """
    from helpers.workbook import book

    index = book.build([book.Chapter(path) for path in notebooks()], build_root() / "book", notebooks_dir=NOTEBOOKS_DIR)
    print(f"book: {display_path(index)} ({book.EDITIONS_LINE})")
    return 0


def list_command(_: argparse.Namespace) -> int:
    for path in notebooks():
        print(path.stem)
    return 0
