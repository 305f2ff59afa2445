"""Ctrl-C and SIGTERM during training: save a checkpoint at the step reached, then stop with :class:`Interrupted`.

One process notes the signal and saves when the call in progress returns. Several workers hand the
signal to TensorFlow's ``PreemptionCheckpointHandler``, which agrees on one step with every worker;
all of them save there and stop.
"""

from __future__ import annotations

import contextlib
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from helpers.failures import CommandError
from helpers.train.cluster import scratch_prefix
from helpers.train.run_folder import shown

if TYPE_CHECKING:  # pragma: no cover
    from helpers.train.saver import Saver

#: The signals a run serves by saving first.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(CommandError):
    """The run saved a checkpoint at ``step`` and stopped because of ``signal_number`` (SIGINT or SIGTERM); status 128 + its number."""

    exit_status = 128 + signal.SIGINT
    meaning = "stopped by Ctrl-C or SIGTERM, after a save"

    def __init__(self, signal_number: int, step: int, saved: Path | None) -> None:
        self.signal_number = int(signal_number)
        self.step = step
        self.saved = saved
        where = shown(saved) if saved else "a temporary folder (the chief keeps the checkpoints)"
        super().__init__(f"stopped by {signal.Signals(self.signal_number).name} at step {step}; saved {where}")

    @classmethod
    def status_label(cls) -> str:
        return " or ".join(str(interrupt_exit_code(number)) for number in STOP_SIGNALS)

    def status(self) -> int:
        return interrupt_exit_code(self.signal_number)

    def line(self) -> str:
        return f"{self}; run the same command again to resume from step {self.step}"


def interrupt_exit_code(signal_number: int) -> int:
    """The command's exit status after it saved and stopped on a signal: 128 + its number (the shell's rule)."""
    return 128 + int(signal_number)


@contextlib.contextmanager
def stop_requests(saver: Saver, cluster_resolver: object | None) -> Iterator[Callable[[], None]]:
    """Turn SIGINT and SIGTERM into a save at the current step and :class:`Interrupted`.

    Yields ``check()``, to call after each call of ``train_until``. ``cluster_resolver`` is the
    strategy's, for a worker of a cluster; None for one process. A second signal while the first
    one's save runs is noted and changes nothing. On a normal exit the previous handlers come back;
    on :class:`Interrupted` both signals are ignored instead, so that a second one cannot turn a
    stop that saved into a kill or a second error while the run closes its logs and the command
    exits (:func:`helpers.train.main` puts its caller's handlers back).
    """
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    stopping = False
    try:
        with _one_process(saver) if cluster_resolver is None else _cluster(saver, cluster_resolver) as check:
            yield check
    except Interrupted:
        stopping = True
        raise
    finally:
        if stopping:
            ignore_stop_signals()
        else:
            for number, handler in previous.items():
                signal.signal(number, handler)


def ignore_stop_signals() -> None:
    """Ignore SIGINT and SIGTERM from now on: the command calls it once it is exiting (a signal then has nothing left to stop)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)


@contextlib.contextmanager
def _one_process(saver: Saver) -> Iterator[Callable[[], None]]:
    """The handlers only note the signal; ``check`` saves and raises."""
    received: list[int] = []
    for number in STOP_SIGNALS:
        signal.signal(number, lambda number, _frame: received.append(number))

    def check() -> None:
        if received:
            raise Interrupted(received[0], saver.step, saver.save_current())

    yield check


@contextlib.contextmanager
def _cluster(saver: Saver, cluster_resolver: object) -> Iterator[Callable[[], None]]:
    """TensorFlow's handler coordinates the workers and calls our save; SIGINT is passed on to it as SIGTERM."""
    import tensorflow as tf  # a worker's process has TensorFlow loaded already: the strategy exists

    received: list[int] = []
    saved_paths: list[Path | None] = []

    def stop_after_save() -> None:
        raise Interrupted(received[0] if received else signal.SIGTERM, saver.step, saved_paths[-1])

    # Saving is ours (save_fn), so the handler's own CheckpointManager never writes: it gets an empty
    # checkpoint in a scratch folder.
    with tempfile.TemporaryDirectory(prefix=scratch_prefix("preemption"), ignore_cleanup_errors=True) as scratch:
        quiet_peer_watcher()
        handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            cluster_resolver,
            tf.train.Checkpoint(),
            checkpoint_dir=str(Path(scratch) / "unused"),
            termination_config=tf.distribute.experimental.TerminationConfig(
                save_fn=lambda: saved_paths.append(saver.save_current()), exit_fn=stop_after_save
            ),
        )
        tensorflow_handler = signal.getsignal(signal.SIGTERM)

        def note_sigterm(number: int, frame: FrameType | None) -> None:
            received.append(number)
            if callable(tensorflow_handler):
                tensorflow_handler(number, frame)

        def forward_sigint(number: int, _frame: FrameType | None) -> None:
            received.append(number)
            signal.raise_signal(signal.SIGTERM)  # the handler listens for SIGTERM

        signal.signal(signal.SIGTERM, note_sigterm)
        signal.signal(signal.SIGINT, forward_sigint)
        yield handler.save_checkpoint_if_preempted


#: The name TensorFlow gives the thread of ``PreemptionCheckpointHandler`` that waits for a peer's preemption notice.
PEER_WATCHER_THREAD = "PeerTerminationWatcher-"


def quiet_peer_watcher() -> None:
    """Keep TensorFlow's peer watcher thread from printing a traceback when the chief is killed.

    ``PreemptionCheckpointHandler`` starts a daemon thread (:data:`PEER_WATCHER_THREAD`) that blocks on
    the coordination service the chief hosts. When the chief is killed, that call fails with
    ``UnavailableError`` in the thread, and Python's ``threading.excepthook`` prints the traceback, while
    the main thread's training call fails too and says in one line what happened
    (:class:`helpers.train.cluster.PeerLostError`). TensorFlow offers no way to stop the thread from
    outside (it stops it from the handler's ``__del__``, which cannot interrupt a call already failing),
    so this hook, installed once for the process, drops TensorFlow's errors of that thread only; every
    other exception, in any thread, goes to the hook that was there before. It stays installed: the
    thread can fail after the run has unwound, while the command exits.
    """
    previous = threading.excepthook
    if getattr(previous, "quiets_peer_watcher", False):
        return
    import tensorflow as tf  # loaded already: a handler is being made

    def excepthook(args: threading.ExceptHookArgs) -> None:
        from_watcher = args.thread is not None and args.thread.name.startswith(PEER_WATCHER_THREAD)
        if not (from_watcher and isinstance(args.exc_value, tf.errors.OpError)):
            previous(args)

    excepthook.quiets_peer_watcher = True  # type: ignore[attr-defined]
    threading.excepthook = excepthook
