"""The ``tf.distribute`` strategy a run asks for, and the CPU split that gives ``MirroredStrategy`` two replicas."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from helpers.environment import quiet_tensorflow_logs

quiet_tensorflow_logs()

import tensorflow as tf  # noqa: E402  (after quiet_tensorflow_logs)

from helpers.train.cluster import PeerLostError, WorkerRole, lost_worker  # noqa: E402
from helpers.train.config import MIRRORED_REPLICAS, STRATEGIES  # noqa: E402


class StrategyError(RuntimeError):
    """The requested ``tf.distribute`` strategy cannot be made in this process."""


#: What TensorFlow raises in a worker whose peer went away: a collective op aborted ("Connection reset by
#: peer", or the coordination service's "tasks are unhealthy (stopped sending heartbeats)").
PEER_LOST_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError)


@contextlib.contextmanager
def peer_losses_raised(role: WorkerRole | None) -> Iterator[None]:
    """For a worker of a cluster (``role``), turn TensorFlow's error for a lost peer into :class:`PeerLostError`.

    A run of one process (``role`` None) is left alone: there the same errors mean something else.
    """
    if role is None:
        yield
        return
    try:
        yield
    except PEER_LOST_ERRORS as error:
        raise PeerLostError(role, lost_worker(role, str(error)), f"TensorFlow: {type(error).__name__}") from error


def split_cpu(devices: int = MIRRORED_REPLICAS) -> None:
    """Make the CPU show up as ``devices`` logical devices, so ``MirroredStrategy`` has replicas to mirror.

    TensorFlow fixes its devices the first time anything uses them; after that a different split
    raises :class:`StrategyError` (the same split again is fine). Call this before any TensorFlow
    op runs in the process.
    """
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


def make_strategy(name: str, role: WorkerRole | None = None) -> tf.distribute.Strategy:
    """The ``tf.distribute`` strategy ``--strategy name`` asks for (see :data:`helpers.train.config.STRATEGIES`).

    ``multiworker`` needs this process's ``role`` (:func:`helpers.train.cluster.role_of`: read from
    ``TF_CONFIG`` before TensorFlow reads it, so a bad value is a clear error, not TensorFlow's).
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        split_cpu(MIRRORED_REPLICAS)
        return tf.distribute.MirroredStrategy([f"/cpu:{index}" for index in range(MIRRORED_REPLICAS)])
    if name == "multiworker":
        if role is None:
            raise StrategyError("the multiworker strategy needs this worker's role (helpers.train.cluster.role_of reads TF_CONFIG)")
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise StrategyError(f"strategy must be one of {', '.join(STRATEGIES)}, got {name!r}")
