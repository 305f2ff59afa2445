"""helpers.train: config checks, what a run writes, and exact resumes after a crash or a SIGKILL."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tensorflow as tf

from helpers import train as training
from helpers.paths import repo_root

#: One configuration for every subprocess run, so they all share the uninterrupted fingerprint.
RUN_OPTIONS = ["--steps", "60", "--checkpoint-every", "10", "--eval-every", "20", "--log-every", "5", "--dropout", "0.2", "--warmup-steps", "5"]


def run_command(run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "helpers.train", "--run-dir", str(run_dir), *RUN_OPTIONS, *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=repo_root(), timeout=120)


def fingerprint_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("fingerprint ")]
    assert len(lines) == 1, stdout
    return lines[0].split()[1]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The fingerprint of the run nobody interrupted (which also shows that the default clip_norm acts)."""
    run_dir = tmp_path_factory.mktemp("straight") / "run"
    result = run_command(run_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "no checkpoint" in result.stdout.splitlines()[0]
    saved = training.read_result(run_dir)
    assert 0 < saved["clipped_steps"] < saved["step"], "the default clip_norm should clip some updates, not all"
    assert saved["non_finite_steps"] == 0 and saved["val_accuracy"] > 0.8
    return fingerprint_line(result.stdout)


# -- configuration -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"steps": 0}, "steps"),
        ({"clip_norm": -1.0}, "clip_norm"),
        ({"checkpoint_every": 0}, "checkpoint_every"),
        ({"warmup_steps": 10, "steps": 10}, "warmup_steps"),
        ({"dropout": 1.0}, "dropout"),
        ({"learning_rate": float("nan")}, "learning_rate"),
        ({"batch_size": True}, "batch_size"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(tmp_path: Path, change: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be"):
        training.TrainConfig(run_dir=tmp_path, **change)


def test_config_is_frozen_and_knows_its_trajectory(tmp_path: Path) -> None:
    config = training.TrainConfig(run_dir=str(tmp_path), dropout=0.1)
    assert config.run_dir == tmp_path
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 5  # type: ignore[misc]
    assert set(config.trajectory()) == set(training.TRAJECTORY_FIELDS) and "log_every" not in config.trajectory()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--steps", "0"], "--steps"),
        (["--clip-norm=-0.5"], "--clip-norm"),
        (["--checkpoint-every", "0"], "--checkpoint-every"),
        (["--steps", "10", "--warmup-steps", "10"], "--warmup-steps"),
        (["--dropout", "1.5"], "--dropout"),
    ],
)
def test_command_line_errors_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], named: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        training.main(["--run-dir", str(tmp_path / "run"), *options])
    assert exit_info.value.code == 2
    assert f"argument {named}" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_help_shows_every_config_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        training.main(["--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    defaults = training.TrainConfig(run_dir=Path("x"))
    for field in dataclasses.fields(training.TrainConfig):
        if field.name != "run_dir":
            option = "--" + field.name.replace("_", "-")
            assert re.search(rf"{option} \S+ .*?\(default: {re.escape(str(getattr(defaults, field.name)))}\)", help_text), option
    parser = training.make_parser()
    assert training.config_from_args(parser, parser.parse_args(["--run-dir", "x"])) == defaults


def test_importing_the_module_does_not_import_tensorflow() -> None:
    code = "import sys, helpers.train; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo_root(), timeout=60)


def test_a_refused_rerun_exits_4_before_importing_tensorflow(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "ckpt-50.index").write_bytes(b"")  # contents never read on this path
    (run_dir / "config.json").write_text(json.dumps(training.TrainConfig(run_dir=run_dir, dropout=0.1).to_json()))
    code = (
        "import sys, helpers.train as t\n"
        f"status = t.main(['--run-dir', {str(run_dir)!r}, '--dropout', '0.3'])\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "sys.exit(status)"
    )
    refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root(), timeout=60)
    assert refused.returncode == training.MISMATCH_EXIT_CODE, refused.stderr[-2000:]
    assert refused.stderr.startswith("error: CheckpointMismatchError:") and "dropout=0.1 there, 0.3 here" in refused.stderr


def test_fingerprint_depends_on_every_byte() -> None:
    import numpy as np

    class Value:
        def __init__(self, array: np.ndarray) -> None:
            self.array = array

        def numpy(self) -> np.ndarray:
            return self.array

    base = [Value(np.zeros(3, np.float32)), Value(np.ones(2, np.int64))]
    changed = [Value(np.array([0, 0, 1e-30], np.float32)), Value(np.ones(2, np.int64))]
    reshaped = [Value(np.zeros((3, 1), np.float32)), Value(np.ones(2, np.int64))]
    assert training.fingerprint(base) == training.fingerprint(list(base))
    assert len({training.fingerprint(base), training.fingerprint(changed), training.fingerprint(reshaped)}) == 3


# -- a tiny run in this process -------------------------------------------------------------
def test_tiny_run_writes_checkpoints_logs_and_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers.checkpoints import CheckpointMismatchError
    from helpers.logs import read_scalars

    config = training.TrainConfig(
        run_dir=tmp_path / "tiny", steps=12, warmup_steps=2, checkpoint_every=5, log_every=2, eval_every=6, dropout=0.1, keep_checkpoints=2
    )
    result = training.train(config)
    assert (result.step, result.start_step, result.steps_run) == (12, 0, 12)
    names = sorted(path.name for path in (config.run_dir / "checkpoints").glob("*.index"))
    assert names == ["ckpt-10.index", "ckpt-12.index"]
    state = tf.train.get_checkpoint_state(str(config.run_dir / "checkpoints"))
    assert [Path(path).name for path in state.all_model_checkpoint_paths] == ["ckpt-10", "ckpt-12"]
    assert 0 < result.clipped_steps <= 12 and result.non_finite_steps == 0
    saved = json.loads((config.run_dir / "result.json").read_text())
    assert saved["fingerprint"] == result.fingerprint and len(saved["fingerprint"]) == 64
    assert saved["val_accuracy"] == saved["val_correct"] / saved["val_examples"]

    train_logs = read_scalars(config.run_dir / "logs" / "train")
    assert {"loss", "learning_rate", "gradients/global_norm", "gradients/clipped"} <= set(train_logs)
    assert list(train_logs["loss"].steps) == [2, 4, 6, 8, 10, 12]
    schedule = training.make_schedule(config)
    expected_rates = [float(schedule(step - 1)) for step in train_logs["learning_rate"].steps]
    assert train_logs["learning_rate"].values == pytest.approx(expected_rates, rel=1e-6)
    validation = read_scalars(config.run_dir / "logs" / "validation")
    assert list(validation["accuracy"].steps) == [6, 12]
    assert validation["accuracy"].values[-1] == pytest.approx(result.val_accuracy)

    again = training.train(config)  # a finished run: restores, does nothing more
    assert (again.start_step, again.steps_run) == (12, 0)
    assert again.fingerprint == result.fingerprint and again.restore_message.startswith("restored ckpt-12")
    assert len(read_scalars(config.run_dir / "logs" / "train")["loss"].steps) == 6

    with pytest.raises(CheckpointMismatchError, match=r"dropout=0\.1 there, 0\.3 here"):
        training.train(dataclasses.replace(config, dropout=0.3))
    with pytest.raises(CheckpointMismatchError, match="does not match the model"):
        training.train(dataclasses.replace(config, hidden_units=64))

    capsys.readouterr()
    options = ["--run-dir", str(config.run_dir), "--steps", "12", "--warmup-steps", "2", "--checkpoint-every", "5"]
    assert training.main([*options, "--dropout", "0.3"]) == training.MISMATCH_EXIT_CODE  # refused before TensorFlow is needed
    assert "dropout=0.1 there, 0.3 here" in capsys.readouterr().err


def test_a_run_of_non_finite_updates_stops_with_its_own_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A learning rate of 1e30 blows the weights up in the first update; every later gradient is NaN."""
    run_dir = tmp_path / "diverging"
    options = ["--run-dir", str(run_dir), "--steps", "30", "--learning-rate", "1e30", "--warmup-steps", "0"]
    assert training.main(options) == training.NON_FINITE_EXIT_CODE
    message = capsys.readouterr().err
    assert message.startswith(f"error: FloatingPointError: {training.MAX_NON_FINITE_STEPS} updates skipped"), message
    assert "Traceback" not in message
    step, batches = map(int, re.search(r"global step (\d+), (\d+) batches drawn", message).groups())
    assert step == 1 and batches == step + training.MAX_NON_FINITE_STEPS
    assert not (run_dir / "result.json").exists()


# -- crashes and kills in a subprocess -------------------------------------------------------
def test_crash_then_rerun_matches_the_uninterrupted_run(tmp_path: Path, uninterrupted: str) -> None:
    run_dir = tmp_path / "crashed"
    crashed = run_command(run_dir, "--crash-at-step", "47")
    assert crashed.returncode == training.CRASH_EXIT_CODE, crashed.stderr[-2000:]
    assert not (run_dir / "result.json").exists()
    resumed = run_command(run_dir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.splitlines()[0].startswith("restored ckpt-40 ")
    assert "(20 steps in this process)" in resumed.stdout
    assert fingerprint_line(resumed.stdout) == uninterrupted

    finished = run_command(run_dir)  # rerun a finished run: nothing left to do
    assert finished.returncode == 0 and "(0 steps in this process)" in finished.stdout
    assert fingerprint_line(finished.stdout) == uninterrupted

    mismatched = run_command(run_dir, "--dropout", "0.0")
    assert mismatched.returncode == training.MISMATCH_EXIT_CODE
    assert "CheckpointMismatchError" in mismatched.stderr and "--fresh" in mismatched.stderr
    assert "Traceback" not in mismatched.stderr


def latest_step(checkpoints: Path) -> int:
    """The step of the *published* latest checkpoint (the state file), -1 if none.

    Files of a newer checkpoint can exist before the state file points at them (a save in
    progress, or one torn by the kill); a resume rightly ignores those.
    """
    latest = tf.train.latest_checkpoint(str(checkpoints))
    return int(Path(latest).name[len("ckpt-") :]) if latest else -1


def test_sigkill_then_rerun_matches_the_uninterrupted_run(tmp_path: Path, uninterrupted: str) -> None:
    run_dir = tmp_path / "killed"
    command = [sys.executable, "-m", "helpers.train", "--run-dir", str(run_dir), *RUN_OPTIONS, "--pause-per-step", "0.05"]
    process = subprocess.Popen(command, cwd=repo_root(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while latest_step(run_dir / "checkpoints") < 20:
            assert process.poll() is None, f"the run ended before it could be killed: {process.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, "no checkpoint at step 20 within 90 s"
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    killed_at = latest_step(run_dir / "checkpoints")
    assert 20 <= killed_at < 60 and not (run_dir / "result.json").exists()

    resumed = run_command(run_dir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.splitlines()[0].startswith("restored ckpt-")
    assert json.loads((run_dir / "result.json").read_text())["start_step"] >= 20
    assert fingerprint_line(resumed.stdout) == uninterrupted


def test_fresh_refuses_a_folder_with_files_no_run_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not from a run")
    with pytest.raises(SystemExit) as exit_info:
        training.main(["--run-dir", str(tmp_path), "--steps", "30", "--fresh"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "argument --fresh" in error and "notes.txt" in error and "refusing to empty it" in error
    assert (tmp_path / "notes.txt").read_text() == "not from a run"
