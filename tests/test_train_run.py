"""helpers.train.run: one tiny run in this process, each claim about what it writes checked on its own."""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

import pytest
import tensorflow as tf

from helpers import train as training
from helpers.checkpoints import CheckpointMismatchError
from helpers.logs import read_scalars

TINY = {"steps": 12, "warmup_steps": 2, "checkpoint_every": 5, "log_every": 2, "eval_every": 6, "dropout": 0.1, "keep_checkpoints": 2}


@dataclasses.dataclass(frozen=True)
class TinyRun:
    config: training.TrainConfig
    result: training.TrainResult
    output: str

    @property
    def folder(self) -> training.RunFolder:
        return training.RunFolder(self.config.run_dir)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyRun:
    config = training.TrainConfig(run_dir=tmp_path_factory.mktemp("tiny") / "run", **TINY)
    output = io.StringIO()
    return TinyRun(config, training.train(config, out=output), output.getvalue())


def test_it_runs_every_step_from_zero(tiny: TinyRun) -> None:
    assert (tiny.result.step, tiny.result.start_step, tiny.result.steps_run) == (12, 0, 12)
    assert tiny.output.splitlines()[0].startswith("no checkpoint in ")


def test_it_keeps_the_newest_checkpoints_named_by_step(tiny: TinyRun) -> None:
    assert sorted(path.name for path in tiny.folder.checkpoints.glob("*.index")) == ["ckpt-10.index", "ckpt-12.index"]
    state = tf.train.get_checkpoint_state(str(tiny.folder.checkpoints))
    assert [Path(path).name for path in state.all_model_checkpoint_paths] == ["ckpt-10", "ckpt-12"]
    assert tiny.folder.latest_step() == 12


def test_result_json_holds_the_result_and_its_fingerprint(tiny: TinyRun) -> None:
    saved = tiny.folder.read_result()
    assert saved == tiny.result.to_json() and len(saved["fingerprint"]) == 64
    assert saved["val_accuracy"] == saved["val_correct"] / saved["val_examples"]
    assert f"fingerprint {saved['fingerprint']}" in tiny.output.splitlines()
    assert 0 < tiny.result.clipped_steps <= 12 and tiny.result.non_finite_steps == 0


def test_scalars_are_logged_every_log_every_steps_with_the_rate_of_the_update_just_made(tiny: TinyRun) -> None:
    train_logs = read_scalars(tiny.folder.train_logs)
    assert {"loss", "learning_rate", "gradients/global_norm", "gradients/clipped"} <= set(train_logs)
    assert list(train_logs["loss"].steps) == [2, 4, 6, 8, 10, 12]
    schedule = training.make_schedule(tiny.config)
    expected_rates = [float(schedule(step - 1)) for step in train_logs["learning_rate"].steps]  # rate_of_update, written out
    assert train_logs["learning_rate"].values == pytest.approx(expected_rates, rel=1e-6)


def test_validation_is_logged_every_eval_every_steps(tiny: TinyRun) -> None:
    validation = read_scalars(tiny.folder.validation_logs)
    assert list(validation["accuracy"].steps) == [6, 12]
    assert validation["accuracy"].values[-1] == pytest.approx(tiny.result.val_accuracy)
    assert [line.split(":")[0] for line in tiny.output.splitlines() if line.startswith("step ")] == ["step 6/12", "step 12/12"]


def test_a_finished_run_restores_and_does_nothing_more(tiny: TinyRun) -> None:
    again = training.train(tiny.config, out=io.StringIO())
    assert (again.start_step, again.steps_run) == (12, 0)
    assert again.fingerprint == tiny.result.fingerprint and again.restore_message.startswith("restored ckpt-12")
    assert len(read_scalars(tiny.folder.train_logs)["loss"].steps) == 6  # no scalar written twice


def test_other_trajectory_values_or_another_model_are_refused(tiny: TinyRun, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CheckpointMismatchError, match=r"dropout=0\.1 there, 0\.3 here"):
        training.train(dataclasses.replace(tiny.config, dropout=0.3), out=io.StringIO())
    with pytest.raises(CheckpointMismatchError, match="does not match the model"):
        training.train(dataclasses.replace(tiny.config, hidden_units=64), out=io.StringIO())
    options = ["--run-dir", str(tiny.config.run_dir), "--steps", "12", "--warmup-steps", "2", "--checkpoint-every", "5"]
    assert training.main([*options, "--dropout", "0.3"]) == training.MISMATCH_EXIT_CODE  # refused before TensorFlow is needed
    assert "dropout=0.1 there, 0.3 here" in capsys.readouterr().err


def test_an_unusable_folder_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "thesis.tex").write_text("mine")
    with pytest.raises(training.RunFolderError, match=r"holds files no run writes \(thesis\.tex\)"):
        training.train(training.TrainConfig(run_dir=tmp_path / "run", steps=20), out=io.StringIO())
    assert [entry.name for entry in (tmp_path / "run").iterdir()] == ["thesis.tex"]


def test_an_empty_state_file_resumes_from_the_newest_good_checkpoint_exactly(tiny: TinyRun, tmp_path: Path) -> None:
    """Issue 21, item 3: an empty ``checkpoint`` file (what a crash while writing it leaves) used to be TensorFlow's traceback."""
    config = dataclasses.replace(tiny.config, run_dir=tmp_path / "run")
    folder = training.RunFolder(config.run_dir)
    shutil.copytree(tiny.folder.path, folder.path)
    (folder.checkpoints / "checkpoint").write_text("")
    for newest in folder.checkpoints.glob("ckpt-12.*"):  # so the resume has steps to run
        newest.unlink()
    folder.result_file.unlink()
    assert folder.latest_step() == -1  # nothing is published, and asking does not raise
    output = io.StringIO()
    resumed = training.train(config, out=output)
    assert output.getvalue().splitlines()[0] == (
        f"restored ckpt-10 from {folder.checkpoints} at step 10 (the state file 'checkpoint' is unreadable; skipped damaged: none)"
    )
    assert (resumed.start_step, resumed.step) == (10, 12) and resumed.fingerprint == tiny.result.fingerprint
    assert folder.latest_step() == 12
