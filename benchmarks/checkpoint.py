"""Section "checkpoint": what a ``tf.train.Checkpoint`` save costs next to NumPy writing the same bytes, and async vs sync.

The model is the workbook's MLP made wide (:func:`helpers.models.make_model` with a large
``hidden_units``, about 30 MB of model and Adam state by default) so the bytes, not the bookkeeping,
dominate. Every write goes to the same folder under the build area (``<out>/scratch/checkpoint``,
removed at the end); files are written to the page cache as the libraries do it, with no ``fsync``.
Every sample writes to a path where no file is: the previous sample's files are removed first, untimed,
because replacing a file costs extra (freeing its pages: about 20 ms for 30 MB on the machine this
was written on), which would favour ``save`` (a new name each time) over ``write``.

1. ``Checkpoint.write`` and ``Checkpoint.save`` of the model and optimizer vs NumPy: the same
   variables fetched with ``.numpy()`` and written with ``np.savez`` (one uncompressed file).
2. An async write (``tf.train.CheckpointOptions(enable_async=True)``) vs a sync write: the time until
   the call returns, and the time until the files are complete (``Checkpoint.sync()``, present in
   the pinned TensorFlow). Chapter 05 shows that the second async write of one ``Checkpoint`` of Keras
   objects fails in this version, so each async sample uses a new ``Checkpoint`` object, and so does
   each sync sample of this comparison, to compare like with like.
3. Chapter 05's claims, on the chapter's own small MLP (128 hidden units, 9,610 parameters, Adam): one
   ``Checkpoint.write`` against one training step (a ``tf.function`` of the chapter's step, one call
   per batch), which gives how many steps one save costs; and the chapter's loop, which saves every
   step, every 10 steps or never, writing to one path as the chapter does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.measure import TIMES, Comparison, Options, compare, progress, seconds

SECTION = "checkpoint"
#: Hidden width of the MLP: 32768 gives about 2.5 M parameters, 29.5 MB with Adam's two moments.
HIDDEN_UNITS, QUICK_HIDDEN_UNITS = 32768, 64
DEFAULT_REPEATS = 7
#: Chapter 05's MLP and batch; training steps per sample of its comparisons.
CHAPTER_HIDDEN_UNITS, CHAPTER_BATCH_SIZE = 128, 64
CHAPTER_STEPS, QUICK_CHAPTER_STEPS = 100, 4
#: The save intervals of chapter 05's loop (``None``: never).
SAVE_EVERY: tuple[int | None, ...] = (None, 10, 1)


def _files_bytes(folder: Path, prefix: str) -> int:
    """Total size of the files of the checkpoint ``prefix`` (its ``.index`` and ``.data-*`` shards)."""
    return sum(path.stat().st_size for path in folder.glob(f"{prefix}.*"))


def _remove(folder: Path, prefix: str) -> None:
    for path in folder.glob(f"{prefix}.*"):
        path.unlink()


def run(options: Options) -> list[Comparison]:
    """Measure checkpoint writes against NumPy, and async against sync writes."""
    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    import keras
    import numpy as np
    import tensorflow as tf

    from helpers.models import make_model
    from helpers.seeding import set_seed

    set_seed(0)
    hidden = QUICK_HIDDEN_UNITS if options.quick else HIDDEN_UNITS
    repeats = options.repeats_for(DEFAULT_REPEATS)
    model = make_model(hidden)
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    variables: list[Any] = []
    for variable in [*model.variables, *optimizer.variables]:
        if not any(variable is seen for seen in variables):
            variables.append(variable)
    state_bytes = sum(variable.numpy().nbytes for variable in variables)
    sizes: dict[str, Any] = {"hidden_units": hidden, "variables": len(variables), "state_mb": round(state_bytes / 1e6, 2)}

    with options.scratch("checkpoint") as folder:
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)

        def with_numpy() -> float:
            (folder / "numpy.npz").unlink(missing_ok=True)

            def work() -> None:
                arrays = {f"v{index}": variable.numpy() for index, variable in enumerate(variables)}
                np.savez(folder / "numpy.npz", **arrays)

            return seconds(work) * 1000

        def write() -> float:
            _remove(folder, "write")
            return seconds(lambda: checkpoint.write(str(folder / "write"))) * 1000

        def save() -> float:
            saved: list[str] = []
            value = seconds(lambda: saved.append(checkpoint.save(str(folder / "save")))) * 1000
            _remove(folder, Path(saved[0]).name)  # save numbers its files: keep one at a time on disk
            return value

        progress(f"[{SECTION}] Checkpoint.write/save vs np.savez of {sizes['state_mb']} MB: {repeats} repetitions")
        versus_numpy = compare(
            SECTION,
            f"save model + Adam state ({sizes['state_mb']} MB) vs NumPy",
            {"np.savez (same arrays)": with_numpy, "Checkpoint.write": write, "Checkpoint.save": save},
            baseline="np.savez (same arrays)",
            unit="ms",
            repeats=repeats,
            ratio_kind=TIMES,
            ratio_label="× NumPy",
            details=dict(sizes),
            notes=[
                "ms per save; the NumPy side includes fetching every variable with `.numpy()` and writes one uncompressed `.npz`; "
                "`save` also updates the `checkpoint` index file and numbers its files; every sample writes new files (old ones removed untimed)."
            ],
        )

        versus_numpy.details["numpy_file_mb"] = round((folder / "numpy.npz").stat().st_size / 1e6, 2)
        versus_numpy.details["checkpoint_files_mb"] = round(_files_bytes(folder, "write") / 1e6, 2)

        async_options = tf.train.CheckpointOptions(enable_async=True)

        def sync_write() -> float:
            fresh = tf.train.Checkpoint(model=model, optimizer=optimizer)
            _remove(folder, "sync")
            return seconds(lambda: fresh.write(str(folder / "sync"))) * 1000

        def async_side(wait: bool, prefix: str) -> Callable[[], float]:
            def side() -> float:
                fresh = tf.train.Checkpoint(model=model, optimizer=optimizer)
                _remove(folder, prefix)

                def work() -> None:
                    fresh.write(str(folder / prefix), options=async_options)
                    if wait:
                        fresh.sync()

                value = seconds(work) * 1000
                fresh.sync()  # untimed when not waiting: the next sample starts with no write in flight
                if not (folder / f"{prefix}.index").is_file() or _files_bytes(folder, prefix) < state_bytes:
                    raise RuntimeError(f"the async checkpoint {prefix!r} is incomplete after sync()")
                return value

            return side

        progress(f"[{SECTION}] async vs sync write: {repeats} repetitions")
        asynchronous = compare(
            SECTION,
            f"async vs sync Checkpoint.write ({sizes['state_mb']} MB)",
            {
                "sync write": sync_write,
                "async write: call returns": async_side(False, "async-returns"),
                "async write: files complete (sync())": async_side(True, "async-complete"),
            },
            baseline="sync write",
            unit="ms",
            repeats=repeats,
            ratio_kind=TIMES,
            ratio_label="× sync",
            details=dict(sizes),
            notes=[
                "ms per write, each with a new `tf.train.Checkpoint` object (chapter 05: a second async write of the same object fails "
                "in this version); 'call returns' is the time the training loop is blocked, 'files complete' the time until `sync()` returns."
            ],
        )
        chapter = _chapter_05(options, repeats, folder)
    return [versus_numpy, asynchronous, *chapter]


def _save_label(every: int | None) -> str:
    return "no saves" if every is None else "a save every step" if every == 1 else f"a save every {every} steps"


def _chapter_05(options: Options, repeats: int, folder: Path) -> list[Comparison]:
    """Chapter 05's small MLP: a save against a training step, and a loop saving every step, every 10 steps or never."""
    import keras
    import tensorflow as tf

    from helpers.data import make_datasets
    from helpers.models import make_model

    steps = QUICK_CHAPTER_STEPS if options.quick else CHAPTER_STEPS
    model = make_model(CHAPTER_HIDDEN_UNITS)
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train, _ = make_datasets(batch_size=CHAPTER_BATCH_SIZE, seed=0)
    batches = [(images, labels) for images, labels in train if int(images.shape[0]) == CHAPTER_BATCH_SIZE]

    @tf.function
    def step(images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    step(*batches[0])  # trace before timing, as the chapter does
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    sizes = {"hidden_units": CHAPTER_HIDDEN_UNITS, "parameters": model.count_params(), "batch_size": CHAPTER_BATCH_SIZE, "steps_per_sample": steps}

    def one_step() -> float:
        def work() -> None:
            loss: Any = None
            for index in range(steps):
                loss = step(*batches[index % len(batches)])
            float(loss)

        return seconds(work) * 1000 / steps

    def one_save() -> float:
        _remove(folder, "chapter-save")
        return seconds(lambda: checkpoint.write(str(folder / "chapter-save"))) * 1000

    progress(f"[{SECTION}] chapter 05: one save vs one training step: {repeats} repetitions")
    save_vs_step = compare(
        SECTION,
        "chapter 05: one save vs one training step (MLP 128 hidden, Adam)",
        {"one training step": one_step, "one Checkpoint.write": one_save},
        baseline="one training step",
        unit="ms",
        repeats=repeats,
        ratio_kind=TIMES,
        ratio_label="× one step",
        details=dict(sizes),
        notes=[
            f"ms; the step is the mean of {steps} steps of a `tf.function` (one call per batch), the save one `Checkpoint.write` of "
            "the model and its Adam state to a new path; the ratio is the number of training steps one save costs."
        ],
    )
    save_vs_step.details["checkpoint_files_kib"] = round(_files_bytes(folder, "chapter-save") / 1024, 1)

    saves: dict[str, int] = {}

    def loop(every: int | None) -> Callable[[], float]:
        def side() -> float:
            def work() -> None:
                loss: Any = None
                count = 0
                for index in range(steps):
                    loss = step(*batches[index % len(batches)])
                    if every and index % every == 0:
                        checkpoint.write(str(folder / "chapter-loop"))
                        count += 1
                float(loss)
                saves[_save_label(every)] = count

            return seconds(work) * 1000

        return side

    progress(f"[{SECTION}] chapter 05: a loop of {steps} steps saving every step, every 10 steps, never: {repeats} repetitions")
    loop_cost = compare(
        SECTION,
        f"chapter 05: {steps} training steps, saving every step, every 10 steps or never",
        {_save_label(every): loop(every) for every in SAVE_EVERY},
        baseline=_save_label(None),
        unit="ms",
        repeats=repeats,
        ratio_kind=TIMES,
        ratio_label="× no saves",
        details=dict(sizes),
        notes=[
            f"ms for {steps} steps; a save every k steps writes after steps 0, k, 2k, ... to one path, as chapter 05's loop does. "
            "With one save costing s steps, saving every k steps should take about 1 + s / k times the loop without saves."
        ],
    )
    expected = {_save_label(every): 0 if every is None else -(-steps // every) for every in SAVE_EVERY}
    if saves != expected:
        raise RuntimeError(f"expected {expected} saves per sample, counted {saves}")
    loop_cost.details["saves_per_sample"] = saves
    return [save_vs_step, loop_cost]
