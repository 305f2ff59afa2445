"""Processes and time limits, written once: a deadline, whether a pid runs, stopping a child, folders named after their owner's pid.

Plumbing: the TensorBoard server (:mod:`helpers.tensorboard_server`), the trainer (:mod:`helpers.train`) and the
project's machinery (:mod:`helpers.workbook`) build on it; it imports nothing of theirs.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: How an owner's pid stands in a folder's name, after its start: ``<start><pid>-<anything>``.
OWNER_PID = r"(?P<pid>[0-9]+)-"


@dataclass
class Deadline:
    """A moment ``seconds`` from now on the monotonic clock: poll with :meth:`passed`, pause between polls with :meth:`pause`."""

    seconds: float
    at: float = field(init=False)

    def __post_init__(self) -> None:
        self.at = time.monotonic() + self.seconds

    def passed(self) -> bool:
        """Whether the moment has come."""
        return time.monotonic() > self.at

    def left(self) -> float:
        """Seconds until the moment (negative once it passed)."""
        return self.at - time.monotonic()

    @staticmethod
    def pause(interval: float = 0.25) -> None:
        """Sleep ``interval`` seconds before polling again."""
        time.sleep(interval)


def pid_runs(pid: int) -> bool:
    """Whether a process with this pid exists (another user's counts: it runs, though we may not signal it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes], *, grace: float = 10.0) -> None:
    """Stop a child by its id: ``SIGTERM``, then ``SIGKILL`` if it has not ended after ``grace`` seconds; reap it either way."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def owned_prefix(start: str) -> str:
    """The name prefix (``tempfile``'s ``prefix``) of a folder this process owns: ``start``, its pid, a dash.

    A later process tells a folder whose owner was killed (:func:`dead_owners`) from a running owner's by that pid.
    """
    return f"{start}{os.getpid()}-"


def dead_owners(folder: Path, start: str) -> list[Path]:
    """This user's folders in ``folder`` named by :func:`owned_prefix` (``start`` a regular expression) whose owner no longer runs.

    Never a symlink, a file, another user's folder, or a running owner's folder.
    """
    name = re.compile(start + OWNER_PID)
    dead = []
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = name.match(entry.name)
        if match is None:
            continue
        try:
            info = entry.lstat()
        except FileNotFoundError:  # removed meanwhile (its owner ended)
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not pid_runs(int(match["pid"])):
            dead.append(entry)
    return dead
