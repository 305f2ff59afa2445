"""Where chapter 09's ``TOLERANCE`` comes from: mirrored vs single-device training over many seeds.

    python -m benchmarks.tolerance [--seeds 100] [--steps 30]

For each seed and each optimizer (the chapter's SGD at learning rate 0.1, and Adam at 0.01, the
capstone's), two runs start from the same weights and read the same batches: one under a
``MirroredStrategy`` on two logical CPU devices, one on a single device. Both clip the summed
gradient by its global norm (0.5), as chapter 09's train step does. The script prints, per
optimizer, the largest elementwise weight difference after ``--steps`` steps over all seeds, the
seeds whose largest difference is at least the chapter's tolerance (1e-5), and how many seeds ended
bit-identical. It measures numbers, not time; 100 seeds take several minutes on 2 cores
(``benchmarks/README.md``, section 6, has the published run). ``--seeds 2 --steps 2`` checks the
script in seconds.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: Chapter 09's settings: the global batch, the hidden layer, the clip norm, its tolerance.
GLOBAL_BATCH, HIDDEN_UNITS, CLIP_NORM, TOLERANCE = 64, 128, 0.5, 1e-5


@dataclass(frozen=True)
class Summary:
    """One optimizer over the seeds: the largest difference, the seeds at or above the tolerance, the identical ones."""

    optimizer: str
    seeds: int
    largest: float
    above: dict[int, float]
    identical: int

    def line(self) -> str:
        above = ", ".join(f"seed {seed}: {difference:.1e}" for seed, difference in sorted(self.above.items())) or "none"
        return (
            f"{self.optimizer:4s} over {self.seeds} seeds: largest difference {self.largest:.1e}; "
            f"below {TOLERANCE:g} at {self.seeds - len(self.above)} of {self.seeds} (at or above: {above}); bit-identical at {self.identical}"
        )


def optimizers() -> dict[str, Callable[[], Any]]:
    """The optimizers compared, by name: a constructor for each (called inside the strategy's scope for the mirrored run)."""
    import keras

    return {"SGD": lambda: keras.optimizers.SGD(learning_rate=0.1), "Adam": lambda: keras.optimizers.Adam(learning_rate=0.01)}


def _start(seed: int, make_optimizer: Callable[[], Any], scope: Any) -> tuple[Any, Any, Any]:
    """The chapter's ``build``: a seeded model and a built optimizer made in ``scope``, and the seed's batches, repeated."""
    import helpers
    from helpers import data
    from helpers.models import make_model

    helpers.set_seed(seed)
    with scope:
        model, optimizer = make_model(HIDDEN_UNITS), make_optimizer()
        optimizer.build(model.trainable_variables)
    return model, optimizer, data.make_datasets(batch_size=GLOBAL_BATCH, seed=seed)[0].repeat()


def train_single(seed: int, steps: int, make_optimizer: Callable[[], Any]) -> list[Any]:
    """``steps`` clipped updates on one device; the final weights."""
    import contextlib

    import keras
    import tensorflow as tf

    model, optimizer, batches = _start(seed, make_optimizer, contextlib.nullcontext())
    mean_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)  # the chapter's single-device loss

    @tf.function
    def step(iterator: Any) -> None:
        images, labels = next(iterator)
        with tf.GradientTape() as tape:
            loss = mean_loss(labels, model(images, training=True))
        clipped, _ = tf.clip_by_global_norm(tape.gradient(loss, model.trainable_variables), CLIP_NORM)
        optimizer.apply_gradients(zip(clipped, model.trainable_variables, strict=True))

    iterator = iter(batches)
    for _ in range(steps):
        step(iterator)
    return list(model.get_weights())


def train_mirrored(seed: int, steps: int, make_optimizer: Callable[[], Any], strategy: Any) -> list[Any]:
    """The same updates under ``strategy``: each replica's gradient of sum / global batch, summed, then clipped; the final weights."""
    import keras
    import tensorflow as tf

    model, optimizer, batches = _start(seed, make_optimizer, strategy.scope())
    per_example_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def replica_step(images: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(per_example_loss(labels, model(images, training=True)))
        return tape.gradient(loss, model.trainable_variables)

    @tf.function
    def step(iterator: Any) -> None:
        gradients = [strategy.reduce(tf.distribute.ReduceOp.SUM, gradient, axis=None) for gradient in strategy.run(replica_step, args=next(iterator))]
        clipped, _ = tf.clip_by_global_norm(gradients, CLIP_NORM)
        optimizer.apply_gradients(zip(clipped, model.trainable_variables, strict=True))

    iterator = iter(strategy.experimental_distribute_dataset(batches))
    for _ in range(steps):
        step(iterator)
    return list(model.get_weights())


def largest_difference(seed: int, steps: int, make_optimizer: Callable[[], Any], strategy: Any) -> float:
    """Train ``steps`` steps mirrored and on one device from the same start; the largest elementwise weight difference."""
    import numpy as np

    mirrored, single = train_mirrored(seed, steps, make_optimizer, strategy), train_single(seed, steps, make_optimizer)
    return max(float(np.max(np.abs(a - b))) for a, b in zip(mirrored, single, strict=True))


def measure(seeds: int, steps: int) -> list[Summary]:
    """Every optimizer at seeds 0 .. seeds-1; one :class:`Summary` each."""
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    summaries = []
    for name, make_optimizer in optimizers().items():
        differences = {seed: largest_difference(seed, steps, make_optimizer, strategy) for seed in range(seeds)}
        summaries.append(
            Summary(
                optimizer=name,
                seeds=seeds,
                largest=max(differences.values()),
                above={seed: difference for seed, difference in differences.items() if difference >= TOLERANCE},
                identical=sum(difference == 0.0 for difference in differences.values()),
            )
        )
    return summaries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tolerance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds 0 .. N-1 (default 100)")
    parser.add_argument("--steps", type=int, default=30, help="steps per run (default 30, the chapter's)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.steps < 1:
        parser.error("--seeds and --steps must be at least 1")
    import helpers

    helpers.quiet_tensorflow_logs()
    import tensorflow as tf

    physical = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(physical, [tf.config.LogicalDeviceConfiguration()] * 2)  # before TensorFlow initialises
    started = time.perf_counter()
    for summary in measure(args.seeds, args.steps):
        print(summary.line(), flush=True)
    print(f"{args.steps} steps per run, batch {GLOBAL_BATCH}, clip norm {CLIP_NORM}; {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
