"""The capstone's training loop: one run that survives being killed and resumes bit-identically.

Chapters 01-07 each taught one piece; this module puts them together in one loop that a later
chapter can run under ``tf.distribute`` unchanged (the train step pulls its batch from an
iterator inside the ``tf.function``, the usual shape of a distributed step):

- the global step is ``optimizer.iterations`` (chapter 01): the loop, the schedule, the logs and
  the checkpoint names all read it;
- a ``tf.function`` train step with ``tf.GradientTape`` (chapter 02);
- clipping by global norm through :class:`helpers.clipping.ClippingMonitor` (chapter 03); the
  default ``clip_norm`` of 0.5 lies inside the range of this model's gradient norms, so a default
  run clips some of its updates and not others (``result.json`` counts them);
- a Keras ``CosineDecay`` schedule with linear warmup (chapter 04);
- :class:`helpers.checkpoints.TrainingCheckpoint` holding the model, the optimizer, the Dropout
  seed-generator states, the monitor **and the data position** (chapter 05), so a resume in the
  middle of an epoch draws the very batches the uninterrupted run would have drawn; the newest
  ``keep_checkpoints`` are kept;
- TensorBoard scalars keyed on the global step, validation in a separate run (chapter 06);
- a numerics guard: an update whose gradient norm is not finite is skipped (chapters 03, 07),
  and the run stops with ``FloatingPointError`` once :data:`MAX_NON_FINITE_STEPS` were skipped.

Use it as a library (:class:`TrainConfig`, :func:`build`, :func:`train`) or as a command::

    python -m helpers.train --run-dir build/demo --steps 200 --dropout 0.2
    # killed? run the same command again: it resumes from the latest checkpoint

``run_dir`` receives ``checkpoints/``, ``logs/train``, ``logs/validation``, ``config.json``
and, at the end, ``result.json`` with the final metrics and a :func:`fingerprint` (sha256 of
every model and optimizer variable's bytes): two runs ended in the same state exactly when
their fingerprints are equal.

Why a data position and not the ``tf.data`` iterator itself: an iterator is trackable and
``tf.train.Checkpoint`` can save it (``TrainingCheckpoint`` accepts it as an extra), but its state
is an opaque ``variant`` tensor that the checkpoint reader cannot show or check. The loop instead
counts the batches drawn in an int64 variable (saved with everything else, readable with
``tf.train.list_variables``) and, on resume, rebuilds the seeded, deterministic pipeline and skips
that many batches: the same batches follow, in the same order. The iterator's saved state would
also hold its shuffle buffer (here the whole training set, in every checkpoint); the count is
one int64. Chapter 08 demonstrates each of these points.

Importing this module does not import TensorFlow; :func:`build` and :func:`train` call
``helpers.quiet_tensorflow_logs()`` before they import it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.paths import checkpoint_prefixes, display_path

if TYPE_CHECKING:  # pragma: no cover
    import keras
    import tensorflow as tf

    from helpers.checkpoints import TrainingCheckpoint
    from helpers.clipping import ClippingMonitor

#: Exit status of a process stopped by ``crash_at_step`` (``os._exit``: no cleanup, no save).
CRASH_EXIT_CODE = 3
#: What a run writes in its folder; ``--fresh`` empties only folders holding nothing else.
RUN_FOLDER_ENTRIES = frozenset({"checkpoints", "logs", "config.json", "result.json"})
#: Exit status when the run folder holds a checkpoint of another configuration, or only damaged ones.
MISMATCH_EXIT_CODE = 4
#: Config fields that shape the trajectory; a resume must use the same values.
TRAJECTORY_FIELDS = ("steps", "seed", "batch_size", "learning_rate", "warmup_steps", "clip_norm", "dropout", "hidden_units")
#: A run stops with ``FloatingPointError`` once this many updates were skipped (non-finite gradient
#: norm), counted over the whole run (the monitor's counter is saved in checkpoints).
MAX_NON_FINITE_STEPS = 10
#: Exit status of the command when a run stopped for that reason (a message, no traceback).
NON_FINITE_EXIT_CODE = 5


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run. Bad values raise ``ValueError`` naming the field.

    ``steps`` is the number of optimizer updates (the final global step); the learning rate
    warms up linearly from 0 to ``learning_rate`` over ``warmup_steps`` and then follows a
    cosine decay to 0 at ``steps``. ``checkpoint_every``, ``log_every`` and ``eval_every`` are
    counted in global steps; the newest ``keep_checkpoints`` checkpoints are kept, older ones
    deleted. ``clip_norm`` defaults to 0.5, inside the range of this model's gradient norms
    (about 0.1 to 1.3 on the digits), so clipping acts on some updates and not on others.
    """

    run_dir: Path
    steps: int = 200
    seed: int = 0
    batch_size: int = 64
    learning_rate: float = 1e-2
    warmup_steps: int = 20
    clip_norm: float = 0.5
    dropout: float = 0.0
    hidden_units: int = 128
    checkpoint_every: int = 50
    log_every: int = 10
    eval_every: int = 50
    keep_checkpoints: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_dir", Path(self.run_dir))
        for name in ("steps", "batch_size", "hidden_units", "checkpoint_every", "log_every", "eval_every", "keep_checkpoints"):
            _require(name, _is_int(getattr(self, name)) and getattr(self, name) > 0, "a positive int")
        _require("seed", _is_int(self.seed) and 0 <= self.seed < 2**32, "an int in [0, 2**32)")
        _require("warmup_steps", _is_int(self.warmup_steps) and 0 <= self.warmup_steps < self.steps, f"an int in [0, steps={self.steps})")
        _require("learning_rate", _is_number(self.learning_rate) and self.learning_rate > 0, "a positive finite number")
        _require("clip_norm", _is_number(self.clip_norm) and self.clip_norm > 0, "a positive finite number")
        _require("dropout", _is_number(self.dropout) and 0 <= self.dropout < 1, "a number in [0, 1)")

    def trajectory(self) -> dict[str, Any]:
        """The fields a resumed run must share with the run that wrote the checkpoint."""
        return {name: getattr(self, name) for name in TRAJECTORY_FIELDS}

    def to_json(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        values["run_dir"] = display_path(self.run_dir)
        return values


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require(name: str, ok: bool, expected: str) -> None:
    if not ok:
        raise ValueError(f"{name} must be {expected}")


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` did and where it ended (also written to ``run_dir/result.json``)."""

    step: int
    start_step: int
    steps_run: int
    restore_message: str
    fingerprint: str
    train_loss: float | None
    val_loss: float
    val_accuracy: float
    val_correct: int
    val_examples: int
    clipped_steps: int
    non_finite_steps: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Objects:
    """What :func:`build` makes: the pieces of one run, before any restore."""

    model: "keras.Model"
    optimizer: "keras.optimizers.Optimizer"
    schedule: "keras.optimizers.schedules.LearningRateSchedule"
    monitor: "ClippingMonitor"
    loss_fn: "keras.losses.Loss"
    train_ds: "tf.data.Dataset"
    data_position: "tf.Variable"
    val_ds: "tf.data.Dataset"
    checkpoint: "TrainingCheckpoint"
    train_iterator: Any = None

    def start_data(self) -> Any:
        """An iterator over the (repeated) training batches from ``data_position`` on; also kept as ``train_iterator``.

        Call it once per :func:`build`: every new iterator over the same ``train_ds`` is the next
        shuffle of the data, so an exact resume builds fresh objects (as a new process does).
        """
        self.train_iterator = iter(self.train_ds.skip(self.data_position))
        return self.train_iterator


def make_model(hidden_units: int = 128, dropout: float = 0.0) -> "keras.Model":
    """The workbook's MLP: Flatten, Dense(hidden_units, relu), optional Dropout, Dense(10) logits."""
    import keras

    layers = [keras.Input(shape=(8, 8)), keras.layers.Flatten(), keras.layers.Dense(hidden_units, activation="relu")]
    if dropout:
        layers.append(keras.layers.Dropout(dropout))
    return keras.Sequential([*layers, keras.layers.Dense(10)])


def make_schedule(config: TrainConfig) -> "keras.optimizers.schedules.LearningRateSchedule":
    """Linear warmup from 0 to ``learning_rate`` over ``warmup_steps``, then cosine decay to 0 at ``steps``."""
    import keras

    if config.warmup_steps == 0:
        return keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps=config.steps)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=config.steps - config.warmup_steps,
        warmup_target=config.learning_rate,
        warmup_steps=config.warmup_steps,
    )


def checkpoint_dir(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / "checkpoints"


def build(config: TrainConfig) -> Objects:
    """Seed everything with ``config.seed`` and make a fresh model, optimizer, data and checkpoint."""
    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    import keras
    import tensorflow as tf

    from helpers import data
    from helpers.checkpoints import TrainingCheckpoint
    from helpers.clipping import ClippingMonitor
    from helpers.seeding import set_seed

    set_seed(config.seed)
    model = make_model(config.hidden_units, config.dropout)
    schedule = make_schedule(config)
    optimizer = keras.optimizers.Adam(learning_rate=schedule)
    optimizer.build(model.trainable_variables)
    monitor = ClippingMonitor(config.clip_norm, name="clipping")
    train_ds, val_ds = data.make_datasets(batch_size=config.batch_size, seed=config.seed)
    data_position = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches_drawn")
    checkpoint = TrainingCheckpoint(
        checkpoint_dir(config.run_dir),
        model=model,
        optimizer=optimizer,
        max_to_keep=config.keep_checkpoints,
        monitor=monitor,
        data_position=data_position,
    )
    return Objects(
        model=model,
        optimizer=optimizer,
        schedule=schedule,
        monitor=monitor,
        loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        train_ds=train_ds.repeat(),
        data_position=data_position,
        val_ds=val_ds,
        checkpoint=checkpoint,
    )


def make_train_step(objects: Objects):
    """A ``tf.function`` doing one update from the next batch of ``iterator``; returns (loss, pre-clip norm)."""
    import tensorflow as tf

    model, optimizer, monitor, loss_fn = objects.model, objects.optimizer, objects.monitor, objects.loss_fn
    data_position = objects.data_position

    @tf.function
    def train_step(iterator):
        images, labels = next(iterator)
        data_position.assign_add(1)  # batches drawn: where a resume continues in the data
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = loss_fn(labels, logits)
        gradients = tape.gradient(loss, model.trainable_variables)
        clipped, global_norm = monitor(gradients)  # clip by global norm, count what happened
        if tf.math.is_finite(global_norm):  # AutoGraph: a tf.cond; a NaN/inf step is skipped
            optimizer.apply_gradients(zip(clipped, model.trainable_variables))  # global step += 1
        return loss, global_norm

    return train_step


def evaluate(model: "keras.Model", dataset: "tf.data.Dataset", loss_fn: "keras.losses.Loss") -> tuple[float, int, int]:
    """Mean loss over examples, number correct, number of examples (inference mode)."""
    import numpy as np

    total_loss, correct, count = 0.0, 0, 0
    for images, labels in dataset:
        logits = model(images, training=False)
        batch = int(labels.shape[0])
        total_loss += float(loss_fn(labels, logits)) * batch
        correct += int(np.sum(np.argmax(logits.numpy(), axis=1) == labels.numpy()))
        count += batch
    return total_loss / count, correct, count


def fingerprint(variables: Iterable[Any]) -> str:
    """sha256 over the bytes of each variable, in order (with dtype and shape, so layouts differ)."""
    digest = hashlib.sha256()
    for variable in variables:
        value = variable.numpy()
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def state_fingerprint(objects: Objects) -> str:
    """:func:`fingerprint` of every model variable then every optimizer variable."""
    return fingerprint([*objects.model.variables, *objects.optimizer.variables])


def _config_differences(config: TrainConfig) -> list[str]:
    """``name=saved there, value here`` for each trajectory field that differs from ``run_dir/config.json``."""
    saved_path = config.run_dir / "config.json"
    if not saved_path.is_file():
        return []
    saved = json.loads(saved_path.read_text())
    return [f"{name}={saved.get(name)!r} there, {value!r} here" for name, value in config.trajectory().items() if saved.get(name) != value]


def _mismatch_message(config: TrainConfig, differences: list[str]) -> str:
    return (
        f"the checkpoints in {display_path(config.run_dir)} were written with another configuration "
        f"({'; '.join(differences)}): use the same options, --fresh, or another --run-dir"
    )


def _check_config(config: TrainConfig) -> None:
    from helpers.checkpoints import CheckpointMismatchError

    differences = _config_differences(config)
    if differences:
        raise CheckpointMismatchError(_mismatch_message(config, differences))


def train(config: TrainConfig, *, crash_at_step: int | None = None, pause_per_step: float = 0.0, out=sys.stdout) -> TrainResult:
    """Run (or resume) ``config`` to ``config.steps`` updates and write ``result.json``.

    Restores the latest checkpoint in ``run_dir/checkpoints`` (the message is printed); a
    checkpoint of another model or configuration raises
    :class:`helpers.checkpoints.CheckpointMismatchError`. ``crash_at_step`` ends the process
    with ``os._exit`` right after that update, before it is saved or logged (a simulated
    crash). ``pause_per_step`` sleeps after each update so a demo can kill the process mid-run.
    Progress is one line per evaluation on ``out``.
    """
    objects = build(config)
    import tensorflow as tf

    from helpers.checkpoints import CheckpointMismatchError

    model, optimizer, monitor, schedule = objects.model, objects.optimizer, objects.monitor, objects.schedule
    try:
        info = objects.checkpoint.restore()
    except CheckpointMismatchError as error:
        raise CheckpointMismatchError(f"{error}; use the same options, --fresh, or another --run-dir") from error
    print(info.message, file=out, flush=True)
    if info.restored:
        _check_config(config)
    train_iterator = objects.start_data()  # after the restore: from the saved data position
    config.run_dir.mkdir(parents=True, exist_ok=True)
    (config.run_dir / "config.json").write_text(json.dumps(config.to_json(), indent=2) + "\n")

    train_step = make_train_step(objects)
    train_writer = tf.summary.create_file_writer(str(config.run_dir / "logs" / "train"))
    val_writer = tf.summary.create_file_writer(str(config.run_dir / "logs" / "validation"))
    start_step = step = int(optimizer.iterations.numpy())
    loss_value: float | None = None
    last_saved = info.step if info.restored else -1
    last_evaluated = -1

    def validate(at_step: int) -> tuple[float, int, int]:
        val_loss, correct, count = evaluate(model, objects.val_ds, objects.loss_fn)
        with val_writer.as_default():
            tf.summary.scalar("loss", val_loss, step=at_step)
            tf.summary.scalar("accuracy", correct / count, step=at_step)
        shown = "n/a" if loss_value is None else f"{loss_value:.4f}"
        print(f"step {at_step}/{config.steps}: loss {shown}, val_loss {val_loss:.4f}, val_accuracy {correct / count:.4f}", file=out, flush=True)
        return val_loss, correct, count

    while step < config.steps:
        loss, global_norm = train_step(train_iterator)
        if int(monitor.non_finite_steps.numpy()) >= MAX_NON_FINITE_STEPS:
            raise FloatingPointError(
                f"{MAX_NON_FINITE_STEPS} updates skipped for non-finite gradients "
                f"(global step {step}, {int(objects.data_position.numpy())} batches drawn); stopping"
            )
        new_step = int(optimizer.iterations.numpy())
        if new_step == step:
            continue  # skipped (non-finite) update: the global step did not move
        step, loss_value = new_step, float(loss)
        if pause_per_step:
            time.sleep(pause_per_step)
        if crash_at_step is not None and step == crash_at_step:
            out.flush()
            os._exit(CRASH_EXIT_CODE)  # no save, no cleanup, writers never closed: like a kill
        if step % config.log_every == 0:
            with train_writer.as_default():
                tf.summary.scalar("loss", loss, step=optimizer.iterations)
                tf.summary.scalar("learning_rate", schedule(optimizer.iterations - 1), step=optimizer.iterations)
                monitor.write_summaries(optimizer.iterations)
        if step % config.eval_every == 0:
            validate(step)
            last_evaluated = step
        if step % config.checkpoint_every == 0:
            objects.checkpoint.save()
            last_saved = step
    if last_saved != step:
        objects.checkpoint.save()
    if last_evaluated == step:
        val_loss, correct, count = evaluate(model, objects.val_ds, objects.loss_fn)
    elif step > start_step:
        val_loss, correct, count = validate(step)
    else:  # nothing to do: a finished run was rerun; report without writing logs again
        val_loss, correct, count = evaluate(model, objects.val_ds, objects.loss_fn)
    train_writer.close()
    val_writer.close()

    report = monitor.report()
    result = TrainResult(
        step=step,
        start_step=start_step,
        steps_run=step - start_step,
        restore_message=info.message,
        fingerprint=state_fingerprint(objects),
        train_loss=None if loss_value is None else round(loss_value, 6),
        val_loss=round(val_loss, 6),
        val_accuracy=correct / count,
        val_correct=correct,
        val_examples=count,
        clipped_steps=report["clipped_steps"],
        non_finite_steps=report["non_finite_steps"],
    )
    (config.run_dir / "result.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
    print(f"finished at step {step} ({result.steps_run} steps in this process)", file=out)
    print(f"val_accuracy {result.val_accuracy:.4f} ({correct}/{count})", file=out)
    print(f"fingerprint {result.fingerprint}", file=out, flush=True)
    return result


def read_result(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``result.json`` a finished run wrote."""
    return json.loads((Path(run_dir) / "result.json").read_text())


# -- command line ----------------------------------------------------------------------------
def make_parser() -> argparse.ArgumentParser:
    """The command's options; each :class:`TrainConfig` field is an option with the same default."""
    defaults = {field.name: field.default for field in dataclasses.fields(TrainConfig)}
    parser = argparse.ArgumentParser(
        prog="python -m helpers.train",
        description="Train the workbook's MLP on the bundled digits; rerun the same command to resume after a crash.",
    )

    def config_option(name: str, kind: type, description: str) -> None:
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=defaults[name], help=f"{description} (default: %(default)s)")

    parser.add_argument("--run-dir", type=Path, required=True, help="checkpoints, logs and result.json go here")
    config_option("steps", int, "final global step")
    config_option("seed", int, "seeds the weights, the data order and Dropout")
    config_option("batch_size", int, "examples per update")
    config_option("learning_rate", float, "peak learning rate")
    config_option("warmup_steps", int, "linear warmup, then cosine decay to 0 at --steps")
    config_option("clip_norm", float, "global-norm clipping threshold")
    config_option("dropout", float, "Dropout rate after the hidden layer")
    config_option("hidden_units", int, "width of the hidden layer")
    config_option("checkpoint_every", int, "save a checkpoint every this many steps")
    config_option("keep_checkpoints", int, "how many of the newest checkpoints to keep")
    config_option("log_every", int, "write TensorBoard scalars every this many steps")
    config_option("eval_every", int, "validate every this many steps")
    parser.add_argument("--fresh", action="store_true", help="empty the run folder first")
    parser.add_argument("--crash-at-step", type=int, default=None, help="exit abruptly after this update (testing)")
    parser.add_argument("--pause-per-step", type=float, default=0.0, help="seconds to sleep after each update (demos)")
    return parser


def config_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TrainConfig:
    """The config the options describe; a value :class:`TrainConfig` refuses is an argparse error.

    :class:`TrainConfig` is the one place values are checked; its ``ValueError`` starts with the
    field name, which becomes the option name in the message.
    """
    values = {field.name: getattr(args, field.name) for field in dataclasses.fields(TrainConfig)}
    try:
        return TrainConfig(**values)
    except ValueError as error:
        name = str(error).split()[0]
        parser.error(f"argument --{name.replace('_', '-')}: {error}")
        raise  # unreachable: parser.error exits


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    config = config_from_args(parser, args)
    if args.pause_per_step < 0:
        parser.error("argument --pause-per-step: must be >= 0")
    if args.crash_at_step is not None and args.crash_at_step <= 0:
        parser.error("argument --crash-at-step: must be a positive int")
    if args.fresh and config.run_dir.exists():
        foreign = sorted(entry.name for entry in config.run_dir.iterdir() if entry.name not in RUN_FOLDER_ENTRIES)
        if foreign:  # --run-dir . or a typo must never delete unrelated files
            parser.error(f"argument --fresh: {display_path(config.run_dir)} holds files no run writes ({', '.join(foreign[:5])}); refusing to empty it")
        shutil.rmtree(config.run_dir)
    differences = _config_differences(config)
    if differences and checkpoint_prefixes(checkpoint_dir(config.run_dir)):
        # train() would refuse this run whatever the checkpoints hold: say so before importing TensorFlow
        print(f"error: CheckpointMismatchError: {_mismatch_message(config, differences)}", file=sys.stderr)
        return MISMATCH_EXIT_CODE

    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    from helpers.checkpoints import CheckpointError

    try:
        train(config, crash_at_step=args.crash_at_step, pause_per_step=args.pause_per_step)
    except CheckpointError as error:  # a mismatch, or checkpoints that are all damaged
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return MISMATCH_EXIT_CODE
    except FloatingPointError as error:  # the run diverged: MAX_NON_FINITE_STEPS updates skipped
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return NON_FINITE_EXIT_CODE
    return 0


if __name__ == "__main__":
    sys.exit(main())
