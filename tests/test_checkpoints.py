"""helpers.checkpoints.TrainingCheckpoint: exact resume, mismatches, damage, crashes."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import helpers
from helpers.checkpoints import (
    CheckpointError,
    CheckpointMismatchError,
    TrainingCheckpoint,
    all_variables_equal,
    describe,
    seed_generator_states,
)
from helpers.processes import Deadline

STEPS = 6


def make_model(hidden: int = 16, dropout: bool = True) -> keras.Model:
    layers = [keras.Input((4,)), keras.layers.Dense(hidden, activation="relu")]
    if dropout:
        layers.append(keras.layers.Dropout(0.5))
    return keras.Sequential([*layers, keras.layers.Dense(3)])


def batches(count: int = STEPS) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(8, 4)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32)) for _ in range(count)]


def train(model: keras.Model, optimizer: keras.optimizers.Optimizer, data: list) -> None:
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for images, labels in data:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))


def fresh(seed: int = 0, **model_args: object) -> tuple[keras.Model, keras.optimizers.Optimizer]:
    helpers.set_seed(seed)
    return make_model(**model_args), keras.optimizers.Adam(1e-2)


def test_seed_generator_states_are_found() -> None:
    assert len(seed_generator_states(make_model())) == 1
    assert seed_generator_states(make_model(dropout=False)) == []


def straight_and_half(data: list) -> tuple[keras.Model, keras.optimizers.Optimizer, keras.Model, keras.optimizers.Optimizer]:
    """One model trained on all of ``data``, and one from the same seed trained on its first half."""
    straight_model, straight_optimizer = fresh()
    train(straight_model, straight_optimizer, data)
    model, optimizer = fresh()
    train(model, optimizer, data[: len(data) // 2])
    return straight_model, straight_optimizer, model, optimizer


def test_resume_is_bit_identical_with_dropout(tmp_path: Path) -> None:
    data = batches()
    straight_model, straight_optimizer, model, optimizer = straight_and_half(data)
    saved = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer).save()
    assert saved.name == f"ckpt-{STEPS // 2}"

    resumed_model, resumed_optimizer = fresh(seed=99)  # different initial weights and seeds
    info = TrainingCheckpoint(tmp_path, model=resumed_model, optimizer=resumed_optimizer).restore()
    assert info.restored and info.step == STEPS // 2 and "ckpt-3" in info.message
    train(resumed_model, resumed_optimizer, data[STEPS // 2 :])
    assert all_variables_equal(resumed_model.weights, straight_model.weights)
    assert all_variables_equal(resumed_optimizer.variables, straight_optimizer.variables)


def test_a_plain_checkpoint_of_the_model_does_not_resume_dropout_exactly(tmp_path: Path) -> None:
    """Why TrainingCheckpoint saves seed-generator states: without them the runs diverge."""
    data = batches()
    straight_model, straight_optimizer, model, optimizer = straight_and_half(data)
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).write(str(tmp_path / "plain"))
    resumed_model, resumed_optimizer = fresh(seed=99)
    tf.train.Checkpoint(model=resumed_model, optimizer=resumed_optimizer).read(path)
    train(resumed_model, resumed_optimizer, data[STEPS // 2 :])
    assert not all_variables_equal(resumed_model.weights, straight_model.weights)


def test_extra_trackables_are_saved(tmp_path: Path) -> None:
    model, optimizer = fresh()
    generator = tf.random.Generator.from_seed(1)
    generator.normal([3])
    TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer, rng=generator).save()
    expected = generator.normal([3]).numpy()
    other = tf.random.Generator.from_seed(2)
    model, optimizer = fresh()
    TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer, rng=other).restore()
    np.testing.assert_array_equal(other.normal([3]).numpy(), expected)


def test_a_data_iterator_resumes_mid_epoch(tmp_path: Path) -> None:
    dataset = tf.data.Dataset.range(100).shuffle(100, seed=3, reshuffle_each_iteration=True).batch(7).repeat()
    iterator = iter(dataset)
    model, optimizer = fresh()
    for _ in range(5):
        next(iterator)
    TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer, data=iterator).save()
    expected = [next(iterator).numpy() for _ in range(20)]  # crosses into the next epochs
    other = iter(dataset)
    model, optimizer = fresh()
    info = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer, data=other).restore()
    assert info.restored
    for want in expected:
        np.testing.assert_array_equal(next(other).numpy(), want)


def test_every_checkpoint_damaged_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    _two_saves(tmp_path)
    for data_file in tmp_path.glob("ckpt-*.data-*"):
        data_file.write_bytes(b"")
    model, optimizer = fresh()
    with pytest.raises(CheckpointError, match="every checkpoint in .* is damaged \\(ckpt-4, ckpt-2\\)"):
        TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer).restore()
    assert (tmp_path / "ckpt-4.index").is_file()  # nothing deleted


def test_files_are_named_by_step_and_old_ones_pruned(tmp_path: Path) -> None:
    model, optimizer = fresh()
    manager = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer, max_to_keep=2)
    for _ in range(4):
        train(model, optimizer, batches(2))
        manager.save()
    assert [path.name for path in manager.checkpoints()] == ["ckpt-6", "ckpt-8"]
    assert (tmp_path / "checkpoint").read_text().startswith('model_checkpoint_path: "ckpt-8"')
    shapes = describe(tmp_path / "ckpt-8")
    assert "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE" in shapes and (4, 16) in shapes.values()


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_bad_max_to_keep(tmp_path: Path, bad: object) -> None:
    model, optimizer = fresh()
    with pytest.raises(ValueError, match="max_to_keep"):
        TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer, max_to_keep=bad)  # type: ignore[arg-type]


def test_missing_or_empty_folder_starts_from_scratch(tmp_path: Path) -> None:
    model, optimizer = fresh()
    for folder in (tmp_path / "absent", tmp_path):
        info = TrainingCheckpoint(folder, model=model, optimizer=optimizer).restore()
        assert not info.restored and info.step == 0 and info.message.startswith("no checkpoint in")


@pytest.mark.parametrize(
    ("model_args", "match"),
    [({"hidden": 8}, "incompatible tensor with shape"), ({"dropout": False}, r"holds \(root\)\.seed_states\.0, which nothing")],
)
def test_structure_mismatch_is_refused(tmp_path: Path, model_args: dict, match: str) -> None:
    model, optimizer = fresh()
    train(model, optimizer, batches(1))
    TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer).save()
    other_model, other_optimizer = fresh(**model_args)
    with pytest.raises(CheckpointMismatchError, match=match):
        TrainingCheckpoint(tmp_path, model=other_model, optimizer=other_optimizer).restore()


def _two_saves(tmp_path: Path) -> TrainingCheckpoint:
    model, optimizer = fresh()
    manager = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer)
    train(model, optimizer, batches(2))
    manager.save()
    train(model, optimizer, batches(2))
    manager.save()
    return manager


def test_corrupted_state_file_falls_back_to_the_newest_good_checkpoint(tmp_path: Path) -> None:
    _two_saves(tmp_path)
    (tmp_path / "checkpoint").write_text("garbage {{{")
    model, optimizer = fresh()
    info = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer).restore()
    assert info.step == 4 and "unreadable" in info.message


@pytest.mark.parametrize(
    "state_text",
    ["", 'all_model_checkpoint_paths: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-4"\n', 'model_checkpoint_path: ""\nall_model_checkpoint_paths: "ckpt-4"\n'],
    ids=["empty", "only-all-paths", "empty-latest"],
)
def test_a_state_file_naming_no_latest_checkpoint_falls_back_to_the_newest_good_one(tmp_path: Path, state_text: str) -> None:
    """Issue 21, item 3: TensorFlow raises "Invalid checkpoint state" for these (an empty file is what a crash while writing it leaves)."""
    _two_saves(tmp_path)
    (tmp_path / "checkpoint").write_text(state_text)
    model, optimizer = fresh()
    manager = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer)
    info = manager.restore()
    assert info.step == 4 and info.message.endswith("(the state file 'checkpoint' is unreadable; skipped damaged: none)"), info.message
    train(model, optimizer, batches(1))
    manager.save()  # the next save writes a good state file again
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-5")


def test_damaged_latest_checkpoint_falls_back_to_the_previous_one(tmp_path: Path) -> None:
    _two_saves(tmp_path)
    data_file = next(tmp_path.glob("ckpt-4.data-*"))
    data_file.write_bytes(data_file.read_bytes()[:100])
    model, optimizer = fresh()
    manager = TrainingCheckpoint(tmp_path, model=model, optimizer=optimizer)
    info = manager.restore()
    assert info.step == 2 and info.skipped == ("ckpt-4",) and "skipped damaged: ckpt-4" in info.message
    with pytest.raises(CheckpointError, match="missing or damaged"):
        manager.restore(tmp_path / "ckpt-4")


SCRIPT = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {tests!r})
    import helpers
    helpers.quiet_tensorflow_logs()
    from test_checkpoints import batches, fresh, train
    from helpers.checkpoints import TrainingCheckpoint
    model, optimizer = fresh()
    manager = TrainingCheckpoint({folder!r}, model=model, optimizer=optimizer, max_to_keep=None)
    mode = {mode!r}
    if mode == "die-before-publish":
        train(model, optimizer, batches(2)); manager.save()
        train(model, optimizer, batches(2))
        manager._publish = lambda prefix: os._exit(17)  # the crash: files written, not yet published
        manager.save()
    else:  # save as fast as possible until killed
        print("ready", flush=True)
        while True:
            train(model, optimizer, batches(1)); manager.save()
    """
)


def _script(python: str, tmp_path: Path, mode: str) -> list[str]:
    code = SCRIPT.format(tests=str(Path(__file__).parent), folder=str(tmp_path / "ckpt"), mode=mode)
    return [python, "-c", code]


def test_a_crash_between_writing_and_publishing_keeps_the_previous_latest(tmp_path: Path, python: str) -> None:
    result = subprocess.run(_script(python, tmp_path, "die-before-publish"), capture_output=True, text=True, timeout=300)
    assert result.returncode == 17, result.stderr[-2000:]
    folder = tmp_path / "ckpt"
    assert (folder / "ckpt-4.index").is_file()  # the torn save's files exist ...
    model, optimizer = fresh()
    manager = TrainingCheckpoint(folder, model=model, optimizer=optimizer)
    info = manager.restore()
    assert info.step == 2  # ... but the latest is still the previous, complete checkpoint
    train(model, optimizer, batches(1))
    manager.save()  # the next save cleans up what the crash left behind
    assert [path.name for path in manager.checkpoints()] == ["ckpt-2", "ckpt-3"]


def _published_step(folder: Path) -> int:
    latest = tf.train.latest_checkpoint(str(folder))
    return int(Path(latest).name.removeprefix("ckpt-")) if latest else -1


def test_a_process_killed_while_saving_leaves_a_restorable_latest(tmp_path: Path, python: str) -> None:
    process = subprocess.Popen(_script(python, tmp_path, "save-until-killed"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        folder = tmp_path / "ckpt"
        deadline = Deadline(120)
        # The published latest (the state file), not the files: a save in progress writes its
        # files before publishing them, and a kill in between rightly leaves the previous one.
        while _published_step(folder) < 5 and not deadline.passed():
            deadline.pause(0.05)
        os.kill(process.pid, signal.SIGKILL)  # wherever it is: often in the middle of a save
    finally:
        process.kill()
        process.wait()
    model, optimizer = fresh()
    info = TrainingCheckpoint(folder, model=model, optimizer=optimizer).restore()
    assert info.restored and info.step >= 5
    assert info.step == int(optimizer.iterations)


def test_a_save_that_fails_removes_what_it_wrote_and_keeps_the_previous_latest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21, item 2: a full disk used to leave ``ckpt-N_temp/`` and a 0-byte ``ckpt-N.index`` behind, and raise TensorFlow's error."""
    import errno

    from helpers.checkpoints import CheckpointSaveError

    model, optimizer = fresh()
    manager = TrainingCheckpoint(tmp_path / "ckpt", model=model, optimizer=optimizer)
    train(model, optimizer, batches(2))
    manager.save()

    def full_disk(checkpoint: tf.train.Checkpoint, prefix: str) -> str:  # what TensorFlow leaves when SaveV2 finds no space
        Path(f"{prefix}_temp").mkdir()
        Path(f"{prefix}.index").write_bytes(b"")
        raise tf.errors.ResourceExhaustedError(None, None, f"{prefix}_temp/part-00000-of-00001.data-00000-of-00001.tempstate1; No space left on device")

    train(model, optimizer, batches(1))
    monkeypatch.setattr(tf.train.Checkpoint, "write", full_disk)
    with pytest.raises(CheckpointSaveError) as raised:
        manager.save()
    assert raised.value.errno == errno.ENOSPC and isinstance(raised.value, OSError)
    assert str(raised.value) == f"ckpt-3 could not be written in {tmp_path / 'ckpt'} (No space left on device); the latest checkpoint is still ckpt-2"
    assert sorted(path.name for path in (tmp_path / "ckpt").iterdir()) == ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index"]


def test_key_tree_spells_the_object_paths_of_a_checkpoints_keys() -> None:
    from helpers.checkpoints import VALUE_SUFFIX, key_tree, tree_paths

    keys = ["_CHECKPOINTABLE_OBJECT_GRAPH", f"optimizer/_iterations{VALUE_SUFFIX}", f"optimizer/_variables/2{VALUE_SUFFIX}", f"save_counter{VALUE_SUFFIX}"]
    tree = key_tree(keys)
    assert tree == {"optimizer": {"_iterations": None, "_variables": {"2": None}}, "save_counter": None}
    assert tree_paths(tree) == ["optimizer/_iterations", "optimizer/_variables/2", "save_counter"]


def test_draw_key_tree_draws_one_line_of_text_per_saved_value_and_refuses_an_empty_checkpoint(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from helpers.checkpoints import VALUE_SUFFIX, draw_key_tree

    model = make_model(dropout=False)
    prefix = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    variables = tf.train.list_variables(prefix)
    first = next(key for key, _ in variables if key != "_CHECKPOINTABLE_OBJECT_GRAPH").removesuffix(VALUE_SUFFIX)
    figure = draw_key_tree(variables, notes={first: "a note"}, title="keys")
    texts = [text.get_text() for text in figure.axes[0].texts]
    leaves = [text for text in texts if "[" in text]
    assert len(leaves) == len(variables) - 1  # every saved value but the object graph itself
    assert any(text.endswith("a note") for text in leaves) and "(root)" in texts
    with pytest.raises(ValueError, match="no saved value"):
        draw_key_tree([("_CHECKPOINTABLE_OBJECT_GRAPH", [])])
