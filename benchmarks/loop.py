"""Sections "loop" (the workbook's loop vs ``model.fit``) and "instrumentation" (what the loop's extras cost).

Both time a fixed number of training steps of the workbook's MLP on the bundled digits (batch 64,
Adam), with the data drawn from the same seeded, repeated ``tf.data`` pipeline inside the timed work.

*loop*: ``model.fit`` at its defaults and at its best settings (``steps_per_execution``, and with
``jit_compile``) against the capstone's loop (:func:`helpers.train.make_train_until` called by :func:`helpers.train.run_calls`, exactly what
``python -m helpers.train`` runs between evaluations and checkpoints: schedule, global-norm clipping
with its monitor, the data position, scalars every ``log_every`` steps) with one update per
``tf.function`` call and with the command's default ``steps_per_call``. Evaluation and checkpoints
are left out of every side (``fit`` gets no validation data), so the sides do the same work.

*instrumentation*: a bare ``tf.function`` loop (``next``, tape, ``apply_gradients``, the same number
of steps per call) against the capstone's loop with its scalars written every ``log_every`` steps
and a checkpoint (:class:`helpers.checkpoints.TrainingCheckpoint`, as the command saves) every
``checkpoint_every`` steps, for a range of both intervals.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.measure import SPEEDUP, TIMES, Comparison, Options, compare, progress, seconds

LOOP_SECTION = "loop"
INSTRUMENTATION_SECTION = "instrumentation"
BATCH_SIZE = 64
#: Training steps per sample; steps per sample with ``--quick``.
STEPS, QUICK_STEPS = 2000, 20
DEFAULT_REPEATS = 5
#: An interval past every run's end: "never" for evaluation and checkpoints.
NEVER = 10**9
#: Intervals swept by the instrumentation section (``None``: never).
CHECKPOINT_INTERVALS: tuple[int | None, ...] = (None, 50, 200, 1000)
SUMMARY_INTERVALS: tuple[int | None, ...] = (None, 1, 10, 100)
#: The settings the workbook recommends for a long run (benchmarks/README.md explains the choice).
RECOMMENDED_LOG_EVERY, RECOMMENDED_CHECKPOINT_EVERY = 10, 1000
#: The hidden layer of the wider model on which the instrumentation is measured again (the workbook's has 128).
WIDE_HIDDEN_UNITS = 2048


def _default_steps_per_call() -> int:
    """The command's default ``--steps-per-call`` (from :class:`helpers.train.TrainConfig`)."""
    from helpers import train as training

    return int(training.TrainConfig.steps_per_call)  # a dataclass field's default is also the class attribute


def _config(run_dir: Path, steps_total: int, **changes: Any) -> Any:
    from helpers import train as training

    values: dict[str, Any] = {"steps": steps_total, "eval_every": NEVER, "checkpoint_every": NEVER, "warmup_steps": 20}
    values.update(changes)
    return training.TrainConfig(run_dir=run_dir, **values)


class CapstoneLoop:
    """The command's loop on fresh parts: :meth:`run` does ``steps`` more updates, saving every ``checkpoint_every``.

    The calls go through :func:`helpers.train.run_calls`, the command's own call loop, with the
    command's call ends; only validation and the progress lines are left out.
    """

    def __init__(self, config: Any) -> None:
        import tensorflow as tf

        from helpers import train as training

        self.training = training
        self.config = config
        self.parts = training.build(config)
        self.iterator = self.parts.start_data()
        folder = training.RunFolder(config.run_dir)
        folder.train_logs.mkdir(parents=True, exist_ok=True)
        self.writer = tf.summary.create_file_writer(str(folder.train_logs))
        self.train_until = training.make_train_until(self.parts, config.log_every, self.writer)
        self.saves = 0

    def _save_on_checkpoint_steps(self, step: int, _loss: Any) -> None:
        if step % self.config.checkpoint_every == 0:
            self.parts.checkpoint.save()
            self.saves += 1

    def run(self, steps: int) -> None:
        self.training.run_calls(
            self.parts,
            self.train_until,
            self.iterator,
            to_step=self.parts.step + steps,
            next_end=lambda step: self.training.call_end(step, self.config),
            on_new_step=self._save_on_checkpoint_steps,
        )

    def close(self) -> None:
        self.writer.close()


class BareLoop:
    """``next``, ``GradientTape``, ``apply_gradients`` in a ``tf.function`` running ``per_call`` steps per call; nothing else.

    ``pieces`` adds the capstone's instrumentation one piece at a time (the overhead's profile):
    ``"schedule"`` (the warmup-cosine learning rate), ``"clip"`` (``tf.clip_by_global_norm``),
    ``"monitor"`` (clipping through :class:`helpers.clipping.ClippingMonitor`, with its counters) and
    ``"guard"`` (skip the update when the norm is not finite: a ``tf.cond``). ``hidden_units``
    widens the model (the command's ``--hidden-units``; its default when ``None``).
    """

    PIECES = ("schedule", "clip", "monitor", "guard")

    def __init__(self, per_call: int, pieces: tuple[str, ...] = (), *, hidden_units: int | None = None) -> None:
        import keras
        import tensorflow as tf

        from helpers import data
        from helpers.clipping import ClippingMonitor
        from helpers.models import make_model
        from helpers.seeding import set_seed
        from helpers.train import TrainConfig, make_schedule

        unknown = set(pieces) - set(self.PIECES)
        if unknown:
            raise ValueError(f"unknown pieces {sorted(unknown)}; choose from {self.PIECES}")
        set_seed(0)
        model = make_model(TrainConfig.hidden_units if hidden_units is None else hidden_units)
        rate = make_schedule(TrainConfig(run_dir=Path("unused"), steps=NEVER, warmup_steps=20)) if "schedule" in pieces else 1e-2
        optimizer = keras.optimizers.Adam(rate)
        optimizer.build(model.trainable_variables)
        monitor = ClippingMonitor(0.5)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        train, _ = data.make_datasets(batch_size=BATCH_SIZE, seed=0)
        iterator = iter(train.repeat())
        self.per_call = per_call
        self.optimizer = optimizer

        def update(gradients: list[Any]) -> None:
            if "monitor" in pieces:
                gradients, norm = monitor(gradients)
            elif "clip" in pieces or "guard" in pieces:
                gradients, norm = tf.clip_by_global_norm(gradients, 0.5)
            if "guard" in pieces:
                if tf.math.is_finite(norm):
                    optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            else:
                optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))

        @tf.function
        def train_until(until: tf.Tensor) -> tf.Tensor:
            loss = tf.constant(0.0)
            while optimizer.iterations < until:
                images, labels = next(iterator)
                with tf.GradientTape() as tape:
                    loss = loss_fn(labels, model(images, training=True))
                update(tape.gradient(loss, model.trainable_variables))
            return loss

        self.train_until = train_until

    def run(self, steps: int) -> None:
        import tensorflow as tf

        step = int(self.optimizer.iterations.numpy())
        target = step + steps
        while step < target:
            step = min(target, step + self.per_call)
            self.train_until(tf.constant(step, dtype=tf.int64))
        float(self.optimizer.iterations.numpy())


@contextlib.contextmanager
def _without_op_determinism() -> Iterator[None]:
    """Op determinism off for the block, then on again (``helpers.seeding.set_seed`` turns it on).

    Keras compiles ``fit``'s step with XLA only when op determinism is off: with it on, ``compile(jit_compile=True)``
    warns and falls back to no XLA (``model_supports_jit`` in ``keras/src/trainers/trainer.py``). TensorFlow has no
    public switch back, so this uses its internal ``config.disable_op_determinism``.
    """
    import tensorflow as tf
    from tensorflow.python.framework import config

    was_on = config.is_op_determinism_enabled()
    config.disable_op_determinism()
    try:
        yield
    finally:
        if was_on:
            tf.config.experimental.enable_op_determinism()


def _fit_side(steps: int, *, xla: bool = False, **compile_options: Any) -> Callable[[], float]:
    """A side: ``model.fit`` for ``steps`` steps (one epoch of that many), seconds; compiled once, traced in the warm-up.

    With ``xla`` the model is compiled with ``jit_compile=True`` and compiled and run without op determinism.
    """
    import keras

    from helpers import data
    from helpers.models import make_model
    from helpers.seeding import set_seed

    set_seed(0)
    model = make_model()
    guard = _without_op_determinism if xla else contextlib.nullcontext
    with guard():
        model.compile(
            optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=xla, **compile_options
        )
    if xla and not model.jit_compile:
        raise RuntimeError("Keras refused jit_compile=True for this model")
    train, _ = data.make_datasets(batch_size=BATCH_SIZE, seed=0)
    repeated = train.repeat()

    def side() -> float:
        with guard():
            return seconds(lambda: model.fit(repeated, steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False))

    return side


def _loop_side(loop: CapstoneLoop | BareLoop, steps: int) -> Callable[[], float]:
    return lambda: seconds(lambda: loop.run(steps))


def _sizes(options: Options) -> tuple[int, int, int, int]:
    """Quiet TensorFlow's logs; then steps per sample, repetitions, the default steps per call, and a run length past every sample."""
    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    steps = QUICK_STEPS if options.quick else STEPS
    repeats = options.repeats_for(DEFAULT_REPEATS)
    return steps, repeats, _default_steps_per_call(), (repeats + 2) * steps + 100


def run_loop_vs_fit(options: Options) -> list[Comparison]:
    """The capstone loop vs ``model.fit``, at equal model, data, batch size and steps."""
    steps, repeats, per_call, total = _sizes(options)
    progress(f"[{LOOP_SECTION}] capstone loop vs model.fit: {repeats} repetitions of {steps} steps per side")
    loops: list[CapstoneLoop] = []
    with options.scratch("loop") as scratch:
        one = CapstoneLoop(_config(scratch / "one", total, steps_per_call=1))
        default = CapstoneLoop(_config(scratch / "default", total))
        loops += [one, default]
        try:
            result = compare(
                LOOP_SECTION,
                f"{steps} training steps: the capstone loop vs model.fit",
                {
                    "fit, defaults": _fit_side(steps),
                    f"fit, steps_per_execution={per_call}": _fit_side(steps, steps_per_execution=per_call),
                    f"fit, steps_per_execution={per_call}, XLA": _fit_side(steps, xla=True, steps_per_execution=per_call),
                    "capstone loop, 1 step per call": _loop_side(one, steps),
                    f"capstone loop, {per_call} steps per call (default)": _loop_side(default, steps),
                },
                baseline="fit, defaults",
                unit="s",
                repeats=repeats,
                ratio_kind=SPEEDUP,
                ratio_label="speed-up vs fit",
                details={"steps_per_sample": steps, "batch_size": BATCH_SIZE, "steps_per_call": per_call},
                notes=[
                    f"seconds for {steps} steps (lower is faster); the ratio is fit-at-defaults' time over the side's, per repetition. "
                    "The capstone loop does more per step than fit (schedule, clipping with its counters, the data position, "
                    f"scalars every {default.config.log_every} steps); no side evaluates or saves. The XLA side runs without op "
                    "determinism, which Keras requires for jit_compile (it falls back to no XLA otherwise); the others run with it."
                ],
            )
        finally:
            for loop in loops:
                loop.close()
    steps_per_second = {side: steps / result.stats(side).median for side in result.sides}
    result.details["steps_per_second_median"] = {side: round(value, 1) for side, value in steps_per_second.items()}
    return [result]


def run_instrumentation(options: Options) -> list[Comparison]:
    """The bare loop vs the capstone loop, over checkpoint intervals and over summary intervals."""
    steps, repeats, per_call, total = _sizes(options)
    checkpoint_intervals = (None, 5) if options.quick else CHECKPOINT_INTERVALS
    summary_intervals = (None, 1) if options.quick else SUMMARY_INTERVALS
    results = []
    with options.scratch("instrumentation") as scratch:
        sweeps: list[tuple[str, str, dict[str, Any]]] = [
            (
                "checkpoint_every",
                "checkpoint interval",
                {f"checkpoint every {every} steps" if every else "no checkpoints": every for every in checkpoint_intervals},
            ),
            ("log_every", "summary interval", {f"scalars every {every} steps" if every else "no scalars": every for every in summary_intervals}),
        ]
        for field_name, label, settings in sweeps:
            progress(f"[{INSTRUMENTATION_SECTION}] bare loop vs the capstone loop by {label}: {repeats} repetitions of {steps} steps per side")
            loops: list[CapstoneLoop] = []
            sides: dict[str, Callable[[], float]] = {"bare loop": _loop_side(BareLoop(per_call), steps)}
            fixed = {"log_every": RECOMMENDED_LOG_EVERY} if field_name == "checkpoint_every" else {"checkpoint_every": NEVER}
            try:
                for index, (name, every) in enumerate(settings.items()):
                    config = _config(scratch / f"{field_name}_{index}", total, **fixed, **{field_name: every or NEVER})
                    loop = CapstoneLoop(config)
                    loops.append(loop)
                    sides[name] = _loop_side(loop, steps)
                result = compare(
                    INSTRUMENTATION_SECTION,
                    f"overhead by {label} ({steps} steps, {per_call} per call)",
                    sides,
                    baseline="bare loop",
                    unit="s",
                    repeats=repeats,
                    ratio_kind=TIMES,
                    ratio_label="× bare",
                    details={"steps_per_sample": steps, "steps_per_call": per_call, **fixed},
                    notes=[
                        f"seconds for {steps} steps; the ratio is the side's time over the bare loop's, per repetition (1.10 = 10% overhead). "
                        + (
                            f"Scalars every {RECOMMENDED_LOG_EVERY} steps on every capstone side."
                            if field_name == "checkpoint_every"
                            else "No checkpoints on these sides."
                        )
                    ],
                )
            finally:
                for loop in loops:
                    loop.close()
            result.details["checkpoints_saved"] = {name: loop.saves for name, loop in zip(settings, loops, strict=True)}
            results.append(result)

        progress(f"[{INSTRUMENTATION_SECTION}] where the overhead comes from: {repeats} repetitions of {steps} steps per side")
        profile_sides: dict[str, Callable[[], float]] = {"bare loop": _loop_side(BareLoop(per_call), steps)}
        added: tuple[str, ...] = ()
        for piece in BareLoop.PIECES:
            added = (*added, piece)
            profile_sides[f"+ {piece}"] = _loop_side(BareLoop(per_call, added), steps)
        capstone = CapstoneLoop(_config(scratch / "profile", total, log_every=NEVER))
        profile_sides["capstone loop, no scalars or checkpoints"] = _loop_side(capstone, steps)
        try:
            profile = compare(
                INSTRUMENTATION_SECTION,
                f"the overhead, piece by piece ({steps} steps, {per_call} per call)",
                profile_sides,
                baseline="bare loop",
                unit="s",
                repeats=repeats,
                ratio_kind=TIMES,
                ratio_label="× bare",
                details={"steps_per_sample": steps, "steps_per_call": per_call, "pieces": list(BareLoop.PIECES)},
                notes=[
                    "each '+' side adds one piece to the one above (schedule; then clipping by global norm; then the monitor's "
                    "counters; then the non-finite guard's tf.cond); the capstone loop adds the data position, strategy.run and "
                    "reduce, compute_average_loss and its log branch on top."
                ],
            )
        finally:
            capstone.close()
        results.append(profile)
        results.append(_wide_model(scratch, steps, repeats, per_call, total, narrow=results[0]))
    return results


def _wide_model(scratch: Path, steps: int, repeats: int, per_call: int, total: int, *, narrow: Comparison) -> Comparison:
    """The bare loop vs the capstone loop at the recommended settings, on a model :data:`WIDE_HIDDEN_UNITS` wide.

    The instrumentation's cost is a number of small ops per step, whatever the model computes; its
    ratio to the step shrinks as the step grows. ``details["added_microseconds_per_step"]`` gives the
    capstone's extra time per step here and on the workbook's model (from ``narrow``, the checkpoint
    sweep, at the same settings).
    """
    recommended = f"checkpoint every {RECOMMENDED_CHECKPOINT_EVERY} steps"
    progress(f"[{INSTRUMENTATION_SECTION}] the same on a model with {WIDE_HIDDEN_UNITS} hidden units: {repeats} repetitions of {steps} steps per side")
    capstone = CapstoneLoop(
        _config(scratch / "wide", total, hidden_units=WIDE_HIDDEN_UNITS, log_every=RECOMMENDED_LOG_EVERY, checkpoint_every=RECOMMENDED_CHECKPOINT_EVERY)
    )
    side = f"capstone loop, scalars every {RECOMMENDED_LOG_EVERY} steps, {recommended}"
    try:
        result = compare(
            INSTRUMENTATION_SECTION,
            f"overhead on a {WIDE_HIDDEN_UNITS}-unit hidden layer ({steps} steps, {per_call} per call)",
            {"bare loop": _loop_side(BareLoop(per_call, hidden_units=WIDE_HIDDEN_UNITS), steps), side: _loop_side(capstone, steps)},
            baseline="bare loop",
            unit="s",
            repeats=repeats,
            ratio_kind=TIMES,
            ratio_label="× bare",
            details={"steps_per_sample": steps, "steps_per_call": per_call, "hidden_units": WIDE_HIDDEN_UNITS},
            notes=[
                f"the workbook's MLP with {WIDE_HIDDEN_UNITS} hidden units instead of 128, at the recommended settings; "
                "details give the capstone's added time per step here and on the 128-unit model"
            ],
        )
    finally:
        capstone.close()

    def added(comparison: Comparison, name: str) -> float:
        return round((comparison.stats(name).median - comparison.stats("bare loop").median) / steps * 1e6, 1)

    wide, workbook = f"{WIDE_HIDDEN_UNITS} hidden units", "128 hidden units"
    result.details["added_microseconds_per_step"] = {wide: added(result, side)}
    result.details["bare_microseconds_per_step"] = {wide: round(result.stats("bare loop").median / steps * 1e6, 1)}
    if recommended in narrow.samples:  # not in a --quick run, which sweeps other intervals
        result.details["added_microseconds_per_step"][workbook] = added(narrow, recommended)
        result.details["bare_microseconds_per_step"][workbook] = round(narrow.stats("bare loop").median / steps * 1e6, 1)
    return result
