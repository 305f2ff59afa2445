"""The capstone's training loop: one run that survives being killed and resumes bit-identically.

Chapters 01-07 each taught one piece; this module puts them together in one loop, and chapter 09
runs the same loop under ``tf.distribute`` (``--strategy mirrored`` or ``multiworker``):

- the global step is ``optimizer.iterations`` (chapter 01): the loop, the schedule, the logs and
  the checkpoint names all read it; under a strategy it still counts global steps;
- a ``tf.function`` train step with ``tf.GradientTape`` (chapter 02), run on every replica by
  ``strategy.run``; the per-replica gradients are summed across replicas (``strategy.reduce``:
  the all-reduce) *before* clipping, so the update is the one a single device would make;
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
  and the run stops with ``FloatingPointError`` once :data:`MAX_NON_FINITE_STEPS` were skipped;
- Ctrl-C (SIGINT) and SIGTERM: the command finishes the update in progress, saves a checkpoint at
  that step and stops with :class:`Interrupted` (exit status 128 + the signal's number). With
  ``--strategy multiworker`` TensorFlow's ``PreemptionCheckpointHandler`` makes every worker save
  at the same step.

Use it as a library (:class:`TrainConfig`, :func:`build`, :func:`train`) or as a command::

    python -m helpers.train --run-dir build/demo --steps 200 --dropout 0.2
    # killed or stopped? run the same command again: it resumes from the latest checkpoint

:class:`RunFolder` names what a run writes: ``checkpoints/``, ``logs/train``,
``logs/validation``, ``config.json`` and, at the end, ``result.json`` with the final metrics and
a :func:`fingerprint` (sha256 of every model and optimizer variable's bytes): two runs ended in
the same state exactly when their fingerprints are equal.

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
import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TextIO

from helpers.paths import checkpoint_name, checkpoint_prefixes, checkpoint_step, display_path, repo_root
from helpers.seeding import check_seed

#: Paths in the command's messages: relative inside the repository, as given elsewhere.
_shown = functools.partial(display_path, keep_outside=True)

if TYPE_CHECKING:  # pragma: no cover
    import keras
    import tensorflow as tf

    from helpers.checkpoints import RestoreInfo, TrainingCheckpoint
    from helpers.clipping import ClippingMonitor

#: Exit status of a process stopped by ``crash_at_step`` (``os._exit``: no cleanup, no save).
CRASH_EXIT_CODE = 3
#: Exit status when the run folder holds a checkpoint of another configuration, or only damaged ones.
MISMATCH_EXIT_CODE = 4
#: Exit status of the command when a run stopped for too many non-finite updates (a message, no traceback).
NON_FINITE_EXIT_CODE = 5
#: Exit status for a bad option or a run folder the command cannot use (argparse's own status).
USAGE_EXIT_CODE = 2
#: A run stops with ``FloatingPointError`` once this many updates were skipped (non-finite gradient
#: norm), counted over the whole run (the monitor's counter is saved in checkpoints).
MAX_NON_FINITE_STEPS = 10
#: The ``--strategy`` choices: no distribution, two replicas on this machine's CPU, or one worker
#: process of a cluster described by the ``TF_CONFIG`` environment variable.
STRATEGIES = ("default", "mirrored", "multiworker")
#: How many replicas ``--strategy mirrored`` runs: two logical devices carved out of the CPU.
MIRRORED_REPLICAS = 2
#: The default warmup is 10% of the run, at most this many steps, so it fits any ``steps``.
MAX_DEFAULT_WARMUP_STEPS = 20


def interrupt_exit_code(signal_number: int) -> int:
    """The command's exit status after it saved and stopped on a signal: 128 + its number (the shell's rule)."""
    return 128 + int(signal_number)


# -- configuration ---------------------------------------------------------------------------
class ConfigError(ValueError):
    """A :class:`TrainConfig` value is refused; ``field`` names it, the message says what is expected."""

    def __init__(self, field_name: str, expected: str) -> None:
        super().__init__(f"{field_name} must be {expected}")
        self.field = field_name


def _option(default: Any, description: str, *, default_text: str | None = None, choices: Sequence[str] | None = None) -> Any:
    """A config field that is also a command-line option (see :func:`make_parser`)."""
    metadata = {"help": description, "default_text": default_text, "choices": choices}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run. A bad value raises :class:`ConfigError` naming the field.

    ``steps`` is the number of optimizer updates (the final global step); the learning rate
    warms up linearly from 0 to ``learning_rate`` over ``warmup_steps`` (by default 10% of the
    steps, at most :data:`MAX_DEFAULT_WARMUP_STEPS`) and then follows a cosine decay to 0 at
    ``steps``. ``checkpoint_every``, ``log_every`` and ``eval_every`` are counted in global steps;
    the newest ``keep_checkpoints`` checkpoints are kept, older ones deleted. ``clip_norm``
    defaults to 0.5, inside the range of this model's gradient norms (about 0.1 to 1.3 on the
    digits), so clipping acts on some updates and not on others. ``strategy`` is one of
    :data:`STRATEGIES`. Each field but ``run_dir`` is a command-line option with the same default.
    """

    run_dir: Path
    steps: int = _option(200, "final global step")
    seed: int = _option(0, "seeds the weights, the data order and Dropout")
    batch_size: int = _option(64, "examples per update (the global batch, split across replicas)")
    learning_rate: float = _option(1e-2, "peak learning rate")
    warmup_steps: int | None = _option(
        None,
        "linear warmup, then cosine decay to 0 at --steps",
        default_text=f"10% of --steps, at most {MAX_DEFAULT_WARMUP_STEPS}",
    )
    clip_norm: float = _option(0.5, "global-norm clipping threshold")
    dropout: float = _option(0.0, "Dropout rate after the hidden layer")
    hidden_units: int = _option(128, "width of the hidden layer")
    strategy: str = _option("default", "tf.distribute strategy; multiworker reads TF_CONFIG", choices=STRATEGIES)
    checkpoint_every: int = _option(50, "save a checkpoint every this many steps")
    keep_checkpoints: int = _option(3, "how many of the newest checkpoints to keep")
    log_every: int = _option(10, "write TensorBoard scalars every this many steps")
    eval_every: int = _option(50, "validate and print a progress line every this many steps")
    steps_per_call: int = _option(50, "updates per call of the tf.function loop (calls also end at each evaluation and checkpoint)")

    #: Config fields that shape the trajectory; a resume must use the same values.
    TRAJECTORY_FIELDS: ClassVar[tuple[str, ...]] = (
        "steps", "seed", "batch_size", "learning_rate", "warmup_steps", "clip_norm", "dropout", "hidden_units", "strategy",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_dir", Path(self.run_dir))
        for name in ("steps", "batch_size", "hidden_units", "checkpoint_every", "log_every", "eval_every", "keep_checkpoints", "steps_per_call"):
            _require(name, _is_int(getattr(self, name)) and getattr(self, name) > 0, "a positive int")
        try:
            check_seed(self.seed)
        except ValueError:
            raise ConfigError("seed", "an int in [0, 2**32)") from None
        warmup = min(MAX_DEFAULT_WARMUP_STEPS, self.steps // 10) if self.warmup_steps is None else self.warmup_steps
        object.__setattr__(self, "warmup_steps", warmup)
        _require("warmup_steps", _is_int(warmup) and 0 <= warmup < self.steps, f"an int in [0, steps={self.steps})")
        _require("learning_rate", _is_number(self.learning_rate) and self.learning_rate > 0, "a positive finite number")
        _require("clip_norm", _is_number(self.clip_norm) and self.clip_norm > 0, "a positive finite number")
        _require("dropout", _is_number(self.dropout) and 0 <= self.dropout < 1, "a number in [0, 1)")
        _require("strategy", self.strategy in STRATEGIES, f"one of {', '.join(STRATEGIES)}")
        if self.strategy == "mirrored":
            _require("batch_size", self.batch_size % MIRRORED_REPLICAS == 0, f"a multiple of {MIRRORED_REPLICAS} with strategy mirrored")

    def trajectory(self) -> dict[str, Any]:
        """The fields a resumed run must share with the run that wrote the checkpoint."""
        return {name: getattr(self, name) for name in self.TRAJECTORY_FIELDS}

    def to_json(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        values["run_dir"] = _shown(self.run_dir)
        return values


def config_options() -> list[dataclasses.Field[Any]]:
    """The :class:`TrainConfig` fields that are command-line options (all but ``run_dir``), in order."""
    return [entry for entry in dataclasses.fields(TrainConfig) if entry.name != "run_dir"]


def option_name(field_name: str) -> str:
    """``checkpoint_every`` -> ``--checkpoint-every``."""
    return "--" + field_name.replace("_", "-")


def default_text(entry: dataclasses.Field[Any]) -> str:
    """How ``--help`` shows a field's default."""
    return entry.metadata["default_text"] or str(entry.default)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require(name: str, ok: bool, expected: str) -> None:
    if not ok:
        raise ConfigError(name, expected)


# -- the run folder ---------------------------------------------------------------------------
class RunFolderError(RuntimeError):
    """The run folder cannot be used as it is (a file where a folder belongs, an unreadable config ...).

    ``emptying_helps`` says whether removing what runs write (``--fresh``) would fix it.
    """

    def __init__(self, message: str, *, emptying_helps: bool) -> None:
        super().__init__(message)
        self.emptying_helps = emptying_helps


@dataclass(frozen=True)
class RunFolder:
    """Where one run writes, named in one place: the loop, ``--fresh``, chapter 08 and the tests use it."""

    path: Path

    #: Everything a run writes in its folder; ``--fresh`` removes only these.
    ENTRIES: ClassVar[frozenset[str]] = frozenset({"checkpoints", "logs", "config.json", "result.json"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def train_logs(self) -> Path:
        return self.logs / "train"

    @property
    def validation_logs(self) -> Path:
        return self.logs / "validation"

    @property
    def config_file(self) -> Path:
        return self.path / "config.json"

    @property
    def result_file(self) -> Path:
        return self.path / "result.json"

    def foreign_entries(self) -> list[str]:
        """Names in the folder that no run writes (sorted); empty for a missing folder."""
        if not self.path.is_dir():
            return []
        return sorted(entry.name for entry in self.path.iterdir() if entry.name not in self.ENTRIES)

    def check(self) -> None:
        """Raise :class:`RunFolderError` naming the first thing that makes the folder unusable.

        Reads only; a missing folder is fine (a new run creates it).
        """
        where = _shown(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise RunFolderError(f"{where} is a file, not a folder", emptying_helps=False)
        foreign = self.foreign_entries()
        if foreign:
            raise RunFolderError(f"{where} holds files no run writes ({', '.join(foreign[:5])})", emptying_helps=False)
        for folder in (self.checkpoints, self.logs, self.train_logs, self.validation_logs):
            if folder.exists() and not folder.is_dir():
                raise RunFolderError(f"{_shown(folder)} is a file where the run keeps a folder", emptying_helps=True)
        for file in (self.config_file, self.result_file):
            if file.exists() and not file.is_file():
                raise RunFolderError(f"{_shown(file)} is a folder where the run writes a file", emptying_helps=True)
        self.saved_config()

    def saved_config(self) -> dict[str, Any] | None:
        """The ``config.json`` an earlier run wrote, or None; :class:`RunFolderError` if it is not one."""
        if not self.config_file.is_file():
            return None
        try:
            saved = json.loads(self.config_file.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RunFolderError(f"{_shown(self.config_file)} is not a run's config ({type(error).__name__})", emptying_helps=True) from None
        if not isinstance(saved, dict):
            raise RunFolderError(f"{_shown(self.config_file)} is not a run's config (not a JSON object)", emptying_helps=True)
        return saved

    def config_differences(self, config: TrainConfig) -> list[str]:
        """``name=saved there, value here`` for each trajectory field that differs from ``config.json``."""
        saved = self.saved_config() or {}
        if not saved:
            return []
        return [f"{name}={saved.get(name)!r} there, {value!r} here" for name, value in config.trajectory().items() if saved.get(name) != value]

    def has_checkpoints(self) -> bool:
        """True when the folder holds at least one ``ckpt-<step>`` checkpoint (read without TensorFlow)."""
        return bool(checkpoint_prefixes(self.checkpoints))

    def latest_step(self) -> int:
        """The step of the latest *published* checkpoint (the one a resume restores), -1 if none.

        Files of a newer checkpoint can exist before the state file points at them (a save in
        progress, or one torn by a kill); a resume rightly ignores those. Imports TensorFlow.
        """
        from helpers.environment import quiet_tensorflow_logs

        quiet_tensorflow_logs()
        import tensorflow as tf

        latest = tf.train.latest_checkpoint(str(self.checkpoints))
        return checkpoint_step(latest) if latest else -1

    def read_result(self) -> dict[str, Any]:
        """The ``result.json`` a finished run wrote."""
        return json.loads(self.result_file.read_text())

    def write_config(self, config: TrainConfig) -> None:
        """Write ``config.json`` (atomically: another worker may be reading it)."""
        _write_json(self.config_file, config.to_json())

    def write_result(self, result: TrainResult) -> None:
        """Write ``result.json`` (atomically)."""
        _write_json(self.result_file, result.to_json())

    def empty(self) -> None:
        """Remove what a run wrote (``--fresh``); :class:`RunFolderError` if the folder holds anything else."""
        if self.path.exists() and not self.path.is_dir():
            raise RunFolderError(f"{_shown(self.path)} is a file, not a folder", emptying_helps=False)
        foreign = self.foreign_entries()
        if foreign:  # --run-dir . or a typo must never delete unrelated files
            raise RunFolderError(f"{_shown(self.path)} holds files no run writes ({', '.join(foreign[:5])}); refusing to empty it", emptying_helps=False)
        if self.path.is_dir():
            shutil.rmtree(self.path)


def _write_json(path: Path, values: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(values, indent=2) + "\n")
    os.replace(partial, path)  # readers see the old file or the new one, never half of one


# -- the cluster of worker processes ----------------------------------------------------------
class ClusterConfigError(ValueError):
    """``TF_CONFIG`` is missing or does not describe this process as a worker of a cluster."""


@dataclass(frozen=True)
class WorkerRole:
    """This process's place in a ``TF_CONFIG`` cluster."""

    index: int
    workers: int

    @property
    def is_chief(self) -> bool:
        """Worker 0 is the chief: it alone writes checkpoints, logs, ``config.json`` and ``result.json``."""
        return self.index == 0


def worker_role(tf_config: str | None) -> WorkerRole:
    """Read a ``TF_CONFIG`` value (JSON) the way ``--strategy multiworker`` needs it; :class:`ClusterConfigError` if unusable.

    Expected: ``{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": i}}``.
    """
    if not tf_config:
        raise ClusterConfigError("the multiworker strategy needs the TF_CONFIG environment variable (helpers.train.local_tf_configs writes it)")
    try:
        parsed = json.loads(tf_config)
        workers = parsed["cluster"]["worker"]
        task = parsed["task"]
        index = task["index"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ClusterConfigError(f"TF_CONFIG must be JSON with cluster.worker and task.index ({type(error).__name__}: {error})") from None
    if set(parsed["cluster"]) != {"worker"}:
        raise ClusterConfigError(f"TF_CONFIG's cluster may only hold 'worker' jobs here, not {sorted(set(parsed['cluster']) - {'worker'})}")
    if not isinstance(workers, list) or not workers or not all(isinstance(address, str) and ":" in address for address in workers):
        raise ClusterConfigError("TF_CONFIG's cluster.worker must be a non-empty list of 'host:port' addresses")
    if task.get("type") != "worker" or not _is_int(index) or not 0 <= index < len(workers):
        raise ClusterConfigError(f"TF_CONFIG's task must be {{'type': 'worker', 'index': 0..{len(workers) - 1}}}, got {task}")
    return WorkerRole(index=index, workers=len(workers))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def local_tf_configs(workers: int) -> list[str]:
    """One ``TF_CONFIG`` value per worker of a cluster of ``workers`` processes on 127.0.0.1, each on a free port."""
    if not _is_int(workers) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    return [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}) for index in range(workers)]


# -- building the pieces ----------------------------------------------------------------------
class StrategyError(RuntimeError):
    """The requested ``tf.distribute`` strategy cannot be made in this process."""


def split_cpu(devices: int = MIRRORED_REPLICAS) -> None:
    """Make the CPU show up as ``devices`` logical devices, so ``MirroredStrategy`` has replicas to mirror.

    TensorFlow fixes its devices the first time anything uses them; after that a different split
    raises :class:`StrategyError` (the same split again is fine). Call this before any TensorFlow
    op runs in the process.
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration() for _ in range(devices)]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None and len(current) == devices:
        return
    try:
        tf.config.set_logical_device_configuration(cpu, wanted)
    except RuntimeError as error:
        raise StrategyError(
            f"cannot split the CPU into {devices} devices now ({error}); call helpers.train.split_cpu() before TensorFlow runs anything"
        ) from None


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The ``tf.distribute`` strategy ``--strategy name`` asks for (see :data:`STRATEGIES`)."""
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        split_cpu(MIRRORED_REPLICAS)
        return tf.distribute.MirroredStrategy([f"/cpu:{index}" for index in range(MIRRORED_REPLICAS)])
    if name == "multiworker":
        worker_role(os.environ.get("TF_CONFIG"))  # a clear error before TensorFlow reads it
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise StrategyError(f"strategy must be one of {', '.join(STRATEGIES)}, got {name!r}")


@dataclass
class Objects:
    """What :func:`build` makes: the pieces of one run, before any restore."""

    strategy: tf.distribute.Strategy
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    schedule: keras.optimizers.schedules.LearningRateSchedule
    monitor: ClippingMonitor
    loss_fn: keras.losses.Loss
    train_ds: tf.data.Dataset
    data_position: tf.Variable
    val_ds: tf.data.Dataset
    checkpoint: TrainingCheckpoint
    train_iterator: Any = None

    def start_data(self) -> Any:
        """An iterator over the (repeated) training batches from ``data_position`` on, split across replicas.

        Call it once per :func:`build` (it is also kept as ``train_iterator``): every new iterator
        over the same ``train_ds`` is the next shuffle of the data, so an exact resume builds fresh
        objects (as a new process does).
        """
        position = int(self.data_position.numpy())
        self.train_iterator = iter(self.strategy.experimental_distribute_dataset(self.train_ds.skip(position)))
        return self.train_iterator


def make_model(hidden_units: int = 128, dropout: float = 0.0) -> keras.Model:
    """The workbook's MLP: Flatten, Dense(hidden_units, relu), optional Dropout, Dense(10) logits."""
    import keras

    layers = [keras.Input(shape=(8, 8)), keras.layers.Flatten(), keras.layers.Dense(hidden_units, activation="relu")]
    if dropout:
        layers.append(keras.layers.Dropout(dropout))
    return keras.Sequential([*layers, keras.layers.Dense(10)])


def make_schedule(config: TrainConfig) -> keras.optimizers.schedules.LearningRateSchedule:
    """Linear warmup from 0 to ``learning_rate`` over ``warmup_steps``, then cosine decay to 0 at ``steps``."""
    import keras

    warmup = int(config.warmup_steps or 0)  # never None here: TrainConfig resolves the default
    if warmup == 0:
        return keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps=config.steps)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=config.steps - warmup,
        warmup_target=config.learning_rate,
        warmup_steps=warmup,
    )


def build(config: TrainConfig) -> Objects:
    """Make the strategy, seed everything with ``config.seed``, and make a fresh model, optimizer, data and checkpoint.

    Every variable is created inside ``strategy.scope()``, so under a strategy each one is mirrored
    on every replica. The strategy comes first: ``MultiWorkerMirroredStrategy`` must exist before
    TensorFlow runs anything.
    """
    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    strategy = make_strategy(config.strategy)
    import keras
    import tensorflow as tf

    from helpers import data
    from helpers.checkpoints import TrainingCheckpoint
    from helpers.clipping import ClippingMonitor
    from helpers.seeding import set_seed

    set_seed(config.seed)
    with strategy.scope():
        model = make_model(config.hidden_units, config.dropout)
        schedule = make_schedule(config)
        optimizer = keras.optimizers.Adam(learning_rate=schedule)
        optimizer.build(model.trainable_variables)
        monitor = ClippingMonitor(config.clip_norm, name="clipping")
        data_position = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches_drawn")
    train_ds, val_ds = data.make_datasets(batch_size=config.batch_size, seed=config.seed)
    options = tf.data.Options()  # every worker builds the same pipeline and keeps its share of each batch
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    checkpoint = TrainingCheckpoint(
        RunFolder(config.run_dir).checkpoints,
        model=model,
        optimizer=optimizer,
        max_to_keep=config.keep_checkpoints,
        monitor=monitor,
        data_position=data_position,
    )
    return Objects(
        strategy=strategy,
        model=model,
        optimizer=optimizer,
        schedule=schedule,
        monitor=monitor,
        # Per-example losses: each replica averages over the *global* batch (tf.nn.compute_average_loss).
        loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none"),
        train_ds=train_ds.repeat().with_options(options),
        data_position=data_position,
        val_ds=val_ds,
        checkpoint=checkpoint,
    )


def make_train_step(objects: Objects) -> Callable[[Any], tuple[Any, Any]]:
    """One update from the next batch of ``iterator``; returns (loss, pre-clip norm). Trace it inside a ``tf.function``.

    Each replica computes the gradient of its share of the batch, with the loss averaged over the
    global batch; ``strategy.reduce(SUM)`` adds them up across replicas (the all-reduce), so the
    clipping and the update see the gradient of the whole batch, as on a single device. Without a
    strategy ``strategy.run`` just calls the function and the reduce returns its input.
    :func:`make_train_loop` runs it many times per call.
    """
    import tensorflow as tf

    strategy, model, optimizer = objects.strategy, objects.model, objects.optimizer
    monitor, loss_fn, data_position = objects.monitor, objects.loss_fn, objects.data_position

    def replica_gradients(images, labels):
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(labels, logits))  # sum over my examples / global batch
        return loss, tape.gradient(loss, model.trainable_variables)

    def train_step(iterator):
        images, labels = next(iterator)
        data_position.assign_add(1)  # batches drawn: where a resume continues in the data
        per_replica_loss, per_replica_gradients = strategy.run(replica_gradients, args=(images, labels))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)
        gradients = [strategy.reduce(tf.distribute.ReduceOp.SUM, gradient, axis=None) for gradient in per_replica_gradients]
        clipped, global_norm = monitor(gradients)  # clip the whole batch's gradient by global norm, count it
        if tf.math.is_finite(global_norm):  # AutoGraph: a tf.cond; a NaN/inf step is skipped
            optimizer.apply_gradients(zip(clipped, model.trainable_variables, strict=True))  # global step += 1
        return loss, global_norm

    return train_step


def make_train_loop(objects: Objects, log_every: int, writer: Any) -> Any:
    """A ``tf.function`` ``train_until(iterator, until)``: updates until the global step is ``until``; returns the last update's loss.

    One call runs many updates inside TensorFlow (a ``tf.while_loop``), so Python's cost is paid
    once per call, not once per step (what Keras calls ``steps_per_execution``). Everything keyed
    on the step stays exact: every ``log_every`` steps the loss, learning rate and clipping
    scalars are written from inside the loop, and the caller picks ``until`` so that calls end
    where it validates, saves or stops. A skipped update (non-finite gradient norm) does not move
    the step, so the loop draws the next batch; it gives up once the monitor counted
    :data:`MAX_NON_FINITE_STEPS` of them. ``until`` is a tensor: a new value does not retrace.
    """
    import tensorflow as tf

    optimizer, monitor, schedule = objects.optimizer, objects.monitor, objects.schedule
    train_step = make_train_step(objects)

    @tf.function  # a function of its own: its graph starts at the root name scope, so the tags stay "loss", not "while/cond/loss"
    def write_scalars(step, loss):
        with writer.as_default(step=step):
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("learning_rate", schedule(step - 1))
            monitor.write_summaries(step)

    @tf.function
    def train_until(iterator, until):
        last_loss = tf.constant(float("nan"))
        # `&`, not `and`: AutoGraph turns `and` between tensors into a tf.cond (Python's `and` is lazy), one more branch per step
        while (optimizer.iterations < until) & (monitor.non_finite_steps < MAX_NON_FINITE_STEPS):
            loss, global_norm = train_step(iterator)
            applied = tf.math.is_finite(global_norm)  # a skipped update leaves the step where it was
            last_loss = tf.where(applied, loss, last_loss)
            step = tf.convert_to_tensor(optimizer.iterations)  # its value now (a Keras variable is not a tf.function argument)
            if applied & (step % log_every == 0):
                write_scalars(step, loss)
        return last_loss

    return train_until


def evaluate(model: keras.Model, dataset: tf.data.Dataset, loss_fn: keras.losses.Loss) -> tuple[float, int, int]:
    """Mean loss over examples, number correct, number of examples (inference mode; ``loss_fn`` per example)."""
    import numpy as np

    total_loss, correct, count = 0.0, 0, 0
    for images, labels in dataset:
        logits = model(images, training=False)
        total_loss += float(np.sum(loss_fn(labels, logits).numpy(), dtype=np.float64))
        correct += int(np.sum(np.argmax(logits.numpy(), axis=1) == labels.numpy()))
        count += int(labels.shape[0])
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


# -- one run ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` did and where it ended (the chief also writes it to ``result.json``)."""

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
    strategy: str
    replicas: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Interrupted(Exception):
    """The run saved a checkpoint at ``step`` and stopped because of ``signal_number`` (SIGINT or SIGTERM)."""

    def __init__(self, signal_number: int, step: int, saved: Path | None) -> None:
        self.signal_number = int(signal_number)
        self.step = step
        self.saved = saved
        where = _shown(saved) if saved else "a temporary folder (the chief keeps the checkpoints)"
        super().__init__(f"stopped by {signal.Signals(self.signal_number).name} at step {step}; saved {where}")


def restore(objects: Objects, config: TrainConfig) -> RestoreInfo:
    """Restore the latest checkpoint of ``config.run_dir`` into ``objects`` and check it was written by this config.

    Raises :class:`helpers.checkpoints.CheckpointMismatchError` if the checkpoint does not fit the
    objects, or if ``config.json`` records other trajectory values.
    """
    from helpers.checkpoints import CheckpointMismatchError

    info = objects.checkpoint.restore()
    if info.restored:
        differences = RunFolder(config.run_dir).config_differences(config)
        if differences:
            raise CheckpointMismatchError(f"the checkpoints in {_shown(config.run_dir)} were written with another configuration ({'; '.join(differences)})")
    return info


class _Saver:
    """Saves a checkpoint at the current step: the chief into the run folder, any other worker into a temporary folder.

    Under ``MultiWorkerMirroredStrategy`` every worker must take part in a save; only the chief's
    copy is kept (the files of the others are deleted by :meth:`close`).
    """

    def __init__(self, objects: Objects, is_chief: bool) -> None:
        self.objects = objects
        self.is_chief = is_chief
        self.scratch = None if is_chief else Path(tempfile.mkdtemp(prefix="helpers-train-worker-"))
        self.last_saved = -1

    def step(self) -> int:
        return int(self.objects.optimizer.iterations.numpy())

    def save(self) -> Path | None:
        saved: Path | None = None
        if self.scratch is None:  # the chief
            saved = self.objects.checkpoint.save()
        else:
            self.objects.checkpoint.checkpoint.write(str(self.scratch / checkpoint_name(self.step())))
        self.last_saved = self.step()
        return saved

    def save_current(self) -> Path | None:
        """Save unless this step is saved already; the chief's checkpoint path (None on another worker)."""
        if self.last_saved != self.step():
            return self.save()
        return self.objects.checkpoint.directory / checkpoint_name(self.step()) if self.is_chief else None

    def close(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


@contextlib.contextmanager
def _stop_requests(objects: Objects, saver: _Saver, role: WorkerRole | None) -> Iterator[Callable[[], None]]:
    """Turn SIGINT and SIGTERM into a save at the current step and :class:`Interrupted`.

    Yields ``check()``, to call after each call of the loop function. One process: the handlers only note the signal
    and ``check`` saves and raises. Several workers: TensorFlow's ``PreemptionCheckpointHandler``
    agrees on a step with every worker, all of them save there (through ``saver``) and raise;
    SIGINT is passed on to it as SIGTERM. The previous handlers come back on exit.
    """
    received: list[int] = []
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    scratch = None
    try:
        if role is None:
            for number in previous:
                signal.signal(number, lambda number, _frame: received.append(number))

            def check() -> None:
                if received:
                    raise Interrupted(received[0], saver.step(), saver.save_current())

            yield check
        else:
            import tensorflow as tf

            saved_paths: list[Path | None] = []

            def save_for_handler() -> None:
                saved_paths.append(saver.save_current())

            def stop_after_save() -> None:
                raise Interrupted(received[0] if received else signal.SIGTERM, saver.step(), saved_paths[-1])

            # The handler coordinates the workers; saving is ours (save_fn), so its own
            # CheckpointManager never writes: it gets an empty checkpoint in a scratch folder.
            scratch = tempfile.mkdtemp(prefix="helpers-train-preemption-")
            handler = tf.distribute.experimental.PreemptionCheckpointHandler(
                objects.strategy.cluster_resolver,
                tf.train.Checkpoint(),
                checkpoint_dir=os.path.join(scratch, "unused"),
                termination_config=tf.distribute.experimental.TerminationConfig(save_fn=save_for_handler, exit_fn=stop_after_save),
            )

            def forward_sigint(number: int, _frame: FrameType | None) -> None:
                received.append(number)
                signal.raise_signal(signal.SIGTERM)  # the handler listens for SIGTERM

            def note_sigterm(number: int, frame: FrameType | None) -> None:
                received.append(number)
                if callable(tensorflow_handler):
                    tensorflow_handler(number, frame)

            tensorflow_handler = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, note_sigterm)
            signal.signal(signal.SIGINT, forward_sigint)
            yield handler.save_checkpoint_if_preempted
    finally:
        for number, handler_before in previous.items():
            signal.signal(number, handler_before)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def train(config: TrainConfig, *, crash_at_step: int | None = None, pause_per_step: float = 0.0, handle_signals: bool = False, out: TextIO = sys.stdout) -> TrainResult:
    """Run (or resume) ``config`` to ``config.steps`` updates; the chief writes ``result.json``.

    Restores the latest checkpoint in the run folder (the message is printed); a checkpoint of
    another model or configuration raises :class:`helpers.checkpoints.CheckpointMismatchError`, a
    folder that cannot hold a run :class:`RunFolderError`, both before anything is written.
    ``crash_at_step`` ends the process with ``os._exit`` right after that update (its scalars are
    written, in the loop function), before it is validated or saved (a simulated crash).
    ``pause_per_step`` sleeps after each update, one update per call, so a demo can stop the process
    mid-run. With ``handle_signals`` (the command), SIGINT and SIGTERM save a checkpoint at the step
    the call in progress ends at and raise :class:`Interrupted`. Progress is one line per
    evaluation on ``out``.
    """
    folder = RunFolder(config.run_dir)
    folder.check()
    role = worker_role(os.environ.get("TF_CONFIG")) if config.strategy == "multiworker" else None
    is_chief = role is None or role.is_chief
    objects = build(config)
    info = restore(objects, config)
    print(info.message, file=out, flush=True)
    train_iterator = objects.start_data()  # after the restore: from the saved data position
    if is_chief:
        folder.write_config(config)
    saver = _Saver(objects, is_chief)
    saver.last_saved = info.step if info.restored else -1
    stop_requests = _stop_requests(objects, saver, role) if handle_signals else contextlib.nullcontext(lambda: None)
    try:
        with _Writers(folder, is_chief) as writers, stop_requests as check_stop:
            return run_loop(
                config, objects, train_iterator, saver, writers, info,
                check_stop=check_stop, crash_at_step=crash_at_step, pause_per_step=pause_per_step, out=out,
            )
    finally:
        saver.close()


class _Writers:
    """The train and validation summary writers; a worker that is not the chief writes no logs."""

    def __init__(self, folder: RunFolder, is_chief: bool) -> None:
        import tensorflow as tf

        if is_chief:
            self.train = tf.summary.create_file_writer(str(folder.train_logs))
            self.validation = tf.summary.create_file_writer(str(folder.validation_logs))
        else:
            self.train = self.validation = tf.summary.create_noop_writer()

    def __enter__(self) -> _Writers:
        return self

    def __exit__(self, *_: object) -> None:
        self.train.close()
        self.validation.close()


def call_end(step: int, config: TrainConfig, *, crash_at_step: int | None = None, one_step: bool = False) -> int:
    """The global step the next call of the loop function runs to: ``steps_per_call`` on, or the first step before that where Python has work.

    That is the next evaluation, checkpoint, ``crash_at_step`` or ``config.steps``; ``one_step``
    (demos that pause after each update) makes it ``step + 1``.
    """
    ends = [config.steps, step + (1 if one_step else config.steps_per_call)]
    ends += [(step // every + 1) * every for every in (config.eval_every, config.checkpoint_every)]
    if crash_at_step is not None and crash_at_step > step:
        ends.append(crash_at_step)
    return min(ends)


def run_loop(
    config: TrainConfig,
    objects: Objects,
    train_iterator: Any,
    saver: _Saver,
    writers: _Writers,
    info: RestoreInfo,
    *,
    check_stop: Callable[[], None],
    crash_at_step: int | None,
    pause_per_step: float,
    out: Any,
) -> TrainResult:
    """The loop :func:`train` runs: updates in calls of up to ``steps_per_call``, then validate, save, serve a stop request; at the end the final save and report.

    Everything is keyed on the global step. A call of the loop function ends at every step where
    Python has work to do (an evaluation, a checkpoint, ``crash_at_step``, the last step), so
    checkpoints land on the same steps whatever ``steps_per_call`` is; ``check_stop`` runs after
    every call (it saves and raises :class:`Interrupted` once a signal came), so a stop waits for
    at most one call. ``pause_per_step`` makes every call one step.
    """
    import tensorflow as tf

    model, optimizer, monitor, schedule = objects.model, objects.optimizer, objects.monitor, objects.schedule
    train_until = make_train_loop(objects, config.log_every, writers.train)
    start_step = step = int(optimizer.iterations.numpy())
    started = time.monotonic()
    loss_value: float | None = None
    last_evaluated = -1

    def validate(at_step: int) -> tuple[float, int, int]:
        val_loss, correct, count = evaluate(model, objects.val_ds, objects.loss_fn)
        with writers.validation.as_default():
            tf.summary.scalar("loss", val_loss, step=at_step)
            tf.summary.scalar("accuracy", correct / count, step=at_step)
        shown = "n/a" if loss_value is None else f"{loss_value:.4f}"
        rate = float(schedule(at_step - 1))
        speed = (at_step - start_step) / max(time.monotonic() - started, 1e-9)
        print(
            f"step {at_step}/{config.steps}: loss {shown}, lr {rate:.6f}, val_loss {val_loss:.4f}, "
            f"val_accuracy {correct / count:.4f} | {speed:.0f} steps/s",
            file=out,
            flush=True,
        )
        return val_loss, correct, count

    while step < config.steps:
        until = call_end(step, config, crash_at_step=crash_at_step, one_step=bool(pause_per_step))
        loss = train_until(train_iterator, tf.constant(until, dtype=tf.int64))
        if int(monitor.non_finite_steps.numpy()) >= MAX_NON_FINITE_STEPS:
            raise FloatingPointError(
                f"{MAX_NON_FINITE_STEPS} updates skipped for non-finite gradients "
                f"(global step {int(optimizer.iterations.numpy())}, {int(objects.data_position.numpy())} batches drawn); stopping"
            )
        new_step = int(optimizer.iterations.numpy())
        if new_step != step:
            step, loss_value = new_step, float(loss)
            if pause_per_step:
                time.sleep(pause_per_step)
            if crash_at_step is not None and step == crash_at_step:
                out.flush()
                os._exit(CRASH_EXIT_CODE)  # no save, no cleanup, writers never closed: like a kill
            if step % config.eval_every == 0:
                validate(step)
                last_evaluated = step
            if step % config.checkpoint_every == 0:
                saver.save()
        check_stop()  # after a call with skipped updates too: a stop request is served at the end of each call
    if saver.last_saved != step:
        saver.save()
    if last_evaluated == step or step == start_step:  # evaluated already, or nothing to do: no log written again
        val_loss, correct, count = evaluate(model, objects.val_ds, objects.loss_fn)
    else:
        val_loss, correct, count = validate(step)
    seconds = time.monotonic() - started
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
        clipped_steps=int(report["clipped_steps"]),
        non_finite_steps=int(report["non_finite_steps"]),
        strategy=config.strategy,
        replicas=int(objects.strategy.num_replicas_in_sync),
        seconds=round(seconds, 3),
    )
    folder = RunFolder(config.run_dir)
    if saver.is_chief:
        folder.write_result(result)
    print(f"finished at step {step} ({result.steps_run} steps in this process)", file=out)
    print(f"val_accuracy {result.val_accuracy:.4f} ({correct}/{count})", file=out)
    print(f"fingerprint {result.fingerprint}", file=out)
    print(f"time {seconds:.1f} s, {result.steps_run / max(seconds, 1e-9):.0f} steps/s on {result.replicas} replica(s)", file=out)
    if saver.is_chief:
        print(f"checkpoints in {_shown(folder.checkpoints)}, logs in {_shown(folder.logs)}", file=out)
    out.flush()
    return result


# -- command line ----------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse, with errors on one line (usage stays available through --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT_CODE, f"{self.prog}: error: {message} (see --help)\n")


def make_parser() -> argparse.ArgumentParser:
    """The command's options: ``--run-dir``, one option per :class:`TrainConfig` field (same default), and the run controls."""
    parser = _Parser(
        prog="python -m helpers.train",
        description="Train the workbook's MLP on the bundled digits; rerun the same command to resume after a crash or Ctrl-C.",
    )
    parser.add_argument("--run-dir", type=Path, required=True, help="checkpoints, logs and result.json go here")
    for entry in config_options():
        kind = type(entry.default) if entry.default is not None else int
        help_text = f"{entry.metadata['help']} (default: {default_text(entry)})".replace("%", "%%")  # argparse formats help with %
        parser.add_argument(option_name(entry.name), type=kind, default=entry.default, choices=entry.metadata["choices"], help=help_text)
    parser.add_argument("--fresh", action="store_true", help="empty the run folder first")
    parser.add_argument("--crash-at-step", type=int, default=None, help="exit abruptly after this update (testing)")
    parser.add_argument("--pause-per-step", type=float, default=0.0, help="seconds to sleep after each update (demos)")
    return parser


def config_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TrainConfig:
    """The config the options describe; a value :class:`TrainConfig` refuses becomes an error naming the option."""
    values = {entry.name: getattr(args, entry.name) for entry in dataclasses.fields(TrainConfig)}
    try:
        return TrainConfig(**values)
    except ConfigError as error:
        parser.error(f"argument {option_name(error.field)}: {error}")
        raise  # unreachable: parser.error exits


def _fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return status


class _StoppedEarly(Exception):
    """SIGINT or SIGTERM while the training loop was not running (starting up, or finishing): nothing to save for it."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_number)
        self.signal_number = signal_number


def _stop_early(signal_number: int, _frame: object) -> None:
    raise _StoppedEarly(signal_number)


def _folder_hint(error: RunFolderError) -> str:
    remedy = "move it away, or use --fresh" if error.emptying_helps else "give --run-dir a new folder or one an earlier run wrote"
    return f"{error}: {remedy}"


def main(argv: Sequence[str] | None = None) -> int:
    """The command. Every refusal is one line on stderr and a non-zero status, before anything is written.

    From the start, SIGINT and SIGTERM end the command with one line and status 128 + the signal's
    number; once the loop runs they save a checkpoint first (:func:`train` with ``handle_signals``).
    """
    previous = {number: signal.signal(number, _stop_early) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _main(argv)
    except _StoppedEarly as stop:
        name = signal.Signals(stop.signal_number).name
        message = f"stopped by {name} outside the training loop (no checkpoint saved for it); run the same command again to resume or start"
        return _fail(message, interrupt_exit_code(stop.signal_number))
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    config = config_from_args(parser, args)
    if not math.isfinite(args.pause_per_step) or args.pause_per_step < 0:
        parser.error("argument --pause-per-step: must be a number >= 0")
    if args.crash_at_step is not None and not 0 < args.crash_at_step <= config.steps:
        parser.error(f"argument --crash-at-step: must be in [1, --steps={config.steps}]")
    folder = RunFolder(config.run_dir)
    if config.strategy == "multiworker":
        if args.fresh:
            parser.error("argument --fresh: not with --strategy multiworker (every worker would empty the folder); empty it before starting the workers")
        try:
            worker_role(os.environ.get("TF_CONFIG"))
        except ClusterConfigError as error:
            return _fail(f"{error} (see --help)", USAGE_EXIT_CODE)
    try:
        if args.fresh:
            folder.empty()
        folder.check()
    except RunFolderError as error:
        return _fail(_folder_hint(error), USAGE_EXIT_CODE)
    same_run_hint = "use the same options, --fresh, or another --run-dir"
    differences = folder.config_differences(config)
    if differences and folder.has_checkpoints():
        # train() would refuse this run whatever the checkpoints hold: say so before importing TensorFlow
        return _fail(
            f"CheckpointMismatchError: the checkpoints in {_shown(config.run_dir)} were written with another configuration "
            f"({'; '.join(differences)}): {same_run_hint}",
            MISMATCH_EXIT_CODE,
        )

    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    from helpers.checkpoints import CheckpointError

    try:
        train(config, crash_at_step=args.crash_at_step, pause_per_step=args.pause_per_step, handle_signals=True)
    except Interrupted as stop:
        return _fail(f"{stop}; run the same command again to resume from step {stop.step}", interrupt_exit_code(stop.signal_number))
    except CheckpointError as error:  # a mismatch, or checkpoints that are all damaged
        return _fail(f"{type(error).__name__}: {error}; {same_run_hint}", MISMATCH_EXIT_CODE)
    except FloatingPointError as error:  # the run diverged: MAX_NON_FINITE_STEPS updates skipped
        return _fail(f"{type(error).__name__}: {error}", NON_FINITE_EXIT_CODE)
    except RunFolderError as error:
        return _fail(_folder_hint(error), USAGE_EXIT_CODE)
    except (StrategyError, ClusterConfigError) as error:
        return _fail(str(error), USAGE_EXIT_CODE)
    except OSError as error:  # a folder that cannot be written, a full disk ...
        return _fail(f"{type(error).__name__}: {error}", 1)
    return 0


# -- running the command from Python (chapters 08, 09 and the tests) ---------------------------
def start(options: Sequence[str], *, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``python -m helpers.train *options`` in the repository, stdout and stderr captured as text."""
    command = [sys.executable, "-m", "helpers.train", *options]
    environment = None if env is None else {**os.environ, **env}
    return subprocess.Popen(command, cwd=repo_root(), env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@dataclass(frozen=True)
class Finished:
    """How a started command ended."""

    returncode: int
    stdout: str
    stderr: str


def finish(process: subprocess.Popen[str], *, timeout: float = 120.0) -> Finished:
    """Wait for ``process`` (killed by its id if it overruns ``timeout``, which then raises ``TimeoutError``)."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise TimeoutError(f"process {process.pid} ran over {timeout:.0f} s and was killed; its stderr ends: {stderr[-1500:]}") from None
    return Finished(process.returncode, stdout, stderr)


def signal_at_step(
    processes: Sequence[subprocess.Popen[str]],
    folder: RunFolder,
    step: int,
    *,
    signal_number: int = signal.SIGKILL,
    target: int = 0,
    delay: float = 0.0,
    timeout: float = 120.0,
) -> list[Finished]:
    """Once ``folder`` has a published checkpoint at ``step`` or later (and ``delay`` seconds more), send ``signal_number`` to ``processes[target]``; wait for all.

    Every process is stopped by its id before this returns: on a timeout, or if a process ends
    before the checkpoint appears, all of them are killed and an ``AssertionError`` or
    ``TimeoutError`` says why.
    """
    deadline = time.monotonic() + timeout
    try:
        while folder.latest_step() < step:
            for process in processes:
                if process.poll() is not None:
                    raise AssertionError(f"process {process.pid} ended (status {process.returncode}) before checkpoint {step}: {process.stderr.read()[-1500:] if process.stderr else ''}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no checkpoint at step {step} or later in {_shown(folder.checkpoints)} within {timeout:.0f} s")
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(processes[target].pid, signal_number)
        return [finish(process, timeout=max(deadline - time.monotonic(), 30.0)) for process in processes]
    finally:
        stop(processes)


def stop(processes: Iterable[subprocess.Popen[str]]) -> None:
    """Kill (SIGKILL, by process id) and reap every process still running."""
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.communicate()


def start_workers(options: Sequence[str], workers: int = 2) -> list[subprocess.Popen[str]]:
    """Start ``workers`` processes of the command with ``--strategy multiworker``, each with its own ``TF_CONFIG`` (worker 0 first)."""
    return [start([*options, "--strategy", "multiworker"], env={"TF_CONFIG": tf_config}) for tf_config in local_tf_configs(workers)]


if __name__ == "__main__":
    sys.exit(main())
