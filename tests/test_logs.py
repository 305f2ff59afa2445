"""helpers.logs.read_scalars: TF2 scalar summaries read back with TensorBoard's reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers.logs import read_scalars


def test_reads_every_point_of_every_scalar_tag_and_skips_other_summaries(tmp_path: Path) -> None:
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step in range(25):  # more than EventAccumulator's default sample of 10
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
            tf.summary.scalar("lr", 0.1, step=2 * step)
        tf.summary.histogram("weights", tf.ones(3), step=0)
        tf.summary.text("note", "hello", step=0)
    writer.flush()
    series = read_scalars(tmp_path)
    assert set(series) == {"loss", "lr"}
    assert series["loss"].steps.tolist() == list(range(25))
    np.testing.assert_allclose(series["loss"].values, [1.0 / (s + 1) for s in range(25)], rtol=1e-6)
    assert series["lr"].steps.tolist() == list(range(0, 50, 2))
    assert np.all(np.diff(series["loss"].wall_times) >= 0)


def test_missing_or_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no event file"):
        read_scalars(tmp_path)
    with pytest.raises(FileNotFoundError, match="no event file"):
        read_scalars(tmp_path / "absent")


def test_reads_tf1_simple_value_scalars(tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        value = tf.compat.v1.placeholder(tf.float32, [])
        summary = tf.compat.v1.summary.scalar("loss", value)
        writer = tf.compat.v1.summary.FileWriter(str(tmp_path))
        with tf.compat.v1.Session() as session:
            for step in range(12):
                writer.add_summary(session.run(summary, {value: 0.5 * step}), global_step=step)
        writer.close()
    series = read_scalars(tmp_path)
    assert set(series) == {"loss"}
    assert series["loss"].steps.tolist() == list(range(12))
    np.testing.assert_allclose(series["loss"].values, [0.5 * step for step in range(12)])
