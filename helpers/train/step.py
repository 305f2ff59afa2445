"""The train step and ``train_until``, the ``tf.function`` that runs many steps per call; the numerics guard's limit.

:func:`make_train_step` is one update, written as chapters 02-07 teach it: a ``tf.GradientTape``,
the all-reduce of chapter 09, clipping by global norm, and an update skipped when the norm is not
finite. :func:`make_train_until` runs it in a ``tf.while_loop`` and writes the scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.environment import quiet_tensorflow_logs

quiet_tensorflow_logs()

import tensorflow as tf  # noqa: E402  (after quiet_tensorflow_logs)

from helpers.schedules import rate_of_update  # noqa: E402
from helpers.train.parts import RunParts  # noqa: E402

#: A run stops with ``FloatingPointError`` once this many updates were skipped (non-finite gradient
#: norm), counted over the whole run (the monitor's counter is saved in checkpoints).
MAX_NON_FINITE_STEPS = 10


def make_train_step(parts: RunParts) -> Callable[[Any], tuple[Any, Any]]:
    """One update from the next batch of ``iterator``; returns (loss, pre-clip norm). Trace it inside a ``tf.function``.

    Each replica computes the gradient of its share of the batch, with the loss averaged over the
    global batch; ``strategy.reduce(SUM)`` adds them up across replicas (the all-reduce), so the
    clipping and the update see the gradient of the whole batch, as on a single device. Without a
    strategy ``strategy.run`` just calls the function and the reduce returns its input.
    """
    strategy, model, optimizer = parts.strategy, parts.model, parts.optimizer
    monitor, loss_fn, data_position = parts.monitor, parts.loss_fn, parts.data_position

    def replica_gradients(images, labels):
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(labels, logits))  # sum over my examples / global batch
        return loss, tape.gradient(loss, model.trainable_variables)

    def train_step(iterator):
        images, labels = next(iterator)
        data_position.assign_add(1)  # batches drawn: where a resume continues in the data
        per_replica_loss, per_replica_gradients = strategy.run(replica_gradients, args=(images, labels))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)
        gradients = [strategy.reduce(tf.distribute.ReduceOp.SUM, gradient, axis=None) for gradient in per_replica_gradients]
        clipped, global_norm = monitor(gradients)  # clip the whole batch's gradient by global norm, count it
        if tf.math.is_finite(global_norm):  # AutoGraph: a tf.cond; a NaN/inf step is skipped
            optimizer.apply_gradients(zip(clipped, model.trainable_variables, strict=True))  # global step += 1
        return loss, global_norm

    return train_step


def make_train_until(parts: RunParts, log_every: int, writer: Any) -> Any:
    """A ``tf.function`` ``train_until(iterator, until)``: updates until the global step is ``until``; returns the last update's loss.

    One call runs many updates inside TensorFlow (a ``tf.while_loop``), so Python's cost is paid
    once per call, not once per step (what Keras calls ``steps_per_execution``). Every
    ``log_every`` steps the loss, learning rate and clipping scalars are written from inside the
    loop. A skipped update (non-finite gradient norm) does not move the step, so the loop draws the
    next batch; it gives up once the monitor counted :data:`MAX_NON_FINITE_STEPS` of them.
    ``until`` is a tensor: a new value does not retrace.
    """
    optimizer, monitor, schedule = parts.optimizer, parts.monitor, parts.schedule
    train_step = make_train_step(parts)

    @tf.function  # a function of its own: its graph starts at the root name scope, so the tags stay "loss", not "while/cond/loss"
    def write_scalars(step, loss):
        with writer.as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("learning_rate", rate_of_update(schedule, step))
            monitor.write_summaries(step)

    @tf.function
    def train_until(iterator, until):
        last_loss = tf.constant(float("nan"))
        # `&`, not `and`: AutoGraph turns `and` between tensors into a tf.cond (Python's `and` is lazy), one more branch per step
        while (optimizer.iterations < until) & (monitor.non_finite_steps < MAX_NON_FINITE_STEPS):
            loss, global_norm = train_step(iterator)
            applied = tf.math.is_finite(global_norm)  # a skipped update leaves the step where it was
            last_loss = tf.where(applied, loss, last_loss)
            step = tf.convert_to_tensor(optimizer.iterations)  # its value now (a Keras variable is not a tf.function argument)
            if applied & (step % log_every == 0):
                write_scalars(step, loss)
        return last_loss

    return train_until


def check_not_diverged(parts: RunParts) -> None:
    """``FloatingPointError`` once :data:`MAX_NON_FINITE_STEPS` updates were skipped (``train_until`` stopped for it)."""
    if int(parts.monitor.non_finite_steps.numpy()) >= MAX_NON_FINITE_STEPS:
        raise FloatingPointError(
            f"{MAX_NON_FINITE_STEPS} updates skipped for non-finite gradients "
            f"(global step {parts.step}, {int(parts.data_position.numpy())} batches drawn); stopping"
        )
