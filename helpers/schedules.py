"""Evaluate learning-rate schedules over a range of steps, and plot them.

A learning-rate schedule maps the optimizer's step (``optimizer.iterations``: the number of
updates applied so far) to the rate of the next update. To check a schedule against its
formula, or to draw it, it has to be turned into a plain array of rates, one per step; that
is what :func:`evaluate_schedule` does, for a Keras ``LearningRateSchedule`` or for any Python
callable ``step -> rate``. :func:`plot_schedules` draws one or several schedules on one axis.
Chapter 04 introduces both; later chapters reuse them to show the rates they train with.

Keras schedules are evaluated the way a ``tf.function`` train step evaluates them: inside one
traced graph, one int64 step at a time (``tf.map_fn``). That is much faster than thousands of
eager calls, and it works for schedules that branch on the step (``CosineDecay`` with warmup
uses ``cond``, which a whole vector of steps would break). Eager and graph evaluation of the
same schedule can differ in the last float32 bit, so compare the results with a tolerance.
Other callables are called once per step with a Python ``int``.

TensorFlow is imported only when a Keras schedule is evaluated; importing this module does
not import it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from helpers.plots import plot_curves

#: A Keras ``LearningRateSchedule`` or any callable that maps a step to a learning rate.
Schedule = Callable[[Any], Any]
Steps = int | Sequence[int] | np.ndarray | range


def as_steps(steps: Steps) -> np.ndarray:
    """Validate ``steps`` and return them as a 1-D int64 array.

    An ``int`` ``n`` means the first ``n`` steps, ``0 .. n-1``. Otherwise ``steps`` is a
    non-empty 1-D sequence of integers >= 0 (floats are accepted only if they are whole
    numbers). Anything else raises ``ValueError`` naming the argument.
    """
    if isinstance(steps, bool):
        raise ValueError(f"steps must be a count or a sequence of integer steps, got {steps!r}")
    if isinstance(steps, (int, np.integer)):
        if steps <= 0:
            raise ValueError(f"steps must be a positive count (the number of steps from 0), got {int(steps)}")
        return np.arange(int(steps), dtype=np.int64)
    array = np.asarray(steps)
    if array.ndim != 1:
        raise ValueError(f"steps must be 1-D, got an array of shape {array.shape}")
    if array.size == 0:
        raise ValueError("steps is empty: give at least one step")
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)) or not np.all(array == np.floor(array)):
            raise ValueError("steps must hold whole numbers (optimizer steps are counts)")
    elif not np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_:
        raise ValueError(f"steps must hold integers, got dtype {array.dtype}")
    if array.min() < 0:
        raise ValueError(f"steps must be >= 0 (a step counts updates), got {array.min():g}")
    return array.astype(np.int64)


def rate_of_update(schedule: Schedule, step: Any) -> Any:
    """The learning rate update number ``step`` used: ``schedule(step - 1)``.

    Keras evaluates the schedule at ``optimizer.iterations`` and then adds one, so the update that
    makes the global step ``N`` ran at ``schedule(N - 1)`` (chapter 04). Logs keyed on the global step
    after an update write this rate. ``step`` may be an int, an array or a tensor.
    """
    return schedule(step - 1)


def is_keras_schedule(schedule: object) -> bool:
    """True for an instance of ``keras.optimizers.schedules.LearningRateSchedule``.

    Keras is not imported for the check: if it is not imported yet, no Keras schedule exists.
    """
    keras = sys.modules.get("keras")
    if keras is None:
        return False
    try:
        base = keras.optimizers.schedules.LearningRateSchedule
    except AttributeError:  # keras only partly imported
        return False
    return isinstance(schedule, base)


def evaluate_schedule(schedule: Schedule, steps: Steps) -> np.ndarray:
    """The learning rate of ``schedule`` at each of ``steps``, as a float64 array.

    ``schedule`` is a Keras ``LearningRateSchedule`` (evaluated in a traced graph, with
    int64 steps, as an optimizer does) or any callable ``step -> rate`` (called with a
    Python ``int`` per step). ``steps`` is a count or a sequence of steps; see
    :func:`as_steps`. A rate that is not a finite scalar raises ``ValueError`` naming the
    step; a ``schedule`` that is not callable raises ``TypeError``.
    """
    if not callable(schedule):
        raise TypeError(f"schedule must be callable (step -> learning rate), got {type(schedule).__name__}")
    step_array = as_steps(steps)
    if is_keras_schedule(schedule):
        values = _evaluate_in_graph(schedule, step_array)
    else:
        values = np.array([_scalar_rate(schedule(int(step)), int(step)) for step in step_array], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        first = int(bad[0])
        raise ValueError(f"the schedule returned {values[first]} at step {int(step_array[first])}; a learning rate must be finite")
    return values


def _scalar_rate(value: Any, step: int) -> float:
    array = np.asarray(value)
    if array.ndim != 0:
        raise ValueError(f"the schedule returned shape {array.shape} at step {step}; a learning rate is a scalar")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"the schedule returned {value!r} at step {step}; a learning rate is a real number")
    return float(array)


def _evaluate_in_graph(schedule: Schedule, steps: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    def rate_at(step: tf.Tensor) -> tf.Tensor:
        rate = tf.convert_to_tensor(schedule(step))
        if rate.shape.rank != 0:
            raise ValueError(f"the schedule returned shape {rate.shape} for one step; a learning rate is a scalar")
        return tf.cast(rate, tf.float64)

    @tf.function
    def rates(all_steps: tf.Tensor) -> tf.Tensor:
        return tf.map_fn(rate_at, all_steps, fn_output_signature=tf.TensorSpec([], tf.float64))

    return rates(tf.constant(steps, dtype=tf.int64)).numpy()


def plot_schedules(
    schedules: Mapping[str, Schedule],
    steps: Steps,
    *,
    ax: Axes | None = None,
    log_y: bool = False,
    title: str | None = None,
    ylabel: str = "learning rate",
) -> Figure:
    """Draw each named schedule over ``steps`` (one line each, labelled) and return the figure.

    Built on :func:`helpers.plots.plot_curves`: a new figure unless ``ax`` is given. With
    ``log_y`` every rate must be positive; a schedule that reaches 0 (a warmup from 0, a
    cosine decay to 0) raises ``ValueError`` naming it, rather than vanishing from the plot.
    """
    if not schedules:
        raise ValueError("schedules is empty: nothing to plot")
    step_array = as_steps(steps)
    curves = {name: evaluate_schedule(schedule, step_array) for name, schedule in schedules.items()}
    if log_y:
        for name, values in curves.items():
            low = int(np.argmin(values))
            if values[low] <= 0:
                raise ValueError(
                    f"log_y needs positive learning rates, but schedule {name!r} is {values[low]:g} "
                    f"at step {int(step_array[low])}"
                )
    return plot_curves(curves, steps=step_array, xlabel="step", ylabel=ylabel, title=title, log_y=log_y, ax=ax)
