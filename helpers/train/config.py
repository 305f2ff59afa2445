"""What defines a run: :class:`TrainConfig`, checked field by field, and the command-line options it makes.

TensorFlow-free: the command checks its options before anything heavy is imported.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from helpers.paths import display_path
from helpers.seeding import check_seed

#: The ``--strategy`` choices: no distribution, two replicas on this machine's CPU, or one worker
#: process of a cluster described by the ``TF_CONFIG`` environment variable.
STRATEGIES = ("default", "mirrored", "multiworker")
#: How many replicas ``--strategy mirrored`` runs: two logical devices carved out of the CPU.
MIRRORED_REPLICAS = 2
#: The default warmup is 10% of the run, at most this many steps, so it fits any ``steps``.
MAX_DEFAULT_WARMUP_STEPS = 20


class ConfigError(ValueError):
    """A :class:`TrainConfig` value is refused; ``field`` names it, the message says what is expected."""

    def __init__(self, field_name: str, expected: str) -> None:
        super().__init__(f"{field_name} must be {expected}")
        self.field = field_name


def _option(default: Any, description: str, *, default_text: str | None = None, choices: Sequence[str] | None = None) -> Any:
    """A config field that is also a command-line option (see :func:`helpers.train.cli.make_parser`)."""
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
    #: Config fields that count something and must be positive ints.
    COUNT_FIELDS: ClassVar[tuple[str, ...]] = (
        "steps", "batch_size", "hidden_units", "checkpoint_every", "log_every", "eval_every", "keep_checkpoints", "steps_per_call",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_dir", Path(self.run_dir))
        for name in self.COUNT_FIELDS:
            _require(name, is_int(getattr(self, name)) and getattr(self, name) > 0, "a positive int")
        try:
            check_seed(self.seed)
        except ValueError:
            raise ConfigError("seed", "an int in [0, 2**32)") from None
        warmup = min(MAX_DEFAULT_WARMUP_STEPS, self.steps // 10) if self.warmup_steps is None else self.warmup_steps
        object.__setattr__(self, "warmup_steps", warmup)
        _require("warmup_steps", is_int(warmup) and 0 <= warmup < self.steps, f"an int in [0, steps={self.steps})")
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
        values["run_dir"] = display_path(self.run_dir, keep_outside=True)
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


def is_int(value: object) -> bool:
    """An int that is not a bool (``True`` is an int to Python, not a count to a reader)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require(name: str, ok: bool, expected: str) -> None:
    if not ok:
        raise ConfigError(name, expected)
