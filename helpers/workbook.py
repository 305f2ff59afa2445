"""Run the whole workbook with papermill, or refresh the notebooks' stored outputs.

    python -m helpers.workbook list
    python -m helpers.workbook run [--only 01 03] [--fast] [-p SEED 7] [--output-dir DIR]
    python -m helpers.workbook refresh [01 ...]
    python -m helpers.workbook book
    python -m helpers.workbook lab [--port 8888]

``run`` executes the notebooks in order into ``build/executed/`` (the sources are not touched),
shows progress, prints a table of notebook, status and wall time (also written to
``build/executed/report.md``), builds the HTML book of that run in ``build/book/``
(:mod:`helpers.book`) and exits 1 naming the notebook and cell of every failure. ``book`` builds the
book from the stored outputs instead; ``lab`` opens the workbook in JupyterLab.

``refresh`` is for contributors: it executes each notebook from top to bottom into the build
area and, only if that run succeeds, replaces the stored notebook with the executed copy,
stripped of run-specific metadata (papermill timings, execution timestamps) and with each cell's
consecutive stream outputs merged into one (a flush between two prints would otherwise show as a
stray blank line), so that strict nbval validates against one clean run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import nbformat

from helpers.paths import NOTEBOOKS_DIR, build_root, display_path, repo_root

#: Cell-level metadata keys that change on every run and are removed from stored notebooks.
VOLATILE_CELL_KEYS = ("papermill", "execution", "ExecuteTime", "collapsed", "scrolled")
VOLATILE_NOTEBOOK_KEYS = ("papermill", "widgets")


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


def strip_volatile(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Prepare an executed notebook for storage, in place.

    Removes run-specific metadata (timings, timestamps) and merges each cell's consecutive
    stream outputs of the same name (nbconvert's ``CoalesceStreamsPreprocessor``; nbval merges
    streams the same way before comparing, so validation is unaffected).
    """
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    for key in VOLATILE_NOTEBOOK_KEYS:
        notebook.get("metadata", {}).pop(key, None)
    for cell in notebook.get("cells", []):
        metadata = cell.get("metadata", {})
        for key in VOLATILE_CELL_KEYS:
            metadata.pop(key, None)
    CoalesceStreamsPreprocessor().preprocess(notebook, {})
    return notebook


_HEADING_ID = re.compile(r'<h[1-6] id="([^"]+)"')
_HREF = re.compile(r'<a href="([^"]+)"')


def _markdown_to_html(text: str) -> str:
    """Render Markdown as nbconvert does for a notebook's markdown cells (so ids and links match)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def heading_anchors(notebook: Path) -> set[str]:
    """The anchors of a notebook's headings (``#Heading-text``), as JupyterLab and nbconvert's HTML make them."""
    cells = nbformat.read(notebook, as_version=4).cells
    html = "\n".join(_markdown_to_html(cell.source) for cell in cells if cell.cell_type == "markdown")
    return {unquote(anchor) for anchor in _HEADING_ID.findall(html)}


def link_targets(markdown: str) -> list[str]:
    """Every link target of a Markdown text, in order (as rendered, so code spans hold no links)."""
    return [unquote(target) for target in _HREF.findall(_markdown_to_html(markdown))]


def run_command(args: argparse.Namespace) -> int:
    paths = select(notebooks(), args.only)
    parameters: dict[str, object] = {name: parse_value(value) for name, value in args.parameter}
    if args.fast:
        parameters["FAST"] = True
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
    from helpers import book

    chapters = [book.Chapter(result.output, result.ok, result.seconds) for result in results if result.output.is_file()]
    started = time.perf_counter()
    index = book.build(chapters, build_root() / "book", notebooks_dir=NOTEBOOKS_DIR)
    print(f"book: {display_path(index)} ({time.perf_counter() - started:.1f} s; open it in a browser, it works offline)")
    failures = [result for result in results if not result.ok]
    for result in failures:
        print(f"FAILED {result.name}: {result.failure} (see {display_path(result.output)})", file=sys.stderr)
    return 1 if failures else 0


def book_command(_: argparse.Namespace) -> int:
    """Build the book from the notebooks' stored outputs, without executing anything."""
    from helpers import book

    index = book.build([book.Chapter(path) for path in notebooks()], build_root() / "book", notebooks_dir=NOTEBOOKS_DIR)
    print(f"book: {display_path(index)}")
    return 0


def refresh_command(args: argparse.Namespace) -> int:
    paths = select(notebooks(), args.notebooks)
    staging = build_root() / "refresh"
    failed = False
    for path in paths:
        print(f"refreshing {path.stem} ...", flush=True)
        result = execute(path, staging / path.name, {}, progress=not args.no_progress)
        if not result.ok:
            print(f"  FAILED ({result.failure}); {path.name} left unchanged, see {display_path(result.output)}", file=sys.stderr)
            failed = True
            continue
        executed = nbformat.read(result.output, as_version=4)
        nbformat.write(strip_volatile(executed), path)
        print(f"  stored clean outputs ({result.seconds:.1f} s)")
    return 1 if failed else 0


def lab_arguments(port: int, token: str, *, as_root: bool | None = None) -> list[str]:
    """The ``jupyter lab`` command line of ``make lab``: on 127.0.0.1 only, with a token, no news or update checks.

    As root (a container) JupyterLab refuses to start without ``--allow-root``, so it is added there.
    The news feed and the update check would each try the network and ask the learner first.
    """
    arguments = [
        sys.executable, "-m", "jupyterlab",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--no-browser",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={repo_root()}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if as_root if as_root is not None else os.geteuid() == 0:
        arguments.append("--allow-root")
    return arguments


#: Jupyter configuration ``make lab`` adds: ``labconfig/default_setting_overrides.json`` sets JupyterLab's
#: defaults to fetch no news and check for no update (a learner's own settings still win).
LAB_CONFIG_DIR = Path(__file__).resolve().parent / "lab_config"


def lab_environment() -> dict[str, str]:
    """The environment of ``make lab``'s JupyterLab and its kernels.

    This one plus :data:`LAB_CONFIG_DIR` on Jupyter's config path, and the virtual environment's
    ``bin`` folder first on ``PATH``: ``make lab`` runs ``.venv/bin/python`` without activating the
    environment, and ``%tensorboard`` looks for the ``tensorboard`` program on ``PATH``
    ("ERROR: Could not find `tensorboard`" otherwise).
    """
    config_path = os.pathsep.join(filter(None, [str(LAB_CONFIG_DIR), os.environ.get("JUPYTER_CONFIG_PATH")]))
    path = os.pathsep.join(filter(None, [str(Path(sys.executable).parent), os.environ.get("PATH")]))
    return {**os.environ, "JUPYTER_CONFIG_PATH": config_path, "PATH": path}


@contextlib.contextmanager
def lab_server(port: int, token: str, *, timeout: float = 90.0) -> Iterator[str]:
    """Start :func:`lab_arguments`'s JupyterLab, wait until it answers, yield its base URL; stop it by its process id.

    Used by the tests; ``make lab`` runs the same command in the foreground.
    """
    import subprocess
    import urllib.error
    import urllib.request

    server = subprocess.Popen(
        lab_arguments(port, token), cwd=repo_root(), env=lab_environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = server.stdout
    assert output is not None  # stdout=PIPE
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None:
                    raise RuntimeError(f"jupyter lab ended with status {server.returncode}: {output.read()[-2000:]}") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"jupyter lab did not answer on {base} within {timeout:.0f} s") from None
                time.sleep(0.25)
        yield base
    finally:
        server.terminate()  # the server shuts its kernels down
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        output.close()


def lab_command(args: argparse.Namespace) -> int:
    import secrets
    import subprocess

    token = secrets.token_urlsafe(24)
    print(f"JupyterLab on http://127.0.0.1:{args.port}/lab/tree/notebooks/00_start_here.ipynb?token={token}", flush=True)
    print("(Ctrl-C twice stops it)", flush=True)
    try:
        return subprocess.run(lab_arguments(args.port, token), cwd=repo_root(), env=lab_environment()).returncode
    except KeyboardInterrupt:
        return 0


def list_command(_: argparse.Namespace) -> int:
    for path in notebooks():
        print(path.stem)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.workbook", description="Execute or refresh the workbook's notebooks.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="execute notebooks in order into the build area and print a report")
    run.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="run only these (number prefix or name)")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help="papermill parameter, e.g. -p SEED 7")
    run.add_argument("--fast", action="store_true", help="pass FAST=True: fewer steps, same checks")
    run.add_argument("--output-dir", help="where executed copies go (default build/executed)")
    run.add_argument("--no-progress", action="store_true", help="no per-cell progress bar")
    run.set_defaults(handler=run_command)

    refresh = sub.add_parser("refresh", help="re-execute notebooks and store their clean outputs in place")
    refresh.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="number prefix or name (default: all)")
    refresh.add_argument("--no-progress", action="store_true")
    refresh.set_defaults(handler=refresh_command)

    book_parser = sub.add_parser("book", help="build the HTML book in build/book from the stored outputs (make run builds it from its own run)")
    book_parser.set_defaults(handler=book_command)

    lab = sub.add_parser("lab", help="open the workbook in JupyterLab on 127.0.0.1 (token in the printed URL)")
    lab.add_argument("--port", type=int, default=8888, help="port on 127.0.0.1 (default: 8888)")
    lab.set_defaults(handler=lab_command)

    listing = sub.add_parser("list", help="list the notebooks in order")
    listing.set_defaults(handler=list_command)

    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:
        parser.error(str(error))  # exits with status 2


if __name__ == "__main__":
    raise SystemExit(main())
