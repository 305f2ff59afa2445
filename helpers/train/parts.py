"""The parts of one run, made fresh by :func:`build`: strategy, model, schedule, optimizer, monitor, data and checkpoint."""

from __future__ import annotations

from dataclasses import dataclass

from helpers.environment import quiet_tensorflow_logs

quiet_tensorflow_logs()

import keras  # noqa: E402  (after quiet_tensorflow_logs)
import tensorflow as tf  # noqa: E402

from helpers import data  # noqa: E402
from helpers.checkpoints import TrainingCheckpoint  # noqa: E402
from helpers.clipping import ClippingMonitor  # noqa: E402
from helpers.models import make_model  # noqa: E402
from helpers.seeding import set_seed  # noqa: E402
from helpers.train.cluster import WorkerRole  # noqa: E402
from helpers.train.config import TrainConfig  # noqa: E402
from helpers.train.run_folder import RunFolder  # noqa: E402
from helpers.train.strategies import make_strategy  # noqa: E402


@dataclass(frozen=True)
class RunParts:
    """What :func:`build` makes: the pieces of one run, before any restore. Nothing in it is swapped later."""

    strategy: tf.distribute.Strategy
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    schedule: keras.optimizers.schedules.LearningRateSchedule
    monitor: ClippingMonitor
    #: Per-example losses: each replica averages over the *global* batch (``tf.nn.compute_average_loss``).
    loss_fn: keras.losses.Loss
    #: The training batches, repeated without end, each worker keeping its share of every batch.
    train_ds: tf.data.Dataset
    #: Batches drawn so far (saved in every checkpoint): where a resume continues in the data.
    data_position: tf.Variable
    val_ds: tf.data.Dataset
    checkpoint: TrainingCheckpoint

    @property
    def step(self) -> int:
        """The global step: ``optimizer.iterations``."""
        return int(self.optimizer.iterations.numpy())

    def start_data(self) -> tf.distribute.DistributedIterator:
        """An iterator over the training batches from ``data_position`` on, split across replicas.

        Every new iterator over the same ``train_ds`` is the next shuffle of the data, so an exact
        resume builds fresh parts (as a new process does) and starts their data once, after the restore.
        """
        position = int(self.data_position.numpy())
        return iter(self.strategy.experimental_distribute_dataset(self.train_ds.skip(position)))


def make_schedule(config: TrainConfig) -> keras.optimizers.schedules.LearningRateSchedule:
    """Linear warmup from 0 to ``learning_rate`` over ``warmup_steps``, then cosine decay to 0 at ``steps``."""
    warmup = int(config.warmup_steps or 0)  # never None here: TrainConfig resolves the default
    if warmup == 0:
        return keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps=config.steps)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=config.steps - warmup,
        warmup_target=config.learning_rate,
        warmup_steps=warmup,
    )


def _sharded(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` repeated, set to be split by data: every worker builds the same pipeline and keeps its share of each batch."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.repeat().with_options(options)


def build(config: TrainConfig, role: WorkerRole | None = None) -> RunParts:
    """Make the strategy, seed everything with ``config.seed``, and make a fresh model, optimizer, data and checkpoint.

    Every variable is created inside ``strategy.scope()``, so under a strategy each one is mirrored
    on every replica. The strategy comes first: ``MultiWorkerMirroredStrategy`` must exist before
    TensorFlow runs anything. ``role`` is this worker's place in the cluster (multiworker only).
    """
    strategy = make_strategy(config.strategy, role)
    set_seed(config.seed)
    with strategy.scope():
        model = make_model(config.hidden_units, config.dropout)
        schedule = make_schedule(config)
        optimizer = keras.optimizers.Adam(learning_rate=schedule)
        optimizer.build(model.trainable_variables)
        monitor = ClippingMonitor(config.clip_norm, name="clipping")
        data_position = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches_drawn")
    train_ds, val_ds = data.make_datasets(batch_size=config.batch_size, seed=config.seed)
    checkpoint = TrainingCheckpoint(
        RunFolder(config.run_dir).checkpoints,
        model=model,
        optimizer=optimizer,
        max_to_keep=config.keep_checkpoints,
        monitor=monitor,
        data_position=data_position,
    )
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    return RunParts(strategy, model, optimizer, schedule, monitor, loss_fn, _sharded(train_ds), data_position, val_ds, checkpoint)
