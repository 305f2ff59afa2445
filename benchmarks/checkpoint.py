"""Section "checkpoint": what a ``tf.train.Checkpoint`` save costs next to NumPy writing the same bytes, and async vs sync.

The model is the workbook's MLP made wide (:func:`helpers.train.make_model` with a large
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
    return [versus_numpy, asynchronous]
