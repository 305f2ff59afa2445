"""``make lab``: JupyterLab on 127.0.0.1 with a token, the workbook's notebooks listed, and a kernel that runs a cell."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from helpers.paths import NOTEBOOKS_DIR, repo_root
from helpers.ports import free_port
from helpers.processes import Deadline
from helpers.workbook import executor, lab
from helpers.workbook.__main__ import main


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def run_in_kernel(port: int, token: str, kernel_id: str, code: str, timeout: float = 120.0) -> tuple[str, str]:
    """Execute ``code`` through the server's websocket; return (status of the reply, text the cell printed)."""
    import websocket

    channel = websocket.create_connection(f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?token={token}", timeout=timeout)
    try:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex, "msg_type": "execute_request", "version": "5.3", "date": ""}
        content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        channel.send(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": []}))
        printed, status, idle = [], None, False
        deadline = Deadline(timeout)
        while status is None or not idle:
            assert not deadline.passed(), "the kernel did not answer in time"
            message = json.loads(channel.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind == "stream":
                printed.append(message["content"]["text"])
            elif kind == "error":
                printed.append("\n".join(message["content"]["traceback"]))
            elif kind == "execute_reply":
                status = message["content"]["status"]
            elif kind == "status" and message["content"]["execution_state"] == "idle":
                idle = True
        return status, "".join(printed)
    finally:
        channel.close()


def test_lab_arguments_bind_localhost_with_a_token_and_allow_root_only_as_root() -> None:
    arguments = lab.lab_arguments(8888, "abc", as_root=False)
    assert "--ip=127.0.0.1" in arguments and "--IdentityProvider.token=abc" in arguments and "--no-browser" in arguments
    assert "--LabApp.news_url=None" in arguments and "--allow-root" not in arguments
    assert lab.lab_arguments(8888, "abc", as_root=True)[-1] == "--allow-root"


def test_make_lab_on_a_taken_port_refuses_in_one_line_naming_the_port_before_starting_anything(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lab.subprocess, "Popen", lambda *args, **kwargs: pytest.fail("JupyterLab was started"))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other_server:
        other_server.bind(("127.0.0.1", 0))
        other_server.listen()
        port = other_server.getsockname()[1]
        status = main(["lab", "--port", str(port)])
    out, err = capsys.readouterr()
    assert status == 2 and out == "", out  # no address printed: it would point at the other server
    [line] = err.splitlines()
    assert f"port {port} on 127.0.0.1 is not available (another server is using it)" in line and 'make lab ARGS="--port ' in line, line
    assert "http" not in line and "token" not in line


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--lang", "fr"], "argument --lang: invalid choice: 'fr' (choose from 'en', 'zh_CN')"),
        (["--lang", "zh_CN", "--course"], "--course and --lang cannot be combined"),
    ],
)
def test_make_lab_refuses_a_language_it_has_no_edition_of_and_a_translated_course(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, arguments: list[str], says: str
) -> None:
    monkeypatch.setattr(lab.subprocess, "Popen", lambda *args, **kwargs: pytest.fail("JupyterLab was started"))
    with pytest.raises(SystemExit) if "invalid choice" in says else contextlib.nullcontext():
        assert main(["lab", "--port", str(free_port()), *arguments]) == 2
    assert says in capsys.readouterr().err


def test_the_chinese_lab_opens_in_its_own_folder_with_the_zh_cn_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copies and the JupyterLab setting ``make lab ARGS="--lang zh_CN"`` serves; the notebooks folder is untouched."""
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    before = {path: path.stat().st_mtime_ns for path in NOTEBOOKS_DIR.rglob("*") if path.is_file()}
    root = lab.prepare_translated("zh_CN")
    assert root == tmp_path / "build" / "lab-zh_CN"
    assert sorted(path.name for path in (root / "notebooks").glob("*.ipynb")) == sorted(path.name for path in executor.notebooks())
    overrides = json.loads((root / "jupyter-config" / "labconfig" / "default_setting_overrides.json").read_text(encoding="utf-8"))
    assert overrides["@jupyterlab/translation-extension:plugin"] == {"locale": "zh_CN"}
    assert str(root / "jupyter-config") in lab.lab_environment("zh_CN")["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert {path: path.stat().st_mtime_ns for path in NOTEBOOKS_DIR.rglob("*") if path.is_file()} == before


@pytest.mark.process
def test_jupyterlab_lists_the_workbook_and_runs_helpers_and_tensorflow_in_a_kernel() -> None:
    port, token = free_port(), secrets.token_urlsafe(16)
    with lab.lab_server(port, token) as base:
        status, listing = get(f"{base}/api/contents/notebooks?token={token}")
        names = {entry["name"] for entry in json.loads(listing)["content"]}
        assert status == 200 and {path.name for path in executor.notebooks()} <= names
        assert get(f"{base}/api/contents/notebooks")[0] == 403, "a request without the token must be refused"
        status, page = get(f"{base}/lab?token={token}")
        page_config = json.loads(page.split('id="jupyter-config-data" type="application/json">', 1)[1].split("</script>", 1)[0])
        assert status == 200 and page_config["news"] == {"disabled": True}  # no "Jupyter news?" prompt, no feed fetched

        request = urllib.request.Request(f"{base}/api/kernels?token={token}", data=json.dumps({"name": "python3"}).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            kernel_id = json.loads(response.read())["id"]
        code = (
            "import helpers\nhelpers.quiet_tensorflow_logs()\nimport tensorflow as tf\n"
            "print(tf.__version__, float(tf.reduce_sum(tf.ones([2, 3]))), helpers.repo_root().name)"
        )
        reply, printed = run_in_kernel(port, token, kernel_id, code)
        import tensorflow as tf

        assert reply == "ok", printed
        assert printed.split() == [tf.__version__, "6.0", repo_root().name], printed
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # stopped by its process id
        urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)


@pytest.mark.process
def test_the_tensorboard_magic_of_chapter_06_serves_on_localhost_in_jupyterlab_and_is_stopped(tmp_path) -> None:
    """Chapter 06's guarded ``%tensorboard`` cell, run in a real kernel as JupyterLab starts it (JPY_SESSION_NAME set)."""
    import os
    import signal

    import nbformat
    import tensorflow as tf
    from jupyter_client.manager import start_new_kernel
    from tensorboard import manager

    notebook = nbformat.read(NOTEBOOKS_DIR / "06_tensorboard.ipynb", as_version=4)
    [cell] = [cell for cell in notebook.cells if "tensorboard-magic" in cell.metadata.get("tags", [])]
    log_root = tmp_path / "logs"
    with tf.summary.create_file_writer(str(log_root / "train")).as_default():
        tf.summary.scalar("loss", 0.5, step=1)
    jupyterlab_kernel_env = {**lab.lab_environment(), "JPY_SESSION_NAME": "notebooks/06_tensorboard.ipynb"}  # as make lab's server sets it
    kernel, client = start_new_kernel(kernel_name="python3", env=jupyterlab_kernel_env)
    started = []
    try:
        shown = []
        reply = client.execute_interactive(
            f"import os\nLOG_ROOT = {str(log_root)!r}\n{cell.source}", timeout=120, output_hook=lambda message: shown.append(str(message["content"]))
        )
        assert reply["content"]["status"] == "ok" and not any("ERROR" in text for text in shown), shown
        started = [info for info in manager.get_all() if info.logdir == str(log_root)]
        assert len(started) == 1, "the cell should have started one TensorBoard for this logdir"
        info = started[0]
        status, runs = get(f"http://127.0.0.1:{info.port}/data/runs")
        assert status == 200 and json.loads(runs) == ["train"] and "--host 127.0.0.1" in cell.source
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=True)
        for info in started:  # the magic's TensorBoard outlives the kernel: stop it by its process id
            os.kill(info.pid, signal.SIGTERM)
    for info in started:
        deadline = Deadline(30)
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{info.port}/data/runs", timeout=2)
            except (urllib.error.URLError, ConnectionError):
                break
            assert not deadline.passed(), "TensorBoard still answers after SIGTERM"
            deadline.pause(0.2)


@pytest.mark.process
def test_sigterm_to_make_lab_stops_jupyterlab_too(python: str) -> None:
    """What ``kill`` or a service manager sends ``make lab``'s process: JupyterLab goes with it, the port is free again."""
    import signal
    import subprocess

    port = free_port()
    command = [python, "-m", "helpers.workbook", "lab", "--port", str(port)]
    with subprocess.Popen(command, cwd=repo_root(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as started:
        assert started.stdout is not None
        first = started.stdout.readline()  # printed once JupyterLab answers
        assert first.startswith(f"JupyterLab on http://127.0.0.1:{port}/"), first
        started.send_signal(signal.SIGTERM)
        assert started.wait(timeout=60) == 128 + signal.SIGTERM
    deadline = Deadline(30)
    while not deadline.passed():
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            deadline.pause()
            continue
        break
    else:
        raise AssertionError(f"JupyterLab still answers on port {port} after make lab's process was stopped")
