"""helpers.train: config checks, refusals of bad input, what a run writes, exact resumes after a crash, a SIGKILL,
Ctrl-C or SIGTERM, and the same loop on two replicas and on two worker processes."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from helpers import train as training
from helpers.paths import checkpoint_name, repo_root

#: One configuration for every subprocess run, so they all share the uninterrupted fingerprint.
RUN_OPTIONS = ["--steps", "60", "--checkpoint-every", "10", "--eval-every", "20", "--log-every", "5", "--dropout", "0.2", "--warmup-steps", "5"]


def run_command(run_dir: Path, *extra: str) -> training.Finished:
    return training.finish(training.start(["--run-dir", str(run_dir), *RUN_OPTIONS, *extra]))


def fingerprint_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("fingerprint ")]
    assert len(lines) == 1, stdout
    return lines[0].split()[1]


@pytest.fixture(scope="module")
def uninterrupted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run nobody interrupted (which also shows that the default clip_norm acts)."""
    run_dir = tmp_path_factory.mktemp("straight") / "run"
    result = run_command(run_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "no checkpoint" in result.stdout.splitlines()[0]
    saved = training.RunFolder(run_dir).read_result()
    assert 0 < saved["clipped_steps"] < saved["step"], "the default clip_norm should clip some updates, not all"
    assert saved["non_finite_steps"] == 0 and saved["val_accuracy"] > 0.8
    assert fingerprint_line(result.stdout) == saved["fingerprint"]
    return run_dir


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_run: Path) -> str:
    """The uninterrupted run's fingerprint."""
    return training.RunFolder(uninterrupted_run).read_result()["fingerprint"]


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
    assert set(config.trajectory()) == set(training.TrainConfig.TRAJECTORY_FIELDS) and "log_every" not in config.trajectory()


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


def test_the_default_warmup_fits_any_number_of_steps(tmp_path: Path) -> None:
    for steps, warmup in [(1, 0), (9, 0), (20, 2), (150, 15), (240, 20), (10_000, 20)]:
        assert training.TrainConfig(run_dir=tmp_path, steps=steps).warmup_steps == warmup
    parser = training.make_parser()
    assert training.config_from_args(parser, parser.parse_args(["--run-dir", "x", "--steps", "20"])).warmup_steps == 2


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns) for path in sorted(folder.rglob("*"))}


@pytest.mark.parametrize(
    ("files", "run_name", "says"),
    [
        ({"notes.txt": "mine"}, "notes.txt", "is a file, not a folder"),
        ({"run/checkpoints": ""}, "run", "is a file where the run keeps a folder"),
        ({"run/config.json": "{not json"}, "run", "is not a run's config (JSONDecodeError)"),
        ({"run/config.json": "[1, 2]"}, "run", "is not a run's config (not a JSON object)"),
        ({"run/thesis.tex": "mine"}, "run", "holds files no run writes (thesis.tex)"),
    ],
)
def test_an_unusable_run_folder_is_refused_in_one_line_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], run_name: str, says: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    run_dir = tmp_path / run_name
    before = folder_state(tmp_path)
    assert training.main(["--run-dir", str(run_dir), "--steps", "20"]) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    assert error.startswith("error: ") and says in error and error.count("\n") == 1, error
    assert error.rstrip().endswith(("move it away, or use --fresh", "give --run-dir a new folder or one an earlier run wrote")), error
    assert folder_state(tmp_path) == before
    with pytest.raises(training.RunFolderError, match=re.escape(says)):
        training.train(training.TrainConfig(run_dir=run_dir, steps=20))
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize(
    ("tf_config", "says"),
    [
        (None, "needs the TF_CONFIG environment variable"),
        ("{", "must be JSON with cluster.worker and task.index"),
        ('{"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}}', "non-empty list"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 1}}', "index': 0..0"),
        ('{"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}}', "only hold 'worker'"),
    ],
)
def test_multiworker_needs_a_usable_tf_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tf_config: str | None, says: str
) -> None:
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    assert training.main(["--run-dir", str(tmp_path / "run"), "--strategy", "multiworker"]) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    assert says in error and error.count("\n") == 1, error
    assert not (tmp_path / "run").exists()


def test_local_tf_configs_describe_one_cluster_on_free_ports() -> None:
    configs = [json.loads(value) for value in training.local_tf_configs(3)]
    clusters = {json.dumps(config["cluster"]) for config in configs}
    assert len(clusters) == 1 and [config["task"] for config in configs] == [{"type": "worker", "index": i} for i in range(3)]
    addresses = configs[0]["cluster"]["worker"]
    assert len(set(addresses)) == 3 and all(address.startswith("127.0.0.1:") for address in addresses)
    roles = [training.worker_role(value) for value in training.local_tf_configs(2)]
    assert [(role.index, role.workers, role.is_chief) for role in roles] == [(0, 2, True), (1, 2, False)]
    with pytest.raises(ValueError, match="workers must be a positive int"):
        training.local_tf_configs(0)


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


@pytest.mark.process
def test_importing_the_module_does_not_import_tensorflow() -> None:
    code = "import sys, helpers.train; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo_root(), timeout=60)


@pytest.mark.process
def test_a_refused_rerun_exits_4_before_importing_tensorflow(tmp_path: Path) -> None:
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
    folder = training.RunFolder(config.run_dir)
    names = sorted(path.name for path in folder.checkpoints.glob("*.index"))
    assert names == ["ckpt-10.index", "ckpt-12.index"]
    state = tf.train.get_checkpoint_state(str(folder.checkpoints))
    assert [Path(path).name for path in state.all_model_checkpoint_paths] == ["ckpt-10", "ckpt-12"]
    assert 0 < result.clipped_steps <= 12 and result.non_finite_steps == 0
    saved = folder.read_result()
    assert saved["fingerprint"] == result.fingerprint and len(saved["fingerprint"]) == 64
    assert saved["val_accuracy"] == saved["val_correct"] / saved["val_examples"]

    train_logs = read_scalars(folder.train_logs)
    assert {"loss", "learning_rate", "gradients/global_norm", "gradients/clipped"} <= set(train_logs)
    assert list(train_logs["loss"].steps) == [2, 4, 6, 8, 10, 12]
    schedule = training.make_schedule(config)
    expected_rates = [float(schedule(step - 1)) for step in train_logs["learning_rate"].steps]
    assert train_logs["learning_rate"].values == pytest.approx(expected_rates, rel=1e-6)
    validation = read_scalars(folder.validation_logs)
    assert list(validation["accuracy"].steps) == [6, 12]
    assert validation["accuracy"].values[-1] == pytest.approx(result.val_accuracy)

    again = training.train(config)  # a finished run: restores, does nothing more
    assert (again.start_step, again.steps_run) == (12, 0)
    assert again.fingerprint == result.fingerprint and again.restore_message.startswith("restored ckpt-12")
    assert len(read_scalars(folder.train_logs)["loss"].steps) == 6

    with pytest.raises(CheckpointMismatchError, match=r"dropout=0\.1 there, 0\.3 here"):
        training.train(dataclasses.replace(config, dropout=0.3))
    with pytest.raises(CheckpointMismatchError, match="does not match the model"):
        training.train(dataclasses.replace(config, hidden_units=64))

    capsys.readouterr()
    options = ["--run-dir", str(config.run_dir), "--steps", "12", "--warmup-steps", "2", "--checkpoint-every", "5"]
    assert training.main([*options, "--dropout", "0.3"]) == training.MISMATCH_EXIT_CODE  # refused before TensorFlow is needed
    assert "dropout=0.1 there, 0.3 here" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("step", "options", "expected"),
    [
        (0, {}, 50),  # steps_per_call 50, and the first checkpoint and evaluation are at 50 too
        (0, {"steps_per_call": 30}, 30),
        (40, {"steps_per_call": 30}, 50),  # the checkpoint at 50 ends the call early
        (0, {"steps_per_call": 100, "checkpoint_every": 70, "eval_every": 60}, 60),
        (60, {"steps_per_call": 100, "checkpoint_every": 70, "eval_every": 60}, 70),
        (190, {"steps_per_call": 100}, 200),  # the last step
        (0, {"crash_at_step": 7}, 7),
        (7, {"crash_at_step": 7}, 50),  # past the crash step it no longer counts
        (12, {"one_step": True}, 13),
    ],
)
def test_a_call_ends_where_python_has_work(tmp_path: Path, step: int, options: dict, expected: int) -> None:
    call = {name: options.pop(name) for name in ("crash_at_step", "one_step") if name in options}
    config = training.TrainConfig(run_dir=tmp_path, steps=200, **options)
    assert training.call_end(step, config, **call) == expected


def test_steps_per_call_changes_neither_the_trajectory_nor_the_logs(tmp_path: Path) -> None:
    """One update per call or seven: the same final state, the same checkpoints, the same scalars at the same steps."""
    from helpers.logs import read_scalars

    runs = {}
    for per_call in (1, 7):
        config = training.TrainConfig(
            run_dir=tmp_path / f"per_call_{per_call}", steps=24, warmup_steps=3, checkpoint_every=10, log_every=4, eval_every=12,
            dropout=0.2, keep_checkpoints=5, steps_per_call=per_call,
        )
        result = training.train(config, out=io.StringIO())
        folder = training.RunFolder(config.run_dir)
        logs = read_scalars(folder.train_logs)
        runs[per_call] = (
            result.fingerprint,
            sorted(path.name for path in folder.checkpoints.glob("*.index")),
            {tag: (list(series.steps), list(series.values)) for tag, series in logs.items()},
        )
    assert runs[1] == runs[7]
    assert runs[7][1] == ["ckpt-10.index", "ckpt-20.index", "ckpt-24.index"]
    assert runs[7][2]["loss"][0] == [4, 8, 12, 16, 20, 24]
    assert "steps_per_call" not in training.TrainConfig.TRAJECTORY_FIELDS


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
    assert not training.RunFolder(run_dir).result_file.exists()


# -- crashes, kills and signals in a subprocess ----------------------------------------------
@pytest.mark.process
def test_crash_then_rerun_matches_the_uninterrupted_run(tmp_path: Path, uninterrupted: str) -> None:
    run_dir = tmp_path / "crashed"
    crashed = run_command(run_dir, "--crash-at-step", "47")
    assert crashed.returncode == training.CRASH_EXIT_CODE, crashed.stderr[-2000:]
    assert not training.RunFolder(run_dir).result_file.exists()
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


@pytest.mark.process
def test_sigkill_then_rerun_matches_the_uninterrupted_run(tmp_path: Path, uninterrupted: str) -> None:
    folder = training.RunFolder(tmp_path / "killed")
    process = training.start(["--run-dir", str(folder.path), *RUN_OPTIONS, "--pause-per-step", "0.05"])
    [killed] = training.signal_at_step([process], folder, 20, signal_number=signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    killed_at = folder.latest_step()
    assert 20 <= killed_at < 60 and not folder.result_file.exists()

    resumed = run_command(folder.path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.splitlines()[0].startswith(f"restored {checkpoint_name(killed_at)} ")
    assert folder.read_result()["start_step"] == killed_at
    assert fingerprint_line(resumed.stdout) == uninterrupted


@pytest.mark.process
def test_sigint_and_sigterm_save_at_the_current_step_and_the_rerun_resumes_exactly(tmp_path: Path, uninterrupted: str) -> None:
    """Ctrl-C, then a SIGTERM, each between two periodic checkpoints: nothing done before the signal is lost."""
    folder = training.RunFolder(tmp_path / "stopped")
    stopped_at = []
    for signal_number, after_checkpoint in [(signal.SIGINT, 10), (signal.SIGTERM, 30)]:
        process = training.start(["--run-dir", str(folder.path), *RUN_OPTIONS, "--pause-per-step", "0.1"])
        # a few steps after the periodic checkpoint (0.1 s per step), so the save that follows is the signal's
        [stopped] = training.signal_at_step([process], folder, after_checkpoint, signal_number=signal_number, delay=0.25)
        assert stopped.returncode == training.interrupt_exit_code(signal_number) == 128 + signal_number, stopped.stderr[-2000:]
        step = folder.latest_step()
        message = stopped.stderr.strip().splitlines()[-1]
        assert message == (
            f"error: stopped by {signal.Signals(signal_number).name} at step {step}; saved {folder.checkpoints / checkpoint_name(step)}; "
            f"run the same command again to resume from step {step}"
        ), stopped.stderr[-2000:]
        assert "Traceback" not in stopped.stderr and step % 10 != 0, "the save comes from the signal, not from --checkpoint-every"
        stopped_at.append(step)
    assert stopped_at[0] < stopped_at[1] < 60

    resumed = run_command(folder.path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.splitlines()[0].startswith(f"restored {checkpoint_name(stopped_at[1])} ")
    assert fingerprint_line(resumed.stdout) == uninterrupted


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.process
def test_a_signal_while_starting_up_ends_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, signal_number: int
) -> None:
    """Ctrl-C while TensorFlow loads (here: during a stand-in for train) is one line and 130, not a traceback."""
    import time

    def starting_up(*_: object, **__: object) -> None:
        os.kill(os.getpid(), signal_number)
        time.sleep(5)
        raise AssertionError("the signal did not stop the command")

    monkeypatch.setattr(training, "train", starting_up)
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    assert training.main(["--run-dir", str(tmp_path / "run"), "--steps", "20"]) == 128 + signal_number
    error = capsys.readouterr().err
    assert error == f"error: stopped by {signal.Signals(signal_number).name} outside the training loop (no checkpoint saved for it); run the same command again to resume or start\n"
    assert {number: signal.getsignal(number) for number in before} == before  # the caller's handlers are back
    assert not (tmp_path / "run").exists()


def test_fresh_refuses_a_folder_with_files_no_run_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not from a run")
    assert training.main(["--run-dir", str(tmp_path), "--steps", "30", "--fresh"]) == training.USAGE_EXIT_CODE
    error = capsys.readouterr().err
    assert "notes.txt" in error and "refusing to empty it" in error
    assert (tmp_path / "notes.txt").read_text() == "not from a run"


# -- tf.distribute ----------------------------------------------------------------------------
#: Mirrored and single-device runs differ only by float rounding (two half-batch gradient sums
#: instead of one full-batch sum). For RUN_OPTIONS (seed 0, 60 Adam steps) no weight differs by more;
#: Adam can amplify a rounding difference at other seeds (chapter 09, *Mirrored vs single device*).
MIRRORED_TOLERANCE = 1e-4


def restored_weights(run_dir: Path) -> list:
    """The final weights of a finished run, restored in this process without a strategy."""
    config = training.TrainConfig(**training.RunFolder(run_dir).saved_config() | {"run_dir": run_dir, "strategy": "default"})
    objects = training.build(config)
    info = objects.checkpoint.restore()
    assert info.step == config.steps
    return [variable.numpy() for variable in objects.model.trainable_variables]


@pytest.mark.process
def test_two_workers_agree_survive_a_preemption_and_match_mirrored(tmp_path: Path) -> None:
    """Two local workers: SIGTERM to worker 1 makes both save at one step; the restarted job ends like a mirrored run.

    Without Dropout (whose masks depend on how the batch is split), so the mirrored run can also be
    compared with a single-device run.
    """
    import numpy as np

    folder = training.RunFolder(tmp_path / "workers")
    options = ["--run-dir", str(folder.path), *RUN_OPTIONS, "--dropout", "0.0"]
    first = training.signal_at_step(training.start_workers([*options, "--pause-per-step", "0.05"]), folder, 20, signal_number=signal.SIGTERM, target=1)
    assert [run.returncode for run in first] == [training.interrupt_exit_code(signal.SIGTERM)] * 2, [run.stderr[-1500:] for run in first]
    saved_at = folder.latest_step()
    assert all(f"at step {saved_at};" in run.stderr for run in first) and 20 <= saved_at < 60
    assert "a temporary folder" in first[1].stderr and sorted(entry.name for entry in folder.path.iterdir()) == sorted(training.RunFolder.ENTRIES - {"result.json"})

    second = [training.finish(process) for process in training.start_workers(options)]
    assert [run.returncode for run in second] == [0, 0], [run.stderr[-1500:] for run in second]
    assert all(run.stdout.startswith(f"restored {checkpoint_name(saved_at)} ") for run in second)
    fingerprints = {fingerprint_line(run.stdout) for run in second}
    assert len(fingerprints) == 1 and folder.read_result()["replicas"] == 2  # both workers end with the same weights
    assert "checkpoints in" not in second[1].stdout  # only the chief writes

    mirrored = run_command(tmp_path / "mirrored", "--dropout", "0.0", "--strategy", "mirrored")
    assert mirrored.returncode == 0, mirrored.stderr[-2000:]
    assert fingerprint_line(mirrored.stdout) in fingerprints  # two workers = two mirrored replicas, bit for bit

    single = run_command(tmp_path / "single", "--dropout", "0.0")
    assert single.returncode == 0, single.stderr[-2000:]
    differences = [np.max(np.abs(a - b)) for a, b in zip(restored_weights(tmp_path / "single"), restored_weights(folder.path), strict=True)]
    assert max(differences) <= MIRRORED_TOLERANCE, differences
