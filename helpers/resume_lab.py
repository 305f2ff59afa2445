"""Chapter 05's exact-resume experiment: restore a half-way checkpoint in a new process and train on.

Chapter 05 (*Exact resume in a new process*) shows this file and runs it as a new process::

    python -m helpers.resume_lab --runs RUNS --stop 40 --variant plain_mlp:0.0:0 --variant dropout:0.3:1

Each ``--variant NAME:DROPOUT:SAVE_SEED_STATE`` names a folder ``RUNS/NAME`` holding a checkpoint ``ckpt``
written half-way. The process restores it into fresh objects, trains on to global step ``--stop`` with the
same batches the notebook used, and saves the final weights to ``RUNS/NAME/final.npz``. The notebook imports
the same functions for its uninterrupted run, so both processes share the model, the batches and the step.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Sequence

import helpers

helpers.quiet_tensorflow_logs()

import keras  # noqa: E402  (after quiet_tensorflow_logs)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from helpers import data  # noqa: E402
from helpers.models import make_model  # noqa: E402

BATCH_SIZE = 64
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def make_batches(seed: int, count: int) -> list[tuple[tf.Tensor, tf.Tensor]]:
    """The same ``count`` batches, epoch after epoch, in every process."""
    train_ds, _ = data.make_datasets(batch_size=BATCH_SIZE, seed=seed)
    return list(train_ds.repeat().take(count))


def start(seed: int, dropout: float) -> tuple[keras.Model, keras.optimizers.Optimizer]:
    """A seeded model and a built Adam optimizer (built, so its moments exist before a restore)."""
    helpers.set_seed(seed)
    model, optimizer = make_model(dropout=dropout), keras.optimizers.Adam(learning_rate=1e-3)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def make_checkpoint(model: keras.Model, optimizer: keras.optimizers.Optimizer, save_seed_state: bool) -> tf.train.Checkpoint:
    """The model and the optimizer; with ``save_seed_state``, also Dropout's random-number state."""
    objects = {"model": model, "optimizer": optimizer}
    if save_seed_state:  # Keras 3 keeps Dropout's RNG state here, and Checkpoint(model=...) does not save it
        objects["seed_states"] = list(model.non_trainable_variables)
    return tf.train.Checkpoint(**objects)


def make_train_step(model: keras.Model, optimizer: keras.optimizers.Optimizer) -> Callable[[tf.Tensor, tf.Tensor], None]:
    """Chapter 02's train step, compiled: one update of ``model`` on one batch. Make it once per model, call it often."""

    @tf.function
    def step(images: tf.Tensor, labels: tf.Tensor) -> None:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))

    return step


def train(model: keras.Model, optimizer: keras.optimizers.Optimizer, batches: Iterable[tuple[tf.Tensor, tf.Tensor]]) -> None:
    """One update per batch, with a train step compiled for this call (:func:`make_train_step`)."""
    step = make_train_step(model, optimizer)
    for images, labels in batches:
        step(images, labels)


def resume(folder: str, *, dropout: float, save_seed_state: bool, stop: int, seed: int) -> str:
    """Restore ``folder/ckpt`` into fresh objects, train on to step ``stop``, save ``folder/final.npz``."""
    model, optimizer = start(seed, dropout)
    make_checkpoint(model, optimizer, save_seed_state).read(os.path.join(folder, "ckpt")).assert_consumed()
    first_step = int(optimizer.iterations)
    train(model, optimizer, make_batches(seed, stop)[first_step:])  # skip the batches the first half used
    np.savez(os.path.join(folder, "final.npz"), *[weight.numpy() for weight in model.weights])
    return f"new process: restored step {first_step}, trained to step {int(optimizer.iterations)}"


def parse_variant(text: str) -> tuple[str, float, bool]:
    """``NAME:DROPOUT:SAVE_SEED_STATE`` as (name, dropout rate, whether the checkpoint holds Dropout's seed state).

    A malformed value raises :class:`argparse.ArgumentTypeError`, which argparse turns into one line and status 2.
    """
    parts = text.split(":")
    if len(parts) != 3 or not parts[0]:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:DROPOUT:SAVE_SEED_STATE, e.g. plain_mlp:0.0:0")
    name, dropout, save_seed_state = parts
    try:
        rate = float(dropout)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: DROPOUT {dropout!r} is not a number, e.g. 0.3") from None
    if not 0.0 <= rate < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r}: DROPOUT {dropout} is not in [0, 1)")
    if save_seed_state not in ("0", "1"):
        raise argparse.ArgumentTypeError(f"{text!r}: SAVE_SEED_STATE {save_seed_state!r} is not 0 or 1")
    return name, rate, save_seed_state == "1"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.resume_lab", description="Restore each variant's checkpoint and train on; save the final weights.")
    parser.add_argument("--runs", required=True, help="folder with one sub-folder per variant, each holding a checkpoint `ckpt`")
    parser.add_argument(
        "--variant", action="append", required=True, type=parse_variant, help="NAME:DROPOUT:SAVE_SEED_STATE (0 or 1); repeat for more"
    )
    parser.add_argument("--stop", type=int, required=True, help="train until this global step")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for variant in args.variant:  # one process for every variant: each restores into fresh objects
        name, dropout, save_seed_state = variant
        report = resume(os.path.join(args.runs, name), dropout=dropout, save_seed_state=save_seed_state, stop=args.stop, seed=args.seed)
        print(f"{name}: {report}")


if __name__ == "__main__":
    main()
