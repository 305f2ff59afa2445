"""``python -m helpers.train``: the options, the checks made before TensorFlow loads, and the exit statuses of its error classes.

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
from typing import TYPE_CHECKING, NoReturn

from helpers.errors import NO_SPACE_ERRNOS
from helpers.failures import CommandError, UsageError, report, status_table, status_text
from helpers.train.cluster import TF_CONFIG, ClusterConfigError, PeerLostError, WorkerRole, remove_dead_owners_scratch, worker_role
from helpers.train.config import ConfigError, TrainConfig, config_options, default_text, option_name
from helpers.train.run_folder import RunFolder, RunFolderError, other_configuration
from helpers.train.signals import STOP_SIGNALS, Interrupted, ignore_stop_signals, interrupt_exit_code

if TYPE_CHECKING:  # pragma: no cover
    from helpers.train.calls import StepHook

class CrashedAtStep(CommandError):
    """Never raised: ``--crash-at-step`` ends the process with ``os._exit`` (no save, no cleanup) and this class's status."""

    exit_status = 3
    meaning = "--crash-at-step"


class OtherRun(CommandError):
    """The run folder holds checkpoints of another configuration, or only damaged ones (a :class:`~helpers.checkpoints.CheckpointError`)."""

    exit_status = 4
    meaning = "a rerun with other options, or only damaged checkpoints"


class Diverged(CommandError):
    """The run stopped for too many non-finite updates (the loop's ``FloatingPointError``): a message, no traceback."""

    exit_status = 5
    meaning = "the run diverged"


class DataUnusable(CommandError):
    """The bundled data (``data/digits.npz``) is missing or damaged (a :class:`~helpers.data.DataError`); the line says how to regenerate it."""

    exit_status = 6
    meaning = "the bundled data is missing or damaged"


class WriteFailed(CommandError):
    """A file the command could not write, for another reason than space (an ``OSError``)."""

    meaning = "a file the command could not write (one line) or an unexpected error (a traceback)"


class NoSpace(CommandError):
    """A write failed for lack of space (a full disk or quota); the line says what is kept."""

    exit_status = 7
    meaning = "no space left for a write (the disk is full)"


class StrategyUnavailable(UsageError):
    """The ``--strategy`` cannot be made in this process (a :class:`~helpers.train.strategies.StrategyError`)."""

    meaning = "a strategy this process cannot make"


#: Every error the command turns into one line and an exit status, TensorFlow-free; :func:`command_error` maps the others onto them.
ERRORS: tuple[type[CommandError], ...] = (
    WriteFailed, UsageError, RunFolderError, ClusterConfigError, StrategyUnavailable, CrashedAtStep, OtherRun, Diverged, DataUnusable, NoSpace,
    PeerLostError, Interrupted,
)  # fmt: skip
#: The exit statuses, as ``--help`` lists them (derived from :data:`ERRORS`); README.md, *The capstone command*, says more of each.
EXIT_STATUSES = status_text(status_table(ERRORS)) + " README.md, section 'The capstone command', says more of each."
#: Exit status for a bad option or a run folder the command cannot use, or one another run is using (argparse's own status).
USAGE_EXIT_CODE = UsageError.exit_status
#: Exit status of a process stopped by ``--crash-at-step``.
CRASH_EXIT_CODE = CrashedAtStep.exit_status
#: Exit status when the run folder holds a checkpoint of another configuration, or only damaged ones.
MISMATCH_EXIT_CODE = OtherRun.exit_status
#: Exit status when a run stopped for too many non-finite updates.
NON_FINITE_EXIT_CODE = Diverged.exit_status
#: Exit status when the bundled data is missing or damaged.
DATA_EXIT_CODE = DataUnusable.exit_status
#: Exit status of a run stopped because a write failed for lack of space.
NO_SPACE_EXIT_CODE = NoSpace.exit_status
#: Exit status of a worker of a cluster whose peer stopped or was killed.
PEER_LOST_EXIT_CODE = PeerLostError.exit_status
#: What a refusal for another configuration suggests.
SAME_RUN_HINT = "use the same options, --fresh, or another --run-dir"
#: What the line of a write that found no space suggests.
NO_SPACE_HINT = "free space on that disk and run the same command again: it resumes from the latest checkpoint, if there is one"


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


def lock_holder(role: WorkerRole | None) -> str:
    """What this process writes in the run folder's lock file: its pid and, in a cluster, which worker it is."""
    if role is None:
        return f"pid {os.getpid()}"
    return f"pid {os.getpid()} (worker {role.index} of {role.workers}, the chief: it alone writes the run folder)"


def command_error(error: BaseException) -> CommandError | None:
    """The :class:`~helpers.failures.CommandError` that ``error`` stands for: itself, or the command's class for an error of a
    lower layer or of Python; None for anything else (a bug, raised again with its traceback).

    Imports what defines those errors (TensorFlow among them): call it once something failed.
    """
    from helpers.checkpoints import CheckpointError
    from helpers.data import DataError
    from helpers.train.strategies import StrategyError

    if isinstance(error, CommandError):
        return error
    if isinstance(error, CheckpointError):  # a mismatch, or only damaged checkpoints
        return OtherRun(f"{type(error).__name__}: {error}; {SAME_RUN_HINT}")
    if isinstance(error, FloatingPointError):  # MAX_NON_FINITE_STEPS skipped
        return Diverged(f"{type(error).__name__}: {error}")
    if isinstance(error, DataError):  # its message names the remedy
        return DataUnusable(f"{type(error).__name__}: {error}")
    if isinstance(error, StrategyError):
        return StrategyUnavailable(str(error))
    if isinstance(error, OSError):  # a full disk (its own status), a folder that cannot be written ...
        return written(error)
    return None


def written(error: OSError) -> CommandError:
    """A write that failed: :class:`NoSpace` for lack of space (with what to do about it), :class:`WriteFailed` for any other reason."""
    line = f"{type(error).__name__}: {error}"
    return NoSpace(f"{line}; {NO_SPACE_HINT}") if error.errno in NO_SPACE_ERRNOS else WriteFailed(line)


def _failed(error: Exception) -> int:
    """``error``'s line printed and its status (:func:`command_error`); an error the command does not expect is raised again."""
    expected = command_error(error)
    if expected is None:
        raise error
    return report(expected)


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
        print(f"error: {message}", file=sys.stderr, flush=True)
        return interrupt_exit_code(stop.signal_number)
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
        return report(error)
    differences: list[str] = [] if fresh else folder.config_differences(config)
    if differences and folder.has_checkpoints():  # train() would refuse this run whatever the checkpoints hold
        message = f"CheckpointMismatchError: {other_configuration(config.run_dir, differences)}: {SAME_RUN_HINT}"
        return report(OtherRun(message))
    try:
        if role is None or role.is_chief:  # only the chief writes the folder: another worker takes no lock and probes nothing
            _take_folder(folder, role, fresh, held)
    except RunFolderError as error:
        return report(error)
    except OSError as error:  # writing the lock file or emptying the folder failed (a full disk ...)
        return report(written(error))
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
        except Exception as error:  # command_error names what is handled; anything else is raised again
            return _failed(error)
        return 0
