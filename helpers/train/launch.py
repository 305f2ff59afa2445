"""Running the command from Python: start it, wait for it, signal it at a checkpoint step (chapters 08 and 09, the tests).

TensorFlow-free but for :meth:`helpers.train.RunFolder.latest_step`, which :func:`signal_at_step` polls.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from helpers.paths import repo_root
from helpers.processes import Deadline
from helpers.train.cluster import TF_CONFIG, local_tf_configs
from helpers.train.run_folder import RunFolder, shown


def start(options: Sequence[str], *, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``python -m helpers.train *options`` in the repository, stdout and stderr captured as text."""
    command = [sys.executable, "-m", "helpers.train", *options]
    environment = None if env is None else {**os.environ, **env}
    return subprocess.Popen(command, cwd=repo_root(), env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_workers(options: Sequence[str], workers: int = 2) -> list[subprocess.Popen[str]]:
    """Start ``workers`` processes of the command with ``--strategy multiworker``, each with its own ``TF_CONFIG`` (worker 0 first)."""
    return [start([*options, "--strategy", "multiworker"], env={TF_CONFIG: tf_config}) for tf_config in local_tf_configs(workers)]


@dataclass(frozen=True)
class Finished:
    """How a started command ended."""

    returncode: int
    stdout: str
    stderr: str


def finish(process: subprocess.Popen[str], *, timeout: float = 120.0) -> Finished:
    """Wait for ``process`` (killed by its id if it overruns ``timeout``, which then raises ``TimeoutError``)."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise TimeoutError(f"process {process.pid} ran over {timeout:.0f} s and was killed; its stderr ends: {stderr[-1500:]}") from None
    return Finished(process.returncode, stdout, stderr)


def signal_at_step(
    processes: Sequence[subprocess.Popen[str]],
    folder: RunFolder,
    step: int,
    *,
    signal_number: int = signal.SIGKILL,
    target: int = 0,
    delay: float = 0.0,
    timeout: float = 120.0,
) -> list[Finished]:
    """Once ``folder`` has a published checkpoint at ``step`` or later (and ``delay`` seconds more), signal ``processes[target]``; wait for all.

    ``signal_number`` is what is sent (``SIGKILL`` by default).

    Every process is stopped by its id before this returns: on a timeout, or if a process ends
    before the checkpoint appears, all of them are killed and an ``AssertionError`` or
    ``TimeoutError`` says why.
    """
    deadline = Deadline(timeout)
    try:
        _wait_for_checkpoint(processes, folder, step, deadline, timeout)
        time.sleep(delay)
        os.kill(processes[target].pid, signal_number)
        return [finish(process, timeout=max(deadline.left(), 30.0)) for process in processes]
    finally:
        stop(processes)


def _wait_for_checkpoint(processes: Sequence[subprocess.Popen[str]], folder: RunFolder, step: int, deadline: Deadline, timeout: float) -> None:
    while folder.latest_step() < step:
        for process in processes:
            if process.poll() is not None:
                stderr = process.stderr.read()[-1500:] if process.stderr else ""
                raise AssertionError(f"process {process.pid} ended (status {process.returncode}) before checkpoint {step}: {stderr}")
        if deadline.passed():
            raise TimeoutError(f"no checkpoint at step {step} or later in {shown(folder.checkpoints)} within {timeout:.0f} s")
        deadline.pause(0.01)


def stop(processes: Iterable[subprocess.Popen[str]]) -> None:
    """Kill (SIGKILL, by process id) and reap every process still running."""
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.communicate()
