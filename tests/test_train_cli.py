"""helpers.train.cli: options named in one-line refusals, --help, the refusals made before TensorFlow loads,
and the table from error to exit status."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from helpers import train as training
from helpers.paths import checkpoint_name, repo_root
from helpers.train.cli import lock_holder
from helpers.train.cluster import TF_CONFIG
from tests.train_runs import UNUSABLE, folder_state, hold_lock, stand_in_train


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--steps", "0"], "--steps"),
        (["--clip-norm=-0.5"], "--clip-norm"),
        (["--checkpoint-every", "0"], "--checkpoint-every"),
        (["--steps", "10", "--warmup-steps", "10"], "--warmup-steps"),
        (["--dropout", "1.5"], "--dropout"),
        (["--seed", "-1"], "--seed"),
        (["--strategy", "mirrored", "--batch-size", "63"], "--batch-size"),
        (["--strategy", "tpu"], "--strategy"),
        (["--crash-at-step", "201"], "--crash-at-step"),
        (["--pause-per-step", "nan"], "--pause-per-step"),
        (["--strategy", "multiworker", "--fresh"], "--fresh"),
    ],
)
def test_command_line_errors_name_the_option_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], named: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        training.main(["--run-dir", str(tmp_path / "run"), *options])
    assert exit_info.value.code == training.USAGE_EXIT_CODE == 2
    error = capsys.readouterr().err
    assert f"argument {named}" in error and error.count("\n") == 1 and "Traceback" not in error, error
    assert not (tmp_path / "run").exists()


def test_help_shows_every_config_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        training.main(["--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    for entry in training.config_options():
        shown = re.escape(training.default_text(entry))
        assert re.search(rf"{training.option_name(entry.name)} \S+ .*?\(default: {shown}\)", help_text), entry.name
    parser = training.make_parser()
    assert training.config_from_args(parser, parser.parse_args(["--run-dir", "x"])) == training.TrainConfig(run_dir=Path("x"))
    assert training.config_from_args(parser, parser.parse_args(["--run-dir", "x", "--steps", "20"])).warmup_steps == 2


def test_help_lists_every_exit_status_and_where_the_readme_explains_them(capsys: pytest.CaptureFixture[str]) -> None:
    from helpers.train import cli

    with pytest.raises(SystemExit):
        training.main(["--help"])
    epilog = " ".join(capsys.readouterr().out.split()).split("exit statuses:")[1].strip()
    codes = {value for name, value in vars(cli).items() if name.endswith("_EXIT_CODE")}  # every status the command's code names
    statuses = {int(code) for code in re.findall(r"(?:^|; )(\d+) ", epilog)}
    assert statuses == {0, 1, 130, *codes} and "130 or 143" in epilog
    readme = (repo_root() / "README.md").read_text(encoding="utf-8")
    assert "The capstone command" in epilog and "## The capstone command" in readme
    section = readme.split("## The capstone command")[1].split("\n## ")[0]
    rows = re.findall(r"^\| ([\d, ]+) \|", section, flags=re.MULTILINE)  # the README's table of exit statuses
    assert [int(code) for row in rows for code in row.split(",")] == sorted({0, 1, 130, 143, *codes})


@pytest.mark.parametrize(("files", "run_name", "says", "emptying_helps"), UNUSABLE)
def test_an_unusable_run_folder_is_one_line_with_its_remedy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], run_name: str, says: str, emptying_helps: bool
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    before = folder_state(tmp_path)
    assert training.main(["--run-dir", str(tmp_path / run_name), "--steps", "20"]) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    remedy = "move it away, or use --fresh" if emptying_helps else "give --run-dir a new folder or one an earlier run wrote"
    assert error.startswith("error: ") and says in error and error.rstrip().endswith(remedy) and error.count("\n") == 1, error
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("run_dir", ["/proc/x", "/dev/null/x", "/sys/x"])
def test_a_folder_that_cannot_be_created_is_refused_before_tensorflow_loads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, run_dir: str
) -> None:
    """Issue 21, item 5: these used to exit 1 after TensorFlow loaded and "starting at step 0" was printed."""
    monkeypatch.setitem(sys.modules, "helpers.train.run", types.ModuleType("helpers.train.run"))  # no train(): reaching it fails
    assert training.main(["--run-dir", run_dir, "--steps", "20"]) == training.USAGE_EXIT_CODE
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    assert re.fullmatch(
        rf"error: {re.escape(run_dir)} cannot be created or written \(.+\): give --run-dir a new folder or one an earlier run wrote\n", captured.err
    ), captured.err
    assert not Path(run_dir).exists()


def test_importing_the_package_does_not_import_tensorflow(python: str) -> None:
    code = "import sys, helpers.train; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    subprocess.run([python, "-c", code], check=True, cwd=repo_root(), timeout=60)


def test_a_refused_rerun_exits_4_before_importing_tensorflow(tmp_path: Path, python: str) -> None:
    run_dir = tmp_path / "run"
    folder = training.RunFolder(run_dir)
    folder.checkpoints.mkdir(parents=True)
    (folder.checkpoints / f"{checkpoint_name(50)}.index").write_bytes(b"")  # contents never read on this path
    folder.config_file.write_text(json.dumps(training.TrainConfig(run_dir=run_dir, dropout=0.1).to_json()))
    code = (
        "import sys, helpers.train as t\n"
        f"status = t.main(['--run-dir', {str(run_dir)!r}, '--dropout', '0.3'])\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "sys.exit(status)"
    )
    refused = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=repo_root(), timeout=60)
    assert refused.returncode == training.MISMATCH_EXIT_CODE, refused.stderr[-2000:]
    assert refused.stderr.startswith("error: CheckpointMismatchError:") and "dropout=0.1 there, 0.3 here" in refused.stderr


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_starting_up_ends_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, signal_number: int
) -> None:
    """Ctrl-C while TensorFlow loads (here: during a stand-in for train) is one line and 128 + its number, not a traceback."""
    from helpers.train import run

    def starting_up(*_: object, **__: object) -> None:
        os.kill(os.getpid(), signal_number)
        time.sleep(5)
        raise AssertionError("the signal did not stop the command")

    monkeypatch.setattr(run, "train", starting_up)
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    assert training.main(["--run-dir", str(tmp_path / "run"), "--steps", "20"]) == 128 + signal_number
    error = capsys.readouterr().err
    name = signal.Signals(signal_number).name
    assert error == f"error: stopped by {name} outside the training loop (no checkpoint saved for it); run the same command again to resume or start\n"
    assert {number: signal.getsignal(number) for number in before} == before  # the caller's handlers are back
    assert not (tmp_path / "run").exists()


def test_a_run_of_non_finite_updates_stops_with_its_own_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A learning rate of 1e30 blows the weights up in the first update; every later gradient is NaN.

    Chapter 08 (*A run of NaNs stops*) shows the same error from ``train`` in its process; this is the command's status.
    """
    run_dir = tmp_path / "diverging"
    options = ["--run-dir", str(run_dir), "--steps", "30", "--learning-rate", "1e30", "--warmup-steps", "0"]
    assert training.main(options) == training.NON_FINITE_EXIT_CODE
    message = capsys.readouterr().err
    assert message.startswith(f"error: FloatingPointError: {training.MAX_NON_FINITE_STEPS} updates skipped"), message
    assert "Traceback" not in message and message.count("\n") == 1
    step, batches = map(int, re.search(r"global step (\d+), (\d+) batches drawn", message).groups())
    assert step == 1 and batches == step + training.MAX_NON_FINITE_STEPS
    assert not training.RunFolder(run_dir).result_file.exists()


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_missing_or_damaged_data_is_one_line_and_its_own_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """Issue 21, item 6: this used to be a traceback ending in the DataError, exit 1. The real data file is not touched."""
    from helpers import data

    stand_in = tmp_path / "digits.npz"
    if damage == "truncated":
        stand_in.write_bytes(data.DIGITS_PATH.read_bytes()[:1000])
    monkeypatch.setattr(data, "DIGITS_PATH", stand_in)
    run_dir = tmp_path / "run"
    assert training.main(["--run-dir", str(run_dir), "--steps", "20"]) == training.DATA_EXIT_CODE == 6
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured
    assert captured.err.startswith("error: DataError: ") and "regenerate it with `python data/make_digits.py`" in captured.err, captured.err
    assert not run_dir.exists()


def test_every_handled_error_has_one_status_and_others_are_raised() -> None:
    from helpers.checkpoints import CheckpointMismatchError, CheckpointSaveError
    from helpers.data import DataError
    from helpers.train.cli import NO_SPACE_HINT, command_error

    cases = {
        training.Interrupted(signal.SIGTERM, 7, None): 143,
        CheckpointMismatchError("x"): training.MISMATCH_EXIT_CODE,
        FloatingPointError("x"): training.NON_FINITE_EXIT_CODE,
        DataError("x"): training.DATA_EXIT_CODE,
        training.RunFolderError("x", emptying_helps=True): training.USAGE_EXIT_CODE,
        training.ClusterConfigError("x"): training.USAGE_EXIT_CODE,
        training.StrategyError("x"): training.USAGE_EXIT_CODE,
        training.PeerLostError(training.WorkerRole(index=0, workers=2), 1, "x"): training.PEER_LOST_EXIT_CODE,
        PermissionError("x"): 1,
        OSError(errno.ENOSPC, "No space left on device", "run/config.json"): training.NO_SPACE_EXIT_CODE,
        OSError(errno.EDQUOT, "Disk quota exceeded"): training.NO_SPACE_EXIT_CODE,
        CheckpointSaveError(errno.ENOSPC, "ckpt-30 could not be written"): training.NO_SPACE_EXIT_CODE,
        CheckpointSaveError(errno.EIO, "ckpt-30 could not be written"): 1,
    }
    for error, status in cases.items():
        expected = command_error(error)
        assert expected is not None and expected.status() == status and "\n" not in expected.line(), type(error).__name__
        assert expected.line().endswith(NO_SPACE_HINT) == (status == training.NO_SPACE_EXIT_CODE), expected.line()
    assert command_error(KeyError("x")) is None and command_error(ValueError("x")) is None  # a bug is a traceback, not a status


BUSY_REMEDY = "wait for that run to end or stop it, or give --run-dir another folder"


@pytest.mark.parametrize("extra", [[], ["--fresh"], ["--dropout", "0.3"]])
def test_a_folder_another_run_holds_is_refused_naming_its_pid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, extra: list[str], python: str
) -> None:
    """Issue 21, item 1: two commands on one --run-dir both used to start and write; with --fresh the second emptied the first's folder."""
    folder = training.RunFolder(tmp_path / "run")
    folder.write_config(training.TrainConfig(run_dir=folder.path, steps=20))  # no checkpoint yet: other options are not refused for it
    monkeypatch.setitem(sys.modules, "helpers.train.run", types.ModuleType("helpers.train.run"))  # no train(): reaching it fails
    with hold_lock(python, folder.path) as holder:
        before = folder_state(folder.path)
        assert training.main(["--run-dir", str(folder.path), "--steps", "20", *extra]) == training.USAGE_EXIT_CODE == 2
        assert folder_state(folder.path) == before  # nothing written, nothing emptied, the holder's lock file untouched
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"error: {folder.path} is in use: pid {holder.pid} holds its lock {folder.lock_file}: {BUSY_REMEDY}\n"
    ), captured.err


def test_a_lock_file_left_by_a_killed_run_does_not_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, python: str
) -> None:
    folder = training.RunFolder(tmp_path / "run")
    with hold_lock(python, folder.path) as holder:
        holder.kill()  # SIGKILL: no cleanup; the kernel releases its lock
        holder.wait(timeout=30)
    assert folder.lock_file.read_text() == f"pid {holder.pid}\n"  # left behind
    seen = stand_in_train(monkeypatch)
    assert training.main(["--run-dir", str(folder.path), "--steps", "20"]) == 0, capsys.readouterr().err
    assert seen == [f"pid {os.getpid()}\n"]  # the run held the lock, with its own pid written in it
    assert list(folder.path.iterdir()) == []  # and removed the lock file when it ended


def test_a_run_removes_its_lock_file_and_the_folder_it_made_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = stand_in_train(monkeypatch)
    assert training.main(["--run-dir", str(tmp_path / "new" / "run"), "--steps", "20"]) == 0
    assert seen == [f"pid {os.getpid()}\n"] and list(tmp_path.iterdir()) == []


def test_under_multiworker_the_chief_holds_the_lock_and_other_workers_take_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chief alone writes the run folder, so it alone locks it; worker 1 saves in a temporary folder of its own."""
    folder = training.RunFolder(tmp_path / "run")
    seen = stand_in_train(monkeypatch)
    options = ["--run-dir", str(folder.path), "--steps", "20", "--strategy", "multiworker"]
    chief, other = training.local_tf_configs(2)
    with folder.locked(lock_holder(training.WorkerRole(index=0, workers=2))):  # a chief of a running cluster (this process)
        monkeypatch.setenv(TF_CONFIG, other)
        assert training.main(options) == 0 and len(seen) == 1  # worker 1 is not refused
        monkeypatch.setenv(TF_CONFIG, chief)
        assert training.main(options) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    holder = f"pid {os.getpid()} (worker 0 of 2, the chief: it alone writes the run folder)"
    assert error == f"error: {folder.path} is in use: {holder} holds its lock {folder.lock_file}: {BUSY_REMEDY}\n", error
