"""What a run reports: :class:`TrainResult` (also ``result.json``) and the fingerprint that proves an exact resume.

TensorFlow-free: a fingerprint reads any object with a ``numpy()`` method.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainResult:
    """What :func:`helpers.train.train` did and where it ended (the chief also writes it to ``result.json``)."""

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


def fingerprint(variables: Iterable[Any]) -> str:
    """sha256 over the bytes of each variable, in order (with dtype and shape, so layouts differ)."""
    digest = hashlib.sha256()
    for variable in variables:
        value = variable.numpy()
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def state_fingerprint(parts: Any) -> str:
    """:func:`fingerprint` of every model variable then every optimizer variable of a run's parts.

    Two runs ended in the same state exactly when their fingerprints are equal.
    """
    return fingerprint([*parts.model.variables, *parts.optimizer.variables])
