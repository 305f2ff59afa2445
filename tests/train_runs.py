"""What the tests of ``helpers.train`` share: one configuration for every subprocess run, and reading the command's output."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import train as training
from helpers.paths import repo_root

#: One configuration for every subprocess run, so they all share the uninterrupted fingerprint.
RUN_OPTIONS = ["--steps", "60", "--checkpoint-every", "10", "--eval-every", "20", "--log-every", "5", "--dropout", "0.2", "--warmup-steps", "5"]


def run_command(run_dir: Path, *extra: str) -> training.Finished:
    """``python -m helpers.train`` on ``run_dir`` with :data:`RUN_OPTIONS` and ``extra``, waited for."""
    return training.finish(training.start(["--run-dir", str(run_dir), *RUN_OPTIONS, *extra]))


def fingerprint_line(stdout: str) -> str:
    """The fingerprint the command printed (exactly one line says it)."""
    lines = [line for line in stdout.splitlines() if line.startswith("fingerprint ")]
    assert len(lines) == 1, stdout
    return lines[0].split()[1]


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file below ``folder``: (size, modification time), to show a refused folder was left alone."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns) for path in sorted(folder.rglob("*"))}


#: Folders a run must refuse: (files to create, the run folder, what the refusal says, whether emptying the folder makes it usable).
UNUSABLE = [
    ({"notes.txt": "mine"}, "notes.txt", "is a file, not a folder", False),
    ({"run/checkpoints": ""}, "run", "is a file where the run keeps a folder", True),
    ({"run/config.json": "{not json"}, "run", "is not a run's config (JSONDecodeError)", True),
    ({"run/config.json": "[1, 2]"}, "run", "is not a run's config (not a JSON object)", True),
    ({"run/thesis.tex": "mine"}, "run", "holds files no run writes (thesis.tex)", False),
]


@contextlib.contextmanager
def hold_lock(python: str, run_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """A small process of ``python`` (no TensorFlow) holding ``run_dir``'s lock as the command does, from the moment it holds it; killed at the end."""
    code = (
        "import time\nfrom helpers.train.cli import lock_holder\nfrom helpers.train.run_folder import RunFolder\n"
        f"with RunFolder({str(run_dir)!r}).locked(lock_holder(None)):\n    print('held', flush=True)\n    time.sleep(120)\n"
    )
    holder = subprocess.Popen([python, "-c", code], stdout=subprocess.PIPE, text=True, cwd=repo_root())
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.kill()
        holder.communicate(timeout=30)


@contextlib.contextmanager
def small_disk(where: Path, size: str = "4m") -> Iterator[Path]:
    """A real disk of ``size`` (a tmpfs mounted at ``where``), so a test can fill it; unmounted at the end.

    Mounting needs root (or CAP_SYS_ADMIN), as in CI and on the project's machines; elsewhere the test is skipped, saying so.
    """

    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small disk here (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)


def leave_free(disk: Path, free: int) -> Path:
    """Fill ``disk`` with a file ``ballast`` so that ``free`` bytes (whole 4 KiB pages) stay free; delete it to free the space."""
    ballast = disk / "ballast"
    ballast.unlink(missing_ok=True)
    stats = os.statvfs(disk)
    size = stats.f_bavail * stats.f_frsize - free
    with ballast.open("wb") as file:
        file.write(bytes(size))
    stats = os.statvfs(disk)
    assert stats.f_bavail * stats.f_frsize == free, (stats.f_bavail * stats.f_frsize, free)
    return ballast


def stand_in_train(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace ``train`` (and TensorFlow with it) by a stand-in that notes what the run folder's lock file says, and returns."""
    seen: list[str] = []
    stand_in = types.ModuleType("helpers.train.run")
    monkeypatch.setattr(stand_in, "train", lambda config, **_: seen.append(training.RunFolder(config.run_dir).lock_file.read_text()), raising=False)
    monkeypatch.setitem(sys.modules, "helpers.train.run", stand_in)
    return seen
