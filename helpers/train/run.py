"""One run of the command: restore, the call loop with its validation and saves, the final save and the report.

:func:`train` is what ``python -m helpers.train`` calls; chapter 08 calls it in its own process too.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from helpers.environment import quiet_tensorflow_logs

quiet_tensorflow_logs()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402  (after quiet_tensorflow_logs)

from helpers.checkpoints import CheckpointMismatchError, RestoreInfo  # noqa: E402
from helpers.errors import NO_SPACE_ERRNOS, CaughtError, errno_of  # noqa: E402
from helpers.schedules import rate_of_update  # noqa: E402
from helpers.train.calls import StepHook, call_end, run_calls  # noqa: E402
from helpers.train.cluster import WorkerRole, role_of  # noqa: E402
from helpers.train.config import TrainConfig  # noqa: E402
from helpers.train.parts import RunParts, build  # noqa: E402
from helpers.train.results import TrainResult, state_fingerprint  # noqa: E402
from helpers.train.run_folder import RunFolder, other_configuration, shown  # noqa: E402
from helpers.train.saver import Saver  # noqa: E402
from helpers.train.signals import stop_requests  # noqa: E402
from helpers.train.step import make_train_until  # noqa: E402
from helpers.train.strategies import peer_losses_raised  # noqa: E402


def train(config: TrainConfig, *, hooks: Sequence[StepHook] = (), handle_signals: bool = False, out: TextIO | None = None) -> TrainResult:
    """Run (or resume) ``config`` to ``config.steps`` updates; the chief writes ``result.json``.

    Restores the latest checkpoint in the run folder (the message is printed); a checkpoint of
    another model or configuration raises :class:`helpers.checkpoints.CheckpointMismatchError`, a
    folder that cannot hold a run :class:`helpers.train.RunFolderError`, both before anything is
    written. ``hooks`` run after each update (the command's ``--crash-at-step`` and
    ``--pause-per-step``). With ``handle_signals`` (the command), SIGINT and SIGTERM save a
    checkpoint at the step the call in progress ends at and raise :class:`helpers.train.Interrupted`.
    A worker of a cluster whose peer stopped or was killed raises :class:`helpers.train.cluster.PeerLostError`.
    Progress is one line per evaluation on ``out`` (``sys.stdout`` as it is when the run starts, by default).
    """
    out = sys.stdout if out is None else out
    folder = RunFolder(config.run_dir)
    folder.check()
    role = role_of(config)
    with peer_losses_raised(role):  # a worker whose peer was killed: PeerLostError, not TensorFlow's traceback
        return _train(config, role, hooks, handle_signals, out, folder)


def _train(config: TrainConfig, role: WorkerRole | None, hooks: Sequence[StepHook], handle_signals: bool, out: TextIO, folder: RunFolder) -> TrainResult:
    """:func:`train` once the folder is checked and this process's role is known."""
    is_chief = role is None or role.is_chief
    if is_chief:
        removed = folder.remove_leftovers()
        if removed:
            print(f"removed what an unfinished write left: {', '.join(removed)}", file=out, flush=True)
    parts = build(config, role)
    info = restore(parts, config)
    print(info.message, file=out, flush=True)
    iterator = parts.start_data()  # after the restore: from the saved data position
    if is_chief:
        folder.write_config(config)
    saver = Saver(parts.checkpoint, is_chief=is_chief, restored=info)
    resolver = parts.strategy.cluster_resolver if role is not None else None
    stops = stop_requests(saver, resolver) if handle_signals else contextlib.nullcontext(lambda: None)
    try:
        with _no_space_as_os_error(), _writers(folder, is_chief) as (train_writer, validation_writer), stops as check_stop:
            run = _Run(config, parts, saver, validation_writer, out)
            train_until = make_train_until(parts, config.log_every, train_writer)
            run_calls(
                parts, train_until, iterator, to_step=config.steps, next_end=lambda step: call_end(step, config, hooks),
                on_new_step=run.after_call_of(hooks), after_call=check_stop,
            )
            return run.finish(info, folder)
    finally:
        saver.close()


def restore(parts: RunParts, config: TrainConfig) -> RestoreInfo:
    """Restore the latest checkpoint of ``config.run_dir`` into ``parts`` and check it was written by this config.

    Raises :class:`helpers.checkpoints.CheckpointMismatchError` if the checkpoint does not fit the
    parts, or if ``config.json`` records other trajectory values.
    """
    info = parts.checkpoint.restore()
    if info.restored:
        differences = RunFolder(config.run_dir).config_differences(config)
        if differences:
            raise CheckpointMismatchError(other_configuration(config.run_dir, differences))
    return info


@contextlib.contextmanager
def _no_space_as_os_error() -> Iterator[None]:
    """Raise a TensorFlow error of a write that found no space (an event file's) as the ``OSError`` it is, with its ``errno``."""
    try:
        yield
    except tf.errors.OpError as error:
        code = errno_of(error)
        if code not in NO_SPACE_ERRNOS:
            raise
        raise OSError(code, CaughtError(error).first_line) from error


@contextlib.contextmanager
def _writers(folder: RunFolder, is_chief: bool) -> Iterator[tuple[Any, Any]]:
    """The train and validation summary writers, closed at the end; a worker that is not the chief writes no logs."""
    if is_chief:
        writers = (tf.summary.create_file_writer(str(folder.train_logs)), tf.summary.create_file_writer(str(folder.validation_logs)))
    else:
        writers = (tf.summary.create_noop_writer(), tf.summary.create_noop_writer())
    try:
        yield writers
    finally:
        for writer in writers:
            writer.close()


def evaluate(model: Any, dataset: tf.data.Dataset, loss_fn: Any) -> tuple[float, int, int]:
    """Mean loss over examples, number correct, number of examples (inference mode; ``loss_fn`` per example)."""
    total_loss, correct, count = 0.0, 0, 0
    for images, labels in dataset:
        logits = model(images, training=False)
        total_loss += float(np.sum(loss_fn(labels, logits).numpy(), dtype=np.float64))
        correct += int(np.sum(np.argmax(logits.numpy(), axis=1) == labels.numpy()))
        count += int(labels.shape[0])
    return total_loss / count, correct, count


class _Run:
    """What happens in Python between calls of ``train_until`` (validation, saves) and at the end (final save, report)."""

    def __init__(self, config: TrainConfig, parts: RunParts, saver: Saver, validation_writer: Any, out: TextIO) -> None:
        self.config, self.parts, self.saver, self.validation_writer, self.out = config, parts, saver, validation_writer, out
        self.start_step = parts.step
        self.started = time.monotonic()
        self.loss: float | None = None
        self.last_evaluated = -1

    def after_call_of(self, hooks: Sequence[StepHook]) -> Callable[[int, Any], None]:
        """What runs once a call moved the global step: the hooks, then validation and the periodic save, each keyed on the step."""

        def on_new_step(step: int, loss: Any) -> None:
            self.loss = float(loss)
            for hook in hooks:
                hook.after_update(step)
            if step % self.config.eval_every == 0:
                self.validate(step)
            if step % self.config.checkpoint_every == 0:
                self.saver.save()

        return on_new_step

    def validate(self, step: int) -> tuple[float, int, int]:
        """Evaluate, write the validation scalars at ``step`` and print the progress line."""
        val_loss, correct, count = evaluate(self.parts.model, self.parts.val_ds, self.parts.loss_fn)
        with self.validation_writer.as_default():
            tf.summary.scalar("loss", val_loss, step=step)
            tf.summary.scalar("accuracy", correct / count, step=step)
        shown_loss = "n/a" if self.loss is None else f"{self.loss:.4f}"
        rate = float(rate_of_update(self.parts.schedule, step))
        speed = (step - self.start_step) / max(time.monotonic() - self.started, 1e-9)
        print(
            f"step {step}/{self.config.steps}: loss {shown_loss}, lr {rate:.6f}, val_loss {val_loss:.4f}, "
            f"val_accuracy {correct / count:.4f} | {speed:.0f} steps/s",
            file=self.out,
            flush=True,
        )
        self.last_evaluated = step
        return val_loss, correct, count

    def finish(self, info: RestoreInfo, folder: RunFolder) -> TrainResult:
        """The final save and validation (each unless done at this step already), ``result.json`` and the summary lines."""
        step = self.parts.step
        if self.saver.last_saved != step:
            self.saver.save()
        if self.last_evaluated == step or step == self.start_step:  # evaluated already, or nothing to do: no log written again
            val_loss, correct, count = evaluate(self.parts.model, self.parts.val_ds, self.parts.loss_fn)
        else:
            val_loss, correct, count = self.validate(step)
        result = self._result(info, val_loss, correct, count)
        if self.saver.is_chief:
            folder.write_result(result)
        self._report(result, folder)
        return result

    def _result(self, info: RestoreInfo, val_loss: float, correct: int, count: int) -> TrainResult:
        report = self.parts.monitor.report()
        step = self.parts.step
        return TrainResult(
            step=step,
            start_step=self.start_step,
            steps_run=step - self.start_step,
            restore_message=info.message,
            fingerprint=state_fingerprint(self.parts),
            train_loss=None if self.loss is None else round(self.loss, 6),
            val_loss=round(val_loss, 6),
            val_accuracy=correct / count,
            val_correct=correct,
            val_examples=count,
            clipped_steps=int(report["clipped_steps"]),
            non_finite_steps=int(report["non_finite_steps"]),
            strategy=self.config.strategy,
            replicas=int(self.parts.strategy.num_replicas_in_sync),
            seconds=round(time.monotonic() - self.started, 3),
        )

    def _report(self, result: TrainResult, folder: RunFolder) -> None:
        seconds = result.seconds
        print(f"finished at step {result.step} ({result.steps_run} steps in this process)", file=self.out)
        print(f"val_accuracy {result.val_accuracy:.4f} ({result.val_correct}/{result.val_examples})", file=self.out)
        print(f"fingerprint {result.fingerprint}", file=self.out)
        print(f"time {seconds:.1f} s, {result.steps_run / max(seconds, 1e-9):.0f} steps/s on {result.replicas} replica(s)", file=self.out)
        if self.saver.is_chief:
            print(f"checkpoints in {shown(folder.checkpoints)}, logs in {shown(folder.logs)}", file=self.out)
        self.out.flush()
