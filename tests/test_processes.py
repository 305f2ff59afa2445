"""helpers.processes and helpers.paths.remove: deadlines, live pids, stopping a child, folders named after their owner's pid."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers.paths import remove
from helpers.processes import Deadline, dead_owners, owned_prefix, pid_runs, stop


def _dead_pid(python: str) -> int:
    child = subprocess.Popen([python, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_deadline_passes_after_its_seconds() -> None:
    assert not Deadline(60).passed() and Deadline(60).left() > 59
    gone = Deadline(0.01)
    Deadline.pause(0.02)
    assert gone.passed() and gone.left() < 0


def test_a_pid_runs_while_its_process_exists(python: str) -> None:
    assert pid_runs(os.getpid()) and pid_runs(1)  # pid 1 runs, whoever owns it
    assert not pid_runs(_dead_pid(python))


def test_stop_terminates_then_kills_a_child_that_ignores_sigterm(python: str) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    stubborn = subprocess.Popen([python, "-c", code], stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout is not None and stubborn.stdout.readline().strip() == "ready"
    stop(stubborn, grace=0.5)
    assert stubborn.returncode == -9
    stubborn.stdout.close()
    polite = subprocess.Popen([python, "-c", "import time; time.sleep(60)"])
    stop(polite)
    assert polite.returncode == -15
    stop(polite)  # an ended process: nothing to do


def test_only_folders_of_dead_owners_are_found(tmp_path: Path, python: str) -> None:
    mine = Path(tempfile.mkdtemp(prefix=owned_prefix("x-worker-"), dir=tmp_path))
    assert mine.name.startswith(f"x-worker-{os.getpid()}-")
    dead = tmp_path / f"x-worker-{_dead_pid(python)}-abc"
    dead.mkdir()
    (tmp_path / f"x-worker-{_dead_pid(python)}-file").write_text("a file, not a folder")
    (tmp_path / f"x-worker-{_dead_pid(python)}-link").symlink_to(mine)
    (tmp_path / f"y-worker-{_dead_pid(python)}-other").mkdir()  # another start
    assert dead_owners(tmp_path, "x-worker-") == [dead]
    assert dead_owners(tmp_path / "missing", "x-") == []


def test_remove_takes_a_file_a_folder_a_symlink_or_nothing(tmp_path: Path) -> None:
    folder, file, link = tmp_path / "folder", tmp_path / "file", tmp_path / "link"
    (folder / "inner").mkdir(parents=True)
    file.write_text("x")
    link.symlink_to(folder)
    for path in (link, folder, file, tmp_path / "never"):
        remove(path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(FileNotFoundError):
        remove(tmp_path / "never", ignore_errors=False)
