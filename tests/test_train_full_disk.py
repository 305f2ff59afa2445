"""The command on a real full disk (issue 21, item 2): one line and status 7, nothing left of the write that failed,
and a rerun after space is freed resumes with the uninterrupted run's fingerprint.

The disk is a small tmpfs the test mounts (:func:`tests.train_runs.small_disk`), filled with a ballast file.
Before: a save ended in a traceback from ``SaveV2`` (``ResourceExhaustedError``, status 1) and left
``ckpt-N_temp/``; a failed ``config.json`` left ``.config.json.<pid>.tmp``, which made every rerun refuse the folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import train as training
from helpers.paths import checkpoint_name
from helpers.train.cli import NO_SPACE_HINT
from tests.train_runs import fingerprint_line, leave_free, run_command, small_disk

pytestmark = pytest.mark.process

#: Room for the config, the logs and two checkpoints of the tests' run (118 KiB each), not for a third.
ROOM_FOR_TWO_CHECKPOINTS = 300 * 1024


def test_a_save_on_a_full_disk_keeps_the_last_checkpoint_and_the_rerun_after_freeing_space_resumes_exactly(tmp_path: Path) -> None:
    straight = run_command(tmp_path / "straight")
    assert straight.returncode == 0, straight.stderr[-2000:]
    with small_disk(tmp_path / "disk") as disk:
        folder = training.RunFolder(disk / "run")
        ballast = leave_free(disk, ROOM_FOR_TWO_CHECKPOINTS)
        full = run_command(folder.path)
        on_disk = sorted(path.name for path in folder.checkpoints.iterdir())
        latest = folder.latest_step()
        # what other writes that did not finish leave (a crash while writing config.json, an event file that got no record)
        leftovers = [".config.json.4242.tmp", f"checkpoints/{checkpoint_name(40)}_temp", "logs/train/events.out.tfevents.1.host.4242.0.v2"]
        (folder.path / leftovers[0]).write_bytes(b"")
        (folder.path / leftovers[1]).mkdir()
        (folder.path / leftovers[2]).write_bytes(b"")
        ballast.unlink()
        resumed = run_command(folder.path)
        left = [name for name in leftovers if (folder.path / name).exists()]
    assert full.returncode == training.NO_SPACE_EXIT_CODE == 7, full.stderr[-2000:]
    assert full.stderr == (
        f"error: CheckpointSaveError: ckpt-30 could not be written in {folder.checkpoints} (No space left on device); "
        f"the latest checkpoint is still ckpt-20; {NO_SPACE_HINT}\n"
    ), full.stderr[-2000:]
    assert latest == 20 and on_disk == ["checkpoint", "ckpt-10.data-00000-of-00001", "ckpt-10.index", "ckpt-20.data-00000-of-00001", "ckpt-20.index"]
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    first, second = resumed.stdout.splitlines()[:2]
    assert first == f"removed what an unfinished write left: {', '.join(sorted(leftovers))}" and left == []
    assert second.startswith("restored ckpt-20 ")
    assert fingerprint_line(resumed.stdout) == fingerprint_line(straight.stdout)


def test_a_disk_full_from_the_start_is_one_line_naming_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        folder = training.RunFolder(disk / "run")
        leave_free(disk, 0)
        no_lock = run_command(folder.path)  # before TensorFlow loads
        leave_free(disk, 4096)  # the lock file's page, no more
        no_config = run_command(folder.path)
        left = sorted(path.name for path in disk.iterdir())
    assert (no_lock.returncode, no_config.returncode) == (training.NO_SPACE_EXIT_CODE,) * 2, no_lock.stderr + no_config.stderr
    assert no_lock.stdout == "" and no_lock.stderr == f"error: OSError: [Errno 28] No space left on device: '{folder.lock_file}'; {NO_SPACE_HINT}\n"
    assert no_config.stderr == f"error: OSError: [Errno 28] No space left on device: '{folder.config_file}'; {NO_SPACE_HINT}\n", no_config.stderr
    assert left == ["ballast"]  # no partial file, no lock file, not even the run folder
