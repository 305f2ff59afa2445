"""A cluster of worker processes: reading ``TF_CONFIG`` for ``--strategy multiworker``, and writing one for local workers.

TensorFlow-free: the command refuses a bad ``TF_CONFIG`` before TensorFlow reads it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from helpers.ports import LOOPBACK, free_port
from helpers.train.config import TrainConfig, is_int

#: The environment variable TensorFlow's cluster resolver reads.
TF_CONFIG = "TF_CONFIG"


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
    if task.get("type") != "worker" or not is_int(index) or not 0 <= index < len(workers):
        raise ClusterConfigError(f"TF_CONFIG's task must be {{'type': 'worker', 'index': 0..{len(workers) - 1}}}, got {task}")
    return WorkerRole(index=index, workers=len(workers))


def role_of(config: TrainConfig) -> WorkerRole | None:
    """This process's role for ``config``: read from ``TF_CONFIG`` with ``--strategy multiworker``, None otherwise."""
    return worker_role(os.environ.get(TF_CONFIG)) if config.strategy == "multiworker" else None


def local_tf_configs(workers: int) -> list[str]:
    """One ``TF_CONFIG`` value per worker of a cluster of ``workers`` processes on 127.0.0.1, each on a free port."""
    if not is_int(workers) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    cluster = {"worker": [f"{LOOPBACK}:{free_port()}" for _ in range(workers)]}
    return [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}) for index in range(workers)]
