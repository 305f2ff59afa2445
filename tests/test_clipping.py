"""helpers.clipping.ClippingMonitor: norms, counters, tf.function, checkpoints, summaries."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers.clipping import ClippingMonitor
from helpers.logs import read_scalars

SMALL = [tf.constant([0.3, 0.4])]  # norm 0.5
LARGE = [tf.constant([3.0, 4.0]), tf.constant([6.0, 8.0])]  # norm sqrt(125)


@pytest.mark.parametrize("clip_norm", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_rejects_bad_clip_norm(clip_norm: object) -> None:
    with pytest.raises(ValueError, match="clip_norm must be"):
        ClippingMonitor(clip_norm)  # type: ignore[arg-type]


def test_matches_clip_by_global_norm_and_counts() -> None:
    monitor = ClippingMonitor(1.0)
    clipped, norm = monitor(LARGE)
    expected, expected_norm = tf.clip_by_global_norm(LARGE, 1.0)
    assert math.isclose(float(norm), math.sqrt(125), rel_tol=1e-6)
    for got, want in zip(clipped, expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy())
    _, small_norm = monitor(SMALL)
    assert math.isclose(float(small_norm), 0.5, rel_tol=1e-6)
    assert monitor.report() == {"steps": 2, "clipped_steps": 1, "non_finite_steps": 0, "clipped_fraction": 0.5, "max_norm": round(math.sqrt(125), 4)}


def test_norm_exactly_at_threshold_is_not_clipped() -> None:
    monitor = ClippingMonitor(0.5)
    monitor([tf.constant([0.3, 0.4])])
    assert int(monitor.clipped_steps) == 0


def test_none_gradients_pass_through_but_all_none_is_an_error() -> None:
    monitor = ClippingMonitor(1.0)
    clipped, _ = monitor([None, tf.constant([3.0, 4.0])])
    assert clipped[0] is None
    with pytest.raises(ValueError, match="every gradient is None"):
        monitor([None, None])


def test_non_finite_norm_is_counted_separately() -> None:
    monitor = ClippingMonitor(1.0)
    monitor(LARGE)
    clipped, norm = monitor([tf.constant([np.nan, 1.0])])
    assert not np.isfinite(float(norm)) and np.all(np.isnan(clipped[0].numpy()))
    report = monitor.report()
    assert report["non_finite_steps"] == 1 and report["clipped_steps"] == 1
    assert report["max_norm"] == round(math.sqrt(125), 4)  # a NaN does not poison the maximum


def test_works_inside_tf_function_without_retracing() -> None:
    monitor = ClippingMonitor(1.0)
    variable = tf.Variable([1.0, 1.0])

    @tf.function
    def step(scale: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = scale * tf.reduce_sum(variable)
        clipped, norm = monitor(tape.gradient(loss, [variable]))
        variable.assign_sub(clipped[0])
        return norm

    norms = [float(step(tf.constant(scale))) for scale in (0.1, 10.0, 0.1, 10.0)]
    assert step.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(norms, [0.1 * math.sqrt(2), 10 * math.sqrt(2)] * 2, rtol=1e-6)
    assert monitor.report()["clipped_steps"] == 2 and monitor.report()["clipped_fraction"] == 0.5


def test_counters_survive_a_checkpoint(tmp_path: Path) -> None:
    monitor = ClippingMonitor(1.0)
    monitor(LARGE)
    path = tf.train.Checkpoint(monitor=monitor).write(str(tmp_path / "ckpt"))
    restored = ClippingMonitor(1.0)
    tf.train.Checkpoint(monitor=restored).read(path).assert_consumed()
    assert restored.report() == monitor.report()


def test_write_summaries_and_reset(tmp_path: Path) -> None:
    monitor = ClippingMonitor(1.0)
    assert not bool(monitor.write_summaries(step=0))  # no default writer: nothing written
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step, gradients in enumerate([LARGE, SMALL, LARGE]):
            monitor(gradients)
            assert bool(monitor.write_summaries(step=step))
    writer.flush()
    series = read_scalars(tmp_path)
    assert series["gradients/clipped"].values.tolist() == [1.0, 0.0, 1.0]
    np.testing.assert_allclose(series["gradients/global_norm"].values, [math.sqrt(125), 0.5, math.sqrt(125)], rtol=1e-6)
    np.testing.assert_allclose(series["gradients/clipped_fraction"].values, [1.0, 0.5, 2 / 3], rtol=1e-6)
    monitor.reset()
    assert monitor.report()["steps"] == 0 and float(monitor.clipped_fraction()) == 0.0
