"""``python -m helpers.workbook lab [--port 8888]`` (``make lab``): the workbook in JupyterLab, on 127.0.0.1 only.

:func:`lab_arguments` is the command line, :func:`lab_environment` its environment (this folder's
``lab_config/`` on Jupyter's config path), :func:`lab_server` the same server started for the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from helpers.paths import repo_root


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
