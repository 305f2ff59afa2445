"""``python -m helpers.workbook lab [--port 8888]`` (``make lab``): the workbook in JupyterLab, on 127.0.0.1 only.

:func:`lab_arguments` is the command line, :func:`lab_environment` its environment (this folder's
``lab_config/`` on Jupyter's config path), :func:`lab_server` the same server started for the tests.
:func:`serve` refuses a port it cannot listen on before starting anything (:class:`PortTaken`), and
prints the address to open only once the server answers there.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from helpers.failures import CommandError, UsageError
from helpers.paths import display_path, repo_root
from helpers.ports import LOOPBACK, free_port
from helpers.processes import Deadline, stop
from helpers.workbook.editions import LANGUAGES, SOURCE_LANGUAGE


class PortTaken(UsageError):
    """``make lab``'s port cannot be listened on (in use, or reserved); the message names it and the option that picks another."""

    meaning = "a port lab cannot listen on"


class LabError(CommandError):
    """JupyterLab did not answer in time (it is stopped), or stopped with an error before it answered."""

    meaning = "JupyterLab stopped with an error or did not answer"


def port_number(text: str) -> int:
    """``--port``'s value: a TCP port number, 1 to 65535."""
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1 to 65535)")
    return port


def check_port(port: int) -> None:
    """Raise :class:`PortTaken` unless JupyterLab could listen on ``127.0.0.1:port`` now.

    Binds it as JupyterLab does (``SO_REUSEADDR``, so a port in TIME_WAIT counts as free), then lets it go.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError as error:
            reason = "another server is using it" if error.errno == errno.EADDRINUSE else error.strerror
            raise PortTaken(f'port {port} on {LOOPBACK} is not available ({reason}); pick another: make lab ARGS="--port {free_port()}"') from error


def lab_arguments(port: int, token: str, *, as_root: bool | None = None, root: Path | None = None) -> list[str]:
    """The ``jupyter lab`` command line of ``make lab``: on 127.0.0.1 only, with a token, no news or update checks.

    ``root`` is the folder it serves: the repository, or the course folder (``make lab ARGS=--course``).

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
        f"--ServerApp.root_dir={repo_root() if root is None else root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if as_root if as_root is not None else os.geteuid() == 0:
        arguments.append("--allow-root")
    return arguments


#: Jupyter configuration ``make lab`` adds: ``labconfig/default_setting_overrides.json`` sets JupyterLab's
#: defaults to fetch no news and check for no update (a learner's own settings still win).
LAB_CONFIG_DIR = Path(__file__).resolve().parent / "lab_config"


#: The languages ``make lab ARGS="--lang ..."`` opens the workbook in, the book's editions: each one's JupyterLab
#: locale (its language pack), which here has the edition's own name.
LAB_LOCALES = {language: language for language, _, _ in LANGUAGES}


def translated_root(language: str) -> Path:
    """The folder ``make lab ARGS="--lang <language>"`` serves: ``build/lab-<language>/``, translated copies in ``notebooks/``."""
    from helpers.paths import build_root

    return build_root() / f"lab-{language}"


def prepare_translated(language: str) -> Path:
    """Build the translated copies of the notebooks and a Jupyter config that opens JupyterLab in ``language``; return the folder to serve.

    The copies are rebuilt from the stored notebooks and the ``.po`` files each time (never edited), so a
    change to either shows at the next ``make lab``. ``UsageError`` for a language the workbook has no translation of.
    """
    import json
    import shutil

    from helpers.workbook import translated_copies

    if language not in LAB_LOCALES:
        raise UsageError(f"no {language!r} edition: --lang takes one of {', '.join(LAB_LOCALES)}")
    root = translated_root(language)
    shutil.rmtree(root / "notebooks", ignore_errors=True)
    translated_copies.build_translated_copies(root / "notebooks", language)
    overrides = json.loads((LAB_CONFIG_DIR / "labconfig" / "default_setting_overrides.json").read_text(encoding="utf-8"))
    overrides["@jupyterlab/translation-extension:plugin"] = {"locale": LAB_LOCALES[language]}
    config = root / "jupyter-config" / "labconfig"
    config.mkdir(parents=True, exist_ok=True)
    (config / "default_setting_overrides.json").write_text(json.dumps(overrides, indent=2, ensure_ascii=False), encoding="utf-8")
    return root


def lab_environment(language: str | None = None) -> dict[str, str]:
    """The environment of ``make lab``'s JupyterLab and its kernels.

    This one plus :data:`LAB_CONFIG_DIR` on Jupyter's config path (for ``language``, the translated
    edition's config that :func:`prepare_translated` wrote, which adds the JupyterLab locale), and the virtual environment's
    ``bin`` folder first on ``PATH``: ``make lab`` runs ``.venv/bin/python`` without activating the
    environment, and ``%tensorboard`` looks for the ``tensorboard`` program on ``PATH``
    ("ERROR: Could not find `tensorboard`" otherwise).
    """
    own = str(translated_root(language) / "jupyter-config") if language else str(LAB_CONFIG_DIR)
    config_path = os.pathsep.join(filter(None, [own, os.environ.get("JUPYTER_CONFIG_PATH")]))
    path = os.pathsep.join(filter(None, [str(Path(sys.executable).parent), os.environ.get("PATH")]))
    return {**os.environ, "JUPYTER_CONFIG_PATH": config_path, "PATH": path}


def _answers(base: str, token: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
            return True
    except (urllib.error.URLError, ConnectionError):
        return False


def wait_until_answering(server: subprocess.Popen[str], base: str, token: str, *, timeout: float) -> None:
    """Return once the server answers at ``base``; ``RuntimeError`` if it ended first, ``TimeoutError`` after ``timeout`` s."""
    deadline = Deadline(timeout)
    while not _answers(base, token):
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab ended with status {server.returncode}")
        if deadline.passed():
            raise TimeoutError(f"jupyter lab did not answer on {base} within {timeout:.0f} s")
        deadline.pause()


@contextlib.contextmanager
def lab_server(port: int, token: str, *, timeout: float = 90.0, root: Path | None = None, language: str | None = None) -> Iterator[str]:
    """Start :func:`lab_arguments`'s JupyterLab, wait until it answers, yield its base URL; stop it by its process id.

    Used by the tests; ``make lab`` runs the same command in the foreground. ``root``: as :func:`lab_arguments`;
    ``language``: a translated edition (:func:`prepare_translated`), served from its own folder.
    """
    if language is not None:
        root = prepare_translated(language)
    folder = repo_root() if root is None else root
    server = subprocess.Popen(
        lab_arguments(port, token, root=root), cwd=folder, env=lab_environment(language), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = server.stdout
    assert output is not None  # stdout=PIPE
    base = f"http://{LOOPBACK}:{port}"
    try:
        try:
            wait_until_answering(server, base, token, timeout=timeout)
        except RuntimeError as error:
            raise RuntimeError(f"{error}: {output.read()[-2000:]}") from None
        yield base
    finally:
        stop(server, grace=30)  # SIGTERM: the server shuts its kernels down
        output.close()


def course_folder() -> Path:
    """The course folder ``make lab ARGS=--course`` serves; ``UsageError`` until ``make course`` has built it."""
    from helpers.workbook.course import course_root

    root = course_root()
    if not (root / "nbgrader_config.py").is_file():
        raise UsageError(f"no course in {root}: build it first with make course")
    return root


#: How long ``make lab`` waits for JupyterLab to answer before giving up on it.
STARTUP_SECONDS = 120.0


@contextlib.contextmanager
def _ctrl_c_left_to(server: subprocess.Popen[str]) -> Iterator[None]:
    """Ignore Ctrl-C in this process while ``server``, which gets it too, handles it: the first asks, a second one stops it.
    ``SIGTERM`` (what a service manager or ``kill`` sends this process) stops the server, then this process (status 143).

    Set after the server started, since an ignored signal would be ignored by the server too.
    """

    def terminated(number: int, _frame: object) -> None:
        raise SystemExit(128 + number)  # unwinds to the finally below, which stops the server

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
        stop(server)  # when it ended, when we gave up on it (a timeout) or were told to stop: never left running


def serve(port: int, *, language: str | None = None, course: bool = False) -> int:
    """``make lab``: refuse a port that is taken, start JupyterLab, print notebook 00's address once it answers there; its status.

    ``language``: a translated edition (None or the source language: the notebooks); ``course``: the course folder.
    """
    import secrets

    check_port(port)
    language = language if language != SOURCE_LANGUAGE else None
    if course and language:
        raise UsageError("--course and --lang cannot be combined: the course is built from the English chapters")
    root = course_folder() if course else prepare_translated(language) if language else None
    token = secrets.token_urlsafe(24)
    server = subprocess.Popen(lab_arguments(port, token, root=root), cwd=root or repo_root(), env=lab_environment(language), text=True)
    with _ctrl_c_left_to(server):
        try:
            wait_until_answering(server, f"http://{LOOPBACK}:{port}", token, timeout=STARTUP_SECONDS)
        except RuntimeError:  # it ended before answering (stopped, or the port was taken meanwhile); its own log says why
            return server.returncode or 1
        except TimeoutError as error:  # the server is stopped on the way out
            raise LabError(str(error)) from None
        page = "formgrader" if course else "lab/tree/notebooks/00_start_here.ipynb"
        print(f"JupyterLab on http://{LOOPBACK}:{port}/{page}?token={token}", flush=True)
        if language:
            copies = display_path(translated_root(language) / "notebooks")
            print(f"(the {language} edition: translated copies in {copies}, rebuilt at each start; edit the .po files, not them)", flush=True)
        if course:
            print("(the course: nbgrader's formgrader; its menu Nbgrader has the assignment list too)", flush=True)
        print("(Ctrl-C twice stops it)", flush=True)
        return server.wait()
