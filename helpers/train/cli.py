"""``python -m helpers.train``: the options, the checks made before TensorFlow loads, and one table from error to exit status.

Every refusal is one line on stderr and a non-zero status, before anything is written. The test
and demo options (``--crash-at-step``, ``--pause-per-step``) become :class:`helpers.train.calls.StepHook`\\ s
here; the loop itself knows no test.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from helpers.errors import NO_SPACE_ERRNOS
from helpers.train.cluster import TF_CONFIG, ClusterConfigError, PeerLostError, WorkerRole, remove_dead_owners_scratch, worker_role
from helpers.train.config import ConfigError, TrainConfig, config_options, default_text, option_name
from helpers.train.run_folder import RunFolder, RunFolderBusyError, RunFolderError, other_configuration
from helpers.train.signals import STOP_SIGNALS, Interrupted, ignore_stop_signals

if TYPE_CHECKING:  # pragma: no cover
    from helpers.train.calls import StepHook

#: Exit status for a bad option or a run folder the command cannot use, or one another run is using (argparse's own status).
USAGE_EXIT_CODE = 2
#: Exit status of a process stopped by ``--crash-at-step`` (``os._exit``: no cleanup, no save).
CRASH_EXIT_CODE = 3
#: Exit status when the run folder holds a checkpoint of another configuration, or only damaged ones.
MISMATCH_EXIT_CODE = 4
#: Exit status when a run stopped for too many non-finite updates (a message, no traceback).
NON_FINITE_EXIT_CODE = 5
#: Exit status when the bundled data (``data/digits.npz``) is missing or damaged; the line says how to regenerate it.
DATA_EXIT_CODE = 6
#: Exit status of a run stopped because a write failed for lack of space (a full disk or quota); its line says what is kept.
NO_SPACE_EXIT_CODE = 7
#: Exit status of a worker of a cluster (``--strategy multiworker``) whose peer stopped or was killed; the line says how to resume.
PEER_LOST_EXIT_CODE = 8
#: The exit statuses, as ``--help`` lists them; README.md, *The capstone command*, says more of each.
EXIT_STATUSES = (
    f"exit statuses: 0 done; 1 a file the command could not write (one line) or an unexpected error (a traceback); "
    f"{USAGE_EXIT_CODE} a bad option or a run folder it cannot use; {CRASH_EXIT_CODE} --crash-at-step; "
    f"{MISMATCH_EXIT_CODE} a rerun with other options, or only damaged checkpoints; {NON_FINITE_EXIT_CODE} the run diverged; "
    f"{DATA_EXIT_CODE} the bundled data is missing or damaged; {NO_SPACE_EXIT_CODE} no space left for a write (the disk is full); "
    f"{PEER_LOST_EXIT_CODE} another worker of the cluster stopped or was killed; "
    "130 or 143 stopped by Ctrl-C or SIGTERM, after a save. "
    "README.md, section 'The capstone command', says more of each."
)
#: What a refusal for another configuration suggests.
SAME_RUN_HINT = "use the same options, --fresh, or another --run-dir"
#: What a worker whose peer was lost suggests.
RESTART_CLUSTER_HINT = "start every worker again with the same command: it resumes from the last checkpoint"


def interrupt_exit_code(signal_number: int) -> int:
    """The command's exit status after it saved and stopped on a signal: 128 + its number (the shell's rule)."""
    return 128 + int(signal_number)


class _Parser(argparse.ArgumentParser):
    """argparse, with errors on one line (usage stays available through --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT_CODE, f"{self.prog}: error: {message} (see --help)\n")


def make_parser() -> argparse.ArgumentParser:
    """The command's options: ``--run-dir``, one option per :class:`TrainConfig` field (same default), and the run controls."""
    parser = _Parser(
        prog="python -m helpers.train",
        description="Train the workbook's MLP on the bundled digits; rerun the same command to resume after a crash or Ctrl-C.",
        epilog=EXIT_STATUSES,
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


def hooks_from_args(args: argparse.Namespace) -> list[StepHook]:
    """``--pause-per-step`` (sleep after every update, one update per call) and ``--crash-at-step`` (``os._exit`` after that update)."""
    from helpers.train.calls import StepHook

    hooks = []
    if args.pause_per_step:
        hooks.append(StepHook(lambda _step: time.sleep(args.pause_per_step), one_update_per_call=True))
    if args.crash_at_step is not None:
        hooks.append(StepHook(_crash_at(args.crash_at_step), ends_call_at=args.crash_at_step))
    return hooks


def _crash_at(crash_step: int) -> Callable[[int], None]:
    def crash(step: int) -> None:
        if step == crash_step:
            sys.stdout.flush()
            os._exit(CRASH_EXIT_CODE)  # no save, no cleanup, writers never closed: like a kill

    return crash


def _folder_hint(error: RunFolderError) -> str:
    if isinstance(error, RunFolderBusyError):
        remedy = "wait for that run to end or stop it, or give --run-dir another folder"
    elif error.emptying_helps:
        remedy = "move it away, or use --fresh"
    else:
        remedy = "give --run-dir a new folder or one an earlier run wrote"
    return f"{error}: {remedy}"


def lock_holder(role: WorkerRole | None) -> str:
    """What this process writes in the run folder's lock file: its pid and, in a cluster, which worker it is."""
    if role is None:
        return f"pid {os.getpid()}"
    return f"pid {os.getpid()} (worker {role.index} of {role.workers}, the chief: it alone writes the run folder)"


def failure_table() -> list[tuple[tuple[type[BaseException], ...], Callable[[Any], int], Callable[[Any], str]]]:
    """Each error the command turns into one line and an exit status: (error types, status, message), first match wins.

    Imports TensorFlow (two of the errors are defined beside it): call it once something failed.
    """
    from helpers.checkpoints import CheckpointError
    from helpers.data import DataError
    from helpers.train.strategies import StrategyError

    return [
        (
            (Interrupted,),
            lambda stop: interrupt_exit_code(stop.signal_number),
            lambda stop: f"{stop}; run the same command again to resume from step {stop.step}",
        ),
        # a mismatch, or only damaged checkpoints
        ((CheckpointError,), lambda _: MISMATCH_EXIT_CODE, lambda error: f"{type(error).__name__}: {error}; {SAME_RUN_HINT}"),
        ((FloatingPointError,), lambda _: NON_FINITE_EXIT_CODE, lambda error: f"{type(error).__name__}: {error}"),  # MAX_NON_FINITE_STEPS skipped
        ((DataError,), lambda _: DATA_EXIT_CODE, lambda error: f"{type(error).__name__}: {error}"),  # its message names the remedy
        ((PeerLostError,), lambda _: PEER_LOST_EXIT_CODE, lambda error: f"{error}; {RESTART_CLUSTER_HINT}"),
        ((RunFolderError,), lambda _: USAGE_EXIT_CODE, _folder_hint),
        ((ClusterConfigError,), lambda _: USAGE_EXIT_CODE, lambda error: f"{error} (see --help)"),
        ((StrategyError,), lambda _: USAGE_EXIT_CODE, str),
        ((OSError,), os_error_status, os_error_line),  # a full disk (its own status), a folder that cannot be written ...
    ]


def os_error_status(error: OSError) -> int:
    """:data:`NO_SPACE_EXIT_CODE` for a write that failed for lack of space, 1 for any other ``OSError``."""
    return NO_SPACE_EXIT_CODE if error.errno in NO_SPACE_ERRNOS else 1


#: What the line of a write that found no space suggests.
NO_SPACE_HINT = "free space on that disk and run the same command again: it resumes from the latest checkpoint, if there is one"


def os_error_line(error: OSError) -> str:
    """The one line for an ``OSError``; for lack of space, what to do about it (:data:`NO_SPACE_HINT`)."""
    line = f"{type(error).__name__}: {error}"
    return f"{line}; {NO_SPACE_HINT}" if error.errno in NO_SPACE_ERRNOS else line


def _fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return status


def _failed(error: Exception) -> int:
    """The status for ``error`` from :func:`failure_table`, its line printed; an error not in the table is raised again."""
    for kinds, status, message in failure_table():
        if isinstance(error, kinds):
            return _fail(message(error), status(error))
    raise error


class _StoppedEarly(Exception):
    """SIGINT or SIGTERM while the training loop was not running (starting up, or finishing): nothing to save for it."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_number)
        self.signal_number = signal_number


def _stop_early(signal_number: int, _frame: object) -> None:
    raise _StoppedEarly(signal_number)


def main(argv: Sequence[str] | None = None) -> int:
    """The command. Every refusal is one line on stderr and a non-zero status, before anything is written.

    From the start, SIGINT and SIGTERM end the command with one line and status 128 + the signal's
    number; once the loop runs they save a checkpoint first (:func:`helpers.train.train` with ``handle_signals``).
    Once it is stopping, a second signal is ignored; the caller's handlers come back when this returns.
    """
    previous = {number: signal.signal(number, _stop_early) for number in STOP_SIGNALS}
    try:
        return _main(argv)
    except _StoppedEarly as stop:
        ignore_stop_signals()  # stopping already: a second signal must not interrupt the line
        name = signal.Signals(stop.signal_number).name
        message = f"stopped by {name} outside the training loop (no checkpoint saved for it); run the same command again to resume or start"
        return _fail(message, interrupt_exit_code(stop.signal_number))
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _checked_options(argv: Sequence[str] | None) -> tuple[TrainConfig, argparse.Namespace]:
    """The config and the run controls; a bad value exits with :data:`USAGE_EXIT_CODE` naming the option."""
    parser = make_parser()
    args = parser.parse_args(argv)
    config = config_from_args(parser, args)
    if not math.isfinite(args.pause_per_step) or args.pause_per_step < 0:
        parser.error("argument --pause-per-step: must be a number >= 0")
    if args.crash_at_step is not None and not 0 < args.crash_at_step <= config.steps:
        parser.error(f"argument --crash-at-step: must be in [1, --steps={config.steps}]")
    if config.strategy == "multiworker" and args.fresh:
        parser.error("argument --fresh: not with --strategy multiworker (every worker would empty the folder); empty it before starting the workers")
    return config, args


def _refusal_before_tensorflow(config: TrainConfig, fresh: bool, held: contextlib.ExitStack) -> int | None:
    """The status of a run refused before TensorFlow loads (its line printed), or None with the folder's lock in ``held``.

    Refused, with nothing written: a bad TF_CONFIG, an unusable folder, other options, a folder that
    cannot be created or written, a folder another run is using. The checks that only read come first.
    """
    folder = RunFolder(config.run_dir)
    try:
        role = worker_role(os.environ.get(TF_CONFIG)) if config.strategy == "multiworker" else None
        if fresh:
            folder.check_can_empty()
        else:
            folder.check()
    except (ClusterConfigError, RunFolderError) as error:
        return _fail(f"{error} (see --help)" if isinstance(error, ClusterConfigError) else _folder_hint(error), USAGE_EXIT_CODE)
    differences: list[str] = [] if fresh else folder.config_differences(config)
    if differences and folder.has_checkpoints():  # train() would refuse this run whatever the checkpoints hold
        message = f"CheckpointMismatchError: {other_configuration(config.run_dir, differences)}: {SAME_RUN_HINT}"
        return _fail(message, MISMATCH_EXIT_CODE)
    try:
        if role is None or role.is_chief:  # only the chief writes the folder: another worker takes no lock and probes nothing
            _take_folder(folder, role, fresh, held)
    except RunFolderError as error:
        return _fail(_folder_hint(error), USAGE_EXIT_CODE)
    except OSError as error:  # writing the lock file or emptying the folder failed (a full disk ...)
        return _fail(os_error_line(error), os_error_status(error))
    return None


def _take_folder(folder: RunFolder, role: WorkerRole | None, fresh: bool, held: contextlib.ExitStack) -> None:
    """Probe that the folder can be written, lock it for this process (the lock goes into ``held``), then empty it for ``--fresh``."""
    folder.check_writable()
    held.enter_context(folder.locked(lock_holder(role)))
    if fresh:
        folder.empty()  # under the lock, which it keeps: a second run cannot start in the folder being emptied


def _main(argv: Sequence[str] | None) -> int:
    config, args = _checked_options(argv)
    with contextlib.ExitStack() as held:  # the run folder's lock, released when the command returns (or by the kernel, if killed)
        refused = _refusal_before_tensorflow(config, args.fresh, held)
        if refused is not None:
            return refused
        remove_dead_owners_scratch()  # the temporary folders of workers killed earlier (a SIGKILL leaves them behind)
        from helpers.train.run import train  # TensorFlow loads here, once every check that needs none has passed

        try:
            train(config, hooks=hooks_from_args(args), handle_signals=True)
        except Exception as error:  # failure_table names what is handled; anything else is raised again
            return _failed(error)
        return 0
