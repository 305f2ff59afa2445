"""helpers.train.launch and signals, through real processes of the command: SIGTERM saves at the current step and the
rerun resumes exactly; launch stops every process it started.

Proved by the chapters instead, which the suite runs twice (nbval, and papermill with other parameters):
a crash (``--crash-at-step``), a real ``SIGKILL`` and Ctrl-C (``SIGINT``), each followed by a rerun that
ends with the uninterrupted run's fingerprint (chapter 08, *A crash* to *Ctrl-C and SIGTERM*); two
worker processes, a ``SIGTERM`` to one of them, the restart, and the mirrored run's fingerprint
(chapter 09, *Two worker processes*).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import IO

import pytest

from helpers import train as training
from helpers.paths import checkpoint_name
from tests.train_runs import RUN_OPTIONS, fingerprint_line, run_command


@pytest.mark.process
def test_sigterm_saves_at_the_current_step_and_the_rerun_resumes_exactly(tmp_path: Path) -> None:
    """Between two periodic checkpoints, so the save can only be the signal's; nothing done before it is lost."""
    straight = run_command(tmp_path / "straight")
    assert straight.returncode == 0, straight.stderr[-2000:]
    folder = training.RunFolder(tmp_path / "stopped")
    process = training.start(["--run-dir", str(folder.path), *RUN_OPTIONS, "--pause-per-step", "0.1"])
    [stopped] = training.signal_at_step([process], folder, 30, signal_number=signal.SIGTERM, delay=0.25)
    assert stopped.returncode == training.interrupt_exit_code(signal.SIGTERM) == 143, stopped.stderr[-2000:]
    step = folder.latest_step()
    assert stopped.stderr.strip().splitlines()[-1] == (
        f"error: stopped by SIGTERM at step {step}; saved {folder.checkpoints / checkpoint_name(step)}; "
        f"run the same command again to resume from step {step}"
    ), stopped.stderr[-2000:]
    assert "Traceback" not in stopped.stderr and 30 <= step < 60 and not folder.result_file.exists()

    resumed = run_command(folder.path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.splitlines()[0].startswith(f"restored {checkpoint_name(step)} ")
    assert fingerprint_line(resumed.stdout) == fingerprint_line(straight.stdout)


@pytest.mark.process
def test_signal_at_step_says_which_process_ended_early_and_reaps_every_one(tmp_path: Path) -> None:
    refused = training.start(["--run-dir", str(tmp_path / "run"), "--steps", "0"])  # ends at once: a bad option
    waiting = training.start(["--run-dir", str(tmp_path / "other"), "--steps", "0"])
    with pytest.raises(AssertionError, match=r"ended \(status 2\) before checkpoint 10"):
        training.signal_at_step([refused, waiting], training.RunFolder(tmp_path / "run"), 10, timeout=60)
    assert refused.poll() is not None and waiting.poll() is not None


def test_finish_kills_a_process_that_overruns(python: str) -> None:
    import subprocess

    sleeper = subprocess.Popen([python, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with pytest.raises(TimeoutError, match="ran over 0 s and was killed"):
        training.finish(sleeper, timeout=0.2)
    assert sleeper.returncode is not None


def _read_until(stream: IO[str] | None, start: str) -> str:
    """Lines of ``stream`` up to the first that starts with ``start`` (all of them, if none does)."""
    assert stream is not None
    lines = []
    for line in iter(stream.readline, ""):
        lines.append(line)
        if line.startswith(start):
            break
    return "".join(lines)


@pytest.mark.process
def test_a_second_sigterm_once_the_first_has_saved_is_ignored(tmp_path: Path) -> None:
    """Issue 21, item 10: a second SIGTERM after the first one's save and line used to kill the exiting process (status -15)."""
    folder = training.RunFolder(tmp_path / "run")
    process = training.start(["--run-dir", str(folder.path), *RUN_OPTIONS, "--pause-per-step", "0.05"])
    try:
        assert _read_until(process.stdout, "step 20/60").startswith("no checkpoint in ")
        os.kill(process.pid, signal.SIGTERM)
        first = _read_until(process.stderr, "error: stopped by SIGTERM")
        os.kill(process.pid, signal.SIGTERM)  # while it exits
        stopped = training.finish(process)
    finally:
        training.stop([process])
    errors = [line for line in (first + stopped.stderr).splitlines() if line.startswith("error:")]
    assert stopped.returncode == 143 and len(errors) == 1 and "Traceback" not in first + stopped.stderr, first + stopped.stderr
    step = folder.latest_step()
    assert errors[0].startswith(f"error: stopped by SIGTERM at step {step}; saved ") and 20 <= step < 60


@pytest.mark.process
def test_a_second_command_on_a_busy_run_folder_is_refused_and_the_first_finishes(tmp_path: Path) -> None:
    """Issue 21, item 1: both used to start at step 0 and write; with frequent saves one of them crashed."""
    folder = training.RunFolder(tmp_path / "run")
    options = ["--run-dir", str(folder.path), *RUN_OPTIONS, "--checkpoint-every", "1", "--keep-checkpoints", "2"]
    first = training.start([*options, "--pause-per-step", "0.05"])
    try:
        assert _read_until(first.stdout, "no checkpoint in ").startswith("no checkpoint in ")  # running: it holds the lock
        second = training.finish(training.start(options), timeout=60)
        finished = training.finish(first)
    finally:
        training.stop([first])
    assert second.returncode == training.USAGE_EXIT_CODE and second.stdout == "", second.stderr[-2000:]
    assert second.stderr == (
        f"error: {folder.path} is in use: pid {first.pid} holds its lock {folder.lock_file}: "
        "wait for that run to end or stop it, or give --run-dir another folder\n"
    ), second.stderr
    assert finished.returncode == 0 and "Traceback" not in finished.stderr, finished.stderr[-2000:]
    assert folder.read_result()["step"] == 60 and not folder.lock_file.exists()
