"""Run a real TensorBoard server on loopback and ask it for data.

The workbook checks what TensorBoard shows, not only what is in the event files. Starting
``tensorboard --logdir DIR`` by hand leaves a process behind and a port taken; :func:`serve`
starts it as a subprocess on ``127.0.0.1`` and a free port, waits until it answers, yields its
base URL and always stops it, also when the block raises; :func:`serve_process` does the same
and yields a :class:`Server`, the URL with the process id, for a chapter that stops the server
itself. :func:`wait_for_runs` waits until the server has found the runs, :func:`fetch_scalars`
asks the scalars plugin for one run and tag, and :func:`poll_json` asks any route until its
answer is ready (a plugin that reads its data in the background). Only ``127.0.0.1`` is ever
contacted.

Reading event files without a server is :mod:`helpers.logs` (``read_scalars``, ``read_summaries``).
Named ``tensorboard_server``, not ``tensorboard``, so that ``from helpers import tensorboard_server``
never hides the ``tensorboard`` package in a chapter that uses both.

TensorFlow is not imported; ``tensorboard`` is, inside the functions that need it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from helpers.ports import LOOPBACK, free_port
from helpers.processes import Deadline, stop

HOST = LOOPBACK
#: How many characters of the server's stderr an error message quotes.
STDERR_TAIL_CHARS = 2000


class TensorBoardError(RuntimeError):
    """The TensorBoard server did not start, died, or answered a request with an error."""


def tensorboard_executable() -> Path:
    """The ``tensorboard`` script installed next to this Python interpreter."""
    path = Path(sys.executable).parent / ("tensorboard.exe" if os.name == "nt" else "tensorboard")
    if not path.is_file():
        raise TensorBoardError(f"no tensorboard executable next to the Python interpreter ({path.name} in {path.parent.name}/)")
    return path


def _check_loopback(url: str) -> None:
    host = urllib.parse.urlsplit(url).hostname
    if host != HOST:
        raise ValueError(f"only {HOST} is contacted, got host {host!r} in {url!r}")


def _get(url: str, timeout: float) -> bytes:
    _check_loopback(url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never go through a proxy
    with opener.open(url, timeout=timeout) as response:
        return response.read()


def _tail(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    return text[-STDERR_TAIL_CHARS:].strip() or "(empty)"


@dataclass(frozen=True)
class Server:
    """A running TensorBoard: its base URL (``http://127.0.0.1:PORT``) and its process id."""

    base_url: str
    pid: int


@contextmanager
def serve(
    logdir: str | os.PathLike[str],
    *,
    port: int | None = None,
    timeout: float = 60.0,
    extra_args: Sequence[str] = (),
) -> Iterator[str]:
    """Run ``tensorboard --logdir LOGDIR --host 127.0.0.1 --port PORT``; yield ``http://127.0.0.1:PORT``.

    The same as :func:`serve_process`, which it uses, yielding only the base URL.
    """
    with serve_process(logdir, port=port, timeout=timeout, extra_args=extra_args) as server:
        yield server.base_url


@contextmanager
def serve_process(
    logdir: str | os.PathLike[str],
    *,
    port: int | None = None,
    timeout: float = 60.0,
    extra_args: Sequence[str] = (),
) -> Iterator[Server]:
    """Run ``tensorboard --logdir LOGDIR --host 127.0.0.1 --port PORT``; yield a :class:`Server`.

    - ``logdir`` must be an existing folder, else ``FileNotFoundError`` (nothing is started).
    - ``port`` defaults to a free one (:func:`free_port`).
    - The server is polled until it answers ``/data/runs``; if it exits first, or does not answer
      within ``timeout`` seconds, :class:`TensorBoardError` quotes the tail of its stderr.
    - On leaving the block, normally or by an exception, the process is terminated (killed if it
      does not stop within 10 s) and waited for; one the block already stopped by its ``pid``
      (``os.kill(server.pid, signal.SIGTERM)``) is only waited for, so its id is free afterwards.
    """
    logdir = Path(logdir)
    if not logdir.is_dir():
        raise FileNotFoundError(f"TensorBoard log folder {logdir.name!r} does not exist")
    port = free_port() if port is None else int(port)
    base_url = f"http://{HOST}:{port}"
    command = [str(tensorboard_executable()), "--logdir", str(logdir), "--host", HOST, "--port", str(port), *extra_args]
    with tempfile.TemporaryDirectory(prefix="tensorboard-") as scratch:
        stderr_path = Path(scratch) / "stderr.txt"
        with open(stderr_path, "wb") as stderr, open(os.devnull, "wb") as devnull:
            process = subprocess.Popen(command, stdout=devnull, stderr=stderr, stdin=subprocess.DEVNULL)
            try:
                deadline = Deadline(timeout)
                while True:
                    if process.poll() is not None:
                        raise TensorBoardError(
                            f"tensorboard exited with code {process.returncode} before answering; its stderr ends with:\n{_tail(stderr_path)}"
                        )
                    try:
                        _get(f"{base_url}/data/runs", timeout=2.0)
                        break
                    except (urllib.error.URLError, ConnectionError, TimeoutError):
                        pass
                    if deadline.passed():
                        raise TensorBoardError(
                            f"tensorboard did not answer on {base_url} within {timeout:g} s; its stderr ends with:\n{_tail(stderr_path)}"
                        )
                    deadline.pause()
                yield Server(base_url=base_url, pid=process.pid)
            finally:
                stop(process)


def fetch_json(base_url: str, path: str, params: dict[str, str] | None = None, *, timeout: float = 10.0) -> object:
    """GET ``base_url + path`` (with query ``params``) from a loopback server and decode its JSON."""
    url = f"{base_url.rstrip('/')}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    try:
        return json.loads(_get(url, timeout=timeout))
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", errors="replace")[:500]
        raise TensorBoardError(f"GET {path} answered {exc.code}: {body}") from exc
    except (urllib.error.URLError, ConnectionError) as exc:
        raise TensorBoardError(f"no TensorBoard answering at {base_url} ({exc})") from exc


def poll_json(
    base_url: str,
    path: str,
    params: dict[str, str] | None = None,
    *,
    ready: Callable[[object], bool],
    wait: float = 30.0,
    timeout: float = 10.0,
) -> object:
    """GET ``path`` (like :func:`fetch_json`) until ``ready(answer)`` is true; return that answer.

    A plugin that reads its data in a background thread (the Debugger V2 plugin reloads its dump
    every few seconds) first answers with what it has read so far. An answer that is not ready,
    or an HTTP 400 or 404 (no such run yet), is retried every 0.25 s for up to ``wait`` seconds;
    after that :class:`TensorBoardError` quotes the last answer. A server that is not there
    raises it at once. ``timeout`` bounds each request.
    """
    deadline = Deadline(wait)
    while True:
        try:
            answer = fetch_json(base_url, path, params, timeout=timeout)
        except TensorBoardError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, urllib.error.HTTPError) and cause.code in (400, 404)) or deadline.passed():
                raise
            answer = None
        else:
            if ready(answer):
                return answer
        if deadline.passed():
            raise TensorBoardError(f"GET {path}: no ready answer after {wait:g} s; the last one: {str(answer)[:300]}")
        deadline.pause()


def wait_for_runs(base_url: str, runs: Sequence[str], *, timeout: float = 30.0) -> list[str]:
    """Poll ``/data/runs`` until every name in ``runs`` is listed; return the sorted full list.

    The server discovers runs in the background after it starts answering, so a first
    ``/data/runs`` can be incomplete. Still missing after ``timeout`` seconds:
    :class:`TensorBoardError` naming them.
    """
    deadline = Deadline(timeout)
    while True:
        listed = fetch_json(base_url, "/data/runs")
        if not isinstance(listed, list):
            raise TensorBoardError(f"unexpected answer from /data/runs: {str(listed)[:200]}")
        missing = sorted(set(runs) - set(listed))
        if not missing:
            return sorted(listed)
        if deadline.passed():
            raise TensorBoardError(f"runs {missing} not listed by the server after {timeout:g} s (it lists {sorted(listed)})")
        deadline.pause()


def fetch_scalars(
    base_url: str, run: str, tag: str, *, min_points: int = 0, wait: float = 10.0, timeout: float = 10.0
) -> list[tuple[float, int, float]]:
    """The scalars plugin's points for one run and tag: ``[(wall_time, step, value), ...]``.

    ``run`` is the run folder relative to the server's logdir (``"."`` for the logdir itself).
    The server reads event files in the background, so an answer "no such run or tag", or
    fewer than ``min_points`` points, is retried for up to ``wait`` seconds; after that
    :class:`TensorBoardError` is raised. A server that is not there raises it at once.
    ``timeout`` bounds each request.
    """
    deadline = Deadline(wait)
    while True:
        try:
            rows = fetch_json(base_url, "/data/plugin/scalars/scalars", {"run": run, "tag": tag}, timeout=timeout)
        except TensorBoardError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, urllib.error.HTTPError) and cause.code in (400, 404)) or deadline.passed():
                raise
            deadline.pause()
            continue
        if not isinstance(rows, list):
            raise TensorBoardError(f"unexpected answer for run {run!r}, tag {tag!r}: {str(rows)[:200]}")
        if len(rows) >= min_points:
            return [(float(wall_time), int(step), float(value)) for wall_time, step, value in rows]
        if deadline.passed():
            raise TensorBoardError(f"run {run!r}, tag {tag!r}: {len(rows)} points after {wait:g} s, expected at least {min_points}")
        deadline.pause()
