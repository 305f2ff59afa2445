"""Tests of helpers.tf1_checkpoints: porting a name-based TF1 checkpoint by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import helpers

helpers.quiet_tensorflow_logs()

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from helpers.tf1_checkpoints import NameBasedCheckpointError, assign_by_name, keras_names  # noqa: E402


def write_tf1_checkpoint(folder: Path, units: int = 3) -> tuple[str, dict[str, np.ndarray]]:
    """A Saver checkpoint of a v1 graph holding dense/kernel (4, units), dense/bias (units,) and global_step."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.compat.v1.variable_scope("dense"):
            tf.compat.v1.get_variable("kernel", [4, units], initializer=tf.compat.v1.random_normal_initializer(seed=1))
            tf.compat.v1.get_variable("bias", [units], initializer=tf.compat.v1.constant_initializer(0.5))
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            values = {variable.op.name: session.run(variable) for variable in tf.compat.v1.global_variables()}
            path = saver.save(session, str(folder / "model.ckpt"))
    return path, values


def dense_model(units: int = 3) -> keras.Model:
    return keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(units, name="dense")], name="model")


def test_keras_names_joins_layer_and_variable_names() -> None:
    assert sorted(keras_names(dense_model())) == ["dense/bias", "dense/kernel"]


def test_assign_by_name_copies_every_value_bit_for_bit(tmp_path: Path) -> None:
    path, values = write_tf1_checkpoint(tmp_path)
    model = dense_model()
    unused = assign_by_name(path, keras_names(model))
    assert unused == ["global_step"]
    layer = model.get_layer("dense")
    assert layer.kernel.numpy().tobytes() == values["dense/kernel"].tobytes()
    assert layer.bias.numpy().tobytes() == values["dense/bias"].tobytes()


def test_a_missing_name_is_named_and_nothing_is_assigned(tmp_path: Path) -> None:
    path, _ = write_tf1_checkpoint(tmp_path)
    model = dense_model()
    before = [weight.numpy().copy() for weight in model.weights]
    names = keras_names(model)
    names["dense/gamma"] = names.pop("dense/bias")
    with pytest.raises(NameBasedCheckpointError, match=r"no variable 'dense/gamma' for model/dense/bias; it holds: dense/bias, dense/kernel, global_step"):
        assign_by_name(path, names)
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(before, model.weights, strict=True))


def test_a_shape_mismatch_names_both_sides(tmp_path: Path) -> None:
    path, _ = write_tf1_checkpoint(tmp_path, units=3)
    with pytest.raises(NameBasedCheckpointError, match=r"'dense/kernel' has shape \(4, 3\) in the checkpoint, but model/dense/kernel has shape \(4, 5\)"):
        assign_by_name(path, keras_names(dense_model(units=5)))


def test_a_dtype_mismatch_is_refused(tmp_path: Path) -> None:
    path, _ = write_tf1_checkpoint(tmp_path)
    step = tf.Variable(np.zeros((4, 3), np.float64))
    with pytest.raises(NameBasedCheckpointError, match=r"'dense/kernel' is float32 in the checkpoint"):
        assign_by_name(path, {"dense/kernel": step})
