"""Clip gradients by their global norm and keep count of what the clipping did.

Seed 000 "checks whether clipping happened" by summing absolute gradient values after clipping,
which cannot tell a clipped gradient from an unclipped one. What answers the question is the
**pre-clip** global norm: clipping happened exactly when it exceeded ``clip_norm``.
:class:`ClippingMonitor` records that, step by step, in TensorFlow variables, so it works inside a
``tf.function`` train step, can be saved in a ``tf.train.Checkpoint`` with the model, and can
write TensorBoard scalars.

This module imports TensorFlow: import it after ``helpers.quiet_tensorflow_logs()``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import tensorflow as tf


class ClippingMonitor(tf.Module):
    """``tf.clip_by_global_norm`` plus counters: steps seen, steps clipped, non-finite norms.

    Call it on a list of gradients (``None`` entries pass through) inside or outside
    ``tf.function``; it returns ``(clipped_gradients, global_norm)`` like
    ``tf.clip_by_global_norm``, where ``global_norm`` is the norm **before** clipping.

    A non-finite norm (a NaN or inf anywhere in the gradients) makes every clipped gradient NaN;
    such steps are counted in ``non_finite_steps`` and not in ``clipped_steps``. Skipping the
    update is the caller's decision: ``if tf.math.is_finite(global_norm): optimizer.apply_gradients(...)``.
    """

    def __init__(self, clip_norm: float, name: str | None = None) -> None:
        super().__init__(name=name)
        if isinstance(clip_norm, bool) or not isinstance(clip_norm, (int, float)) or not math.isfinite(clip_norm) or clip_norm <= 0:
            raise ValueError(f"clip_norm must be a positive finite number, got {clip_norm!r}")
        self.clip_norm = float(clip_norm)
        counter = lambda label: tf.Variable(0, dtype=tf.int64, trainable=False, name=label)  # noqa: E731
        self.steps = counter("steps")
        self.clipped_steps = counter("clipped_steps")
        self.non_finite_steps = counter("non_finite_steps")
        self.last_norm = tf.Variable(0.0, dtype=tf.float32, trainable=False, name="last_norm")
        self.max_norm = tf.Variable(0.0, dtype=tf.float32, trainable=False, name="max_norm")

    def __call__(self, gradients: Sequence[tf.Tensor | tf.IndexedSlices | None]) -> tuple[list[tf.Tensor | tf.IndexedSlices | None], tf.Tensor]:
        gradients = list(gradients)
        if not any(gradient is not None for gradient in gradients):
            raise ValueError("every gradient is None: the loss does not depend on these variables")
        clipped, global_norm = tf.clip_by_global_norm(gradients, self.clip_norm)
        global_norm = tf.cast(global_norm, tf.float32)
        finite = tf.math.is_finite(global_norm)
        self.steps.assign_add(1)
        self.clipped_steps.assign_add(tf.cast(finite & (global_norm > self.clip_norm), tf.int64))
        self.non_finite_steps.assign_add(tf.cast(tf.logical_not(finite), tf.int64))
        self.last_norm.assign(global_norm)
        self.max_norm.assign(tf.where(finite, tf.maximum(self.max_norm, global_norm), self.max_norm))
        return clipped, global_norm

    def clipped_fraction(self) -> tf.Tensor:
        """Share of steps so far whose pre-clip norm exceeded ``clip_norm`` (0 before any step)."""
        steps = tf.maximum(self.steps, 1)
        return tf.cast(self.clipped_steps, tf.float32) / tf.cast(steps, tf.float32)

    def write_summaries(self, step: tf.Tensor | int, prefix: str = "gradients") -> tf.Tensor:
        """Write the last step's pre-clip norm, whether it was clipped, and the clipped fraction.

        Uses the default summary writer (``with writer.as_default():``); without one nothing is
        written and ``False`` is returned, as ``tf.summary.scalar`` does.
        """
        clipped_now = tf.cast(self.last_norm > self.clip_norm, tf.float32)
        written = tf.summary.scalar(f"{prefix}/global_norm", self.last_norm, step=step)
        tf.summary.scalar(f"{prefix}/clipped", clipped_now, step=step)
        tf.summary.scalar(f"{prefix}/clipped_fraction", self.clipped_fraction(), step=step)
        return written

    def reset(self) -> None:
        """Zero every counter (for example between epochs)."""
        for variable in (self.steps, self.clipped_steps, self.non_finite_steps):
            variable.assign(0)
        self.last_norm.assign(0.0)
        self.max_norm.assign(0.0)

    def report(self) -> dict[str, float]:
        """The counters as plain Python numbers (eager only)."""
        return {
            "steps": int(self.steps.numpy()),
            "clipped_steps": int(self.clipped_steps.numpy()),
            "non_finite_steps": int(self.non_finite_steps.numpy()),
            "clipped_fraction": round(float(self.clipped_fraction().numpy()), 4),
            "max_norm": round(float(self.max_norm.numpy()), 4),
        }
