"""The call loop: Python calls ``train_until`` again and again, each call ending where Python has work.

One loop for the command (:mod:`helpers.train.run`) and for the benchmarks (``benchmarks/loop.py``).
A call ends at the next evaluation, checkpoint or last step, so checkpoints land on the same steps
whatever ``steps_per_call`` is. What the command adds for demos and tests (a pause, a simulated
crash) comes in as a :class:`StepHook`; the loop runs hooks without knowing what they do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers.environment import quiet_tensorflow_logs

quiet_tensorflow_logs()

import tensorflow as tf  # noqa: E402  (after quiet_tensorflow_logs)

from helpers.train.config import TrainConfig  # noqa: E402
from helpers.train.parts import RunParts  # noqa: E402
from helpers.train.step import check_not_diverged  # noqa: E402


@dataclass(frozen=True)
class StepHook:
    """Work run after every update that moved the global step, before it is validated or saved.

    ``ends_call_at``: a step at which a call must end, so the hook sees that step from Python;
    ``one_update_per_call``: every call makes one update (a demo that pauses between updates).
    """

    after_update: Callable[[int], None]
    ends_call_at: int | None = None
    one_update_per_call: bool = False


def call_end(step: int, config: TrainConfig, hooks: Sequence[StepHook] = ()) -> int:
    """The global step the next call of ``train_until`` runs to: ``steps_per_call`` on, or the first step before that where Python has work.

    That is the next evaluation, checkpoint or ``config.steps``, or a step a hook asks for.
    """
    one_update = any(hook.one_update_per_call for hook in hooks)
    ends = [config.steps, step + (1 if one_update else config.steps_per_call)]
    ends += [(step // every + 1) * every for every in (config.eval_every, config.checkpoint_every)]
    ends += [hook.ends_call_at for hook in hooks if hook.ends_call_at is not None and hook.ends_call_at > step]
    return min(ends)


def run_calls(
    parts: RunParts,
    train_until: Any,
    iterator: Any,
    *,
    to_step: int,
    next_end: Callable[[int], int],
    on_new_step: Callable[[int, Any], None],
    after_call: Callable[[], None] = lambda: None,
) -> None:
    """Call ``train_until`` up to ``min(to_step, next_end(step))`` until the global step is ``to_step``.

    After a call that moved the step, ``on_new_step(step, last_loss)``; after every call (one whose
    updates were all skipped too) ``after_call()``. A run whose updates keep being skipped stops with
    ``FloatingPointError`` (:func:`helpers.train.step.check_not_diverged`).
    """
    step = parts.step
    while step < to_step:
        until = min(to_step, next_end(step))
        loss = train_until(iterator, tf.constant(until, dtype=tf.int64))
        check_not_diverged(parts)
        if parts.step != step:
            step = parts.step
            on_new_step(step, loss)
        after_call()
