"""A cluster of worker processes: reading ``TF_CONFIG`` for ``--strategy multiworker``, writing one for local workers,
the line for a lost worker, and the temporary folders a worker keeps (and a killed one leaves behind).

TensorFlow-free: the command refuses a bad ``TF_CONFIG`` before TensorFlow reads it, and removes a
killed worker's temporary folders before TensorFlow loads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from helpers.failures import CommandError, UsageError
from helpers.ports import LOOPBACK, free_port
from helpers.processes import dead_owners, owned_prefix
from helpers.train.config import TrainConfig, is_int

#: The environment variable TensorFlow's cluster resolver reads.
TF_CONFIG = "TF_CONFIG"


class ClusterConfigError(UsageError):
    """``TF_CONFIG`` is missing or does not describe this process as a worker of a cluster."""

    meaning = "a TF_CONFIG that does not describe this process as a worker"

    def line(self) -> str:
        return f"{self} (see --help)"


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


#: Start of every temporary folder a worker makes: ``helpers-train-<kind>-<owner's pid>-<random>`` (:func:`scratch_prefix`).
SCRATCH_START = "helpers-train-"


def scratch_prefix(kind: str) -> str:
    """The name prefix of a temporary folder of this process (``tempfile``'s ``prefix``): its kind and this process's pid.

    ``kind`` is ``"worker"`` (another worker's checkpoint copies) or ``"preemption"`` (TensorFlow's
    preemption handler's unused folder). The pid lets a later start tell a killed owner's folder
    (:func:`remove_dead_owners_scratch`) from a running one's.
    """
    if kind not in ("worker", "preemption"):
        raise ValueError(f"kind must be 'worker' or 'preemption', got {kind!r}")
    return owned_prefix(f"{SCRATCH_START}{kind}-")


def remove_dead_owners_scratch(folder: Path | None = None) -> list[Path]:
    """Remove the temporary folders that killed workers left in ``folder`` (the temporary directory); the ones removed.

    A worker deletes its folders when it ends, unless it is killed (``SIGKILL``). Only this user's
    folders named by :func:`scratch_prefix` are looked at, and a folder whose owner pid runs is kept.
    """
    removed = []
    for entry in dead_owners(Path(tempfile.gettempdir()) if folder is None else folder, re.escape(SCRATCH_START) + "(?:preemption|worker)-"):
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


class PeerLostError(CommandError, RuntimeError):
    """Another worker of the cluster stopped or was killed while this one trained: the cluster cannot go on."""

    exit_status = 8
    meaning = "another worker of the cluster stopped or was killed"

    def __init__(self, role: WorkerRole, lost: int | None, reason: str) -> None:
        self.role, self.lost = role, lost
        who = "another worker of the cluster" if lost is None else f"worker {lost} of {role.workers}{' (the chief)' if lost == 0 else ''}"
        super().__init__(f"{who} stopped or was killed ({reason}), so worker {role.index} stopped too")

    def line(self) -> str:
        return f"{self}; {RESTART_CLUSTER_HINT}"


#: What a worker whose peer was lost suggests.
RESTART_CLUSTER_HINT = "start every worker again with the same command: it resumes from the last checkpoint"


def lost_worker(role: WorkerRole, message: str) -> int | None:
    """Which other worker an error message of the cluster names (``/job:worker/replica:0/task:1``), None if not one.

    In a cluster of two, the lost worker can only be the other one.
    """
    named = {int(index) for index in re.findall(r"/job:worker/(?:replica:[0-9]+/)?task:([0-9]+)", message)} - {role.index}
    others = named or set(range(role.workers)) - {role.index}
    return others.pop() if len(others) == 1 else None
