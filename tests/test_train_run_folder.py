"""helpers.train.run_folder: what a run writes, named once; unusable folders refused and left alone; --fresh."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import train as training
from tests.train_runs import UNUSABLE, folder_state


@pytest.mark.parametrize(("files", "run_name", "says", "emptying_helps"), UNUSABLE)
def test_an_unusable_run_folder_is_refused_and_left_alone(tmp_path: Path, files: dict[str, str], run_name: str, says: str, emptying_helps: bool) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    before = folder_state(tmp_path)
    with pytest.raises(training.RunFolderError, match=re.escape(says)) as refused:
        training.RunFolder(tmp_path / run_name).check()
    assert refused.value.emptying_helps is emptying_helps
    assert folder_state(tmp_path) == before


def test_the_folder_names_every_entry_a_run_writes(tmp_path: Path) -> None:
    folder = training.RunFolder(tmp_path / "run")
    named = {folder.checkpoints, folder.logs, folder.config_file, folder.result_file}
    assert {path.name for path in named} == training.RunFolder.ENTRIES
    assert folder.train_logs.parent == folder.validation_logs.parent == folder.logs
    folder.check()  # a missing folder is fine: a new run creates it
    assert not folder.path.exists() and folder.latest_step() == -1 and not folder.has_checkpoints()


def test_config_differences_name_each_trajectory_field(tmp_path: Path) -> None:
    folder = training.RunFolder(tmp_path)
    config = training.TrainConfig(run_dir=tmp_path, dropout=0.1)
    assert folder.config_differences(config) == []  # no config.json yet
    folder.write_config(config)
    assert json.loads(folder.config_file.read_text())["dropout"] == 0.1 and not list(tmp_path.glob(".*.tmp"))
    changed = training.TrainConfig(run_dir=tmp_path, dropout=0.3, log_every=7)  # log_every shapes no trajectory
    assert folder.config_differences(changed) == ["dropout=0.1 there, 0.3 here"]


def test_fresh_refuses_a_folder_with_files_no_run_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not from a run")
    assert training.main(["--run-dir", str(tmp_path), "--steps", "30", "--fresh"]) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    assert "notes.txt" in error and "refusing to empty it" in error
    assert (tmp_path / "notes.txt").read_text() == "not from a run"


def test_empty_removes_only_what_runs_write(tmp_path: Path) -> None:
    folder = training.RunFolder(tmp_path / "run")
    folder.checkpoints.mkdir(parents=True)
    folder.write_config(training.TrainConfig(run_dir=folder.path))
    folder.empty()
    assert not folder.path.exists()


def test_check_writable_probes_and_leaves_the_disk_as_it_was(tmp_path: Path) -> None:
    new = training.RunFolder(tmp_path / "new" / "run")
    new.check_writable()
    assert list(tmp_path.iterdir()) == []  # the folders made for the probe are gone again
    used = training.RunFolder(tmp_path / "used")
    used.checkpoints.mkdir(parents=True)
    used.check_writable()
    assert [entry.name for entry in used.path.iterdir()] == ["checkpoints"]


@pytest.mark.parametrize("run_dir", ["/proc/x", "/dev/null/x", "/sys/x"])
def test_check_writable_refuses_a_folder_that_cannot_be_made(run_dir: str) -> None:
    with pytest.raises(training.RunFolderError, match=rf"^{re.escape(run_dir)} cannot be created or written \(.+\)$") as refused:
        training.RunFolder(Path(run_dir)).check_writable()
    assert not refused.value.emptying_helps and not Path(run_dir).exists()


def test_the_lock_is_one_holder_at_a_time_and_fresh_keeps_it(tmp_path: Path) -> None:
    folder = training.RunFolder(tmp_path / "run")
    with folder.locked("pid 1 (first)"):
        assert folder.lock_file.read_text() == "pid 1 (first)\n" and folder.foreign_entries() == []
        with pytest.raises(training.RunFolderBusyError, match=re.escape(f"is in use: pid 1 (first) holds its lock {folder.lock_file}")) as refused:
            with training.RunFolder(folder.path).locked("pid 2"):  # another open of the file: refused like another process
                pass
        assert refused.value.holder == "pid 1 (first)" and not refused.value.emptying_helps
        folder.write_config(training.TrainConfig(run_dir=folder.path))
        folder.empty()  # --fresh under the lock: everything but the lock file goes
        assert [entry.name for entry in folder.path.iterdir()] == [training.RunFolder.LOCK]
    assert not folder.path.exists()  # the lock file, and the folder made for it, are gone once released


#: What writes and saves that did not finish leave (issue 21, item 2): a full disk left the first two.
LEFTOVERS = {
    ".config.json.4242.tmp": "",
    ".result.json.17.tmp": '{"step"',
    "checkpoints/ckpt-130_temp/part-00000-of-00001.data-00000-of-00001.tempstate1": "x",
    "checkpoints/checkpoint.tmp0123abcd": "model_check",
    "logs/train/events.out.tfevents.1.host.4242.0.v2": "",
}


def test_leftovers_of_unfinished_writes_never_refuse_a_folder_and_a_start_removes_only_them(tmp_path: Path) -> None:
    """Issue 21, item 2: a 0-byte ``.config.json.<pid>.tmp`` used to make every rerun, ``--fresh`` included, refuse the folder."""
    folder = training.RunFolder(tmp_path / "run")
    kept = {"config.json": "{}", "checkpoints/checkpoint": "", "checkpoints/ckpt-120.index": "", "logs/train/events.out.tfevents.2.host.9.0.v2": "e"}
    for name, text in {**LEFTOVERS, **kept}.items():
        (folder.path / name).parent.mkdir(parents=True, exist_ok=True)
        (folder.path / name).write_text(text)
    assert folder.foreign_entries() == []
    folder.check()
    folder.check_can_empty()
    assert folder.remove_leftovers() == [
        ".config.json.4242.tmp", ".result.json.17.tmp", "checkpoints/checkpoint.tmp0123abcd", "checkpoints/ckpt-130_temp",
        "logs/train/events.out.tfevents.1.host.4242.0.v2",
    ]
    assert sorted(str(path.relative_to(folder.path)) for path in folder.path.rglob("*") if path.is_file()) == sorted(kept)
    assert folder.remove_leftovers() == []


def test_a_json_write_that_fails_removes_its_partial_file_and_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    def no_space(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")  # as a full disk's write reports it: no file name

    folder = training.RunFolder(tmp_path / "run")
    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(OSError) as raised:
        folder.write_config(training.TrainConfig(run_dir=folder.path, steps=20))
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(folder.config_file)
    assert list(folder.path.iterdir()) == []
