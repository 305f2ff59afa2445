"""Where one run writes: :class:`RunFolder` names every entry, checks a folder before a run uses it, locks it, and empties it.

TensorFlow-free but for :meth:`RunFolder.latest_step`, which asks TensorFlow which checkpoint is published.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from helpers.failures import CommandError, UsageError
from helpers.paths import TORN_SAVE, checkpoint_prefixes, checkpoint_step, display_path, remove

if TYPE_CHECKING:  # pragma: no cover
    from helpers.train.config import TrainConfig
    from helpers.train.results import TrainResult

#: Paths in the command's messages: relative inside the repository, whole elsewhere (where the user typed them).
shown = functools.partial(display_path, keep_outside=True)


class RunFolderError(CommandError, RuntimeError):
    """The run folder cannot be used as it is (a file where a folder belongs, an unreadable config ...).

    ``emptying_helps`` says whether removing what runs write (``--fresh``) would fix it; the command's line says what to do.
    """

    exit_status = UsageError.exit_status
    meaning = "a run folder it cannot use, or one another run is using"

    def __init__(self, message: str, *, emptying_helps: bool) -> None:
        super().__init__(message)
        self.emptying_helps = emptying_helps

    def line(self) -> str:
        remedy = "move it away, or use --fresh" if self.emptying_helps else "give --run-dir a new folder or one an earlier run wrote"
        return f"{self}: {remedy}"


class RunFolderBusyError(RunFolderError):
    """Another process holds the folder's lock (:meth:`RunFolder.locked`); ``holder`` is what it wrote in the lock file."""

    def __init__(self, message: str, *, holder: str) -> None:
        super().__init__(message, emptying_helps=False)
        self.holder = holder

    def line(self) -> str:
        return f"{self}: wait for that run to end or stop it, or give --run-dir another folder"


def other_configuration(run_dir: Path, differences: list[str]) -> str:
    """The one sentence for checkpoints written with other trajectory values (:meth:`RunFolder.config_differences`)."""
    return f"the checkpoints in {shown(run_dir)} were written with another configuration ({'; '.join(differences)})"


@dataclass(frozen=True)
class RunFolder:
    """Where one run writes, named in one place: the loop, ``--fresh``, chapter 08 and the tests use it."""

    path: Path

    #: Everything a run writes in its folder; ``--fresh`` removes only these.
    ENTRIES: ClassVar[frozenset[str]] = frozenset({"checkpoints", "logs", "config.json", "result.json"})
    #: The lock file of the command process using the folder (:meth:`locked`): removed when that process
    #: ends, left behind (and harmless) only by a killed one. Not a foreign entry; ``--fresh`` keeps it.
    LOCK: ClassVar[str] = "run.lock"

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

    @property
    def lock_file(self) -> Path:
        return self.path / self.LOCK

    def foreign_entries(self) -> list[str]:
        """Names in the folder that no run writes (sorted); empty for a missing folder.

        The lock file and the partial files of a JSON write that did not finish are a run's own.
        """
        if not self.path.is_dir():
            return []
        own = self.ENTRIES | {self.LOCK}
        return sorted(entry.name for entry in self.path.iterdir() if entry.name not in own and not _PARTIAL_JSON.match(entry.name))

    def remove_leftovers(self) -> list[str]:
        """Remove what writes and saves that did not finish left in the folder; the paths removed, relative to it.

        The partial files of ``config.json`` and ``result.json`` (:func:`_write_json`), the torn
        saves in ``checkpoints/`` (:data:`helpers.paths.TORN_SAVE`) and empty event files (a summary
        writer that could not write its first record: they hold nothing). Only while no other process
        writes here: the command calls it under the folder's lock.
        """
        removed: list[str] = []
        rules = ((self.path, _PARTIAL_JSON), (self.checkpoints, TORN_SAVE), (self.train_logs, _EVENTS), (self.validation_logs, _EVENTS))
        for folder, rule in rules:
            entries = sorted(folder.iterdir()) if folder.is_dir() else []
            for entry in (entry for entry in entries if rule.match(entry.name) and (rule is not _EVENTS or _is_empty_file(entry))):
                remove(entry)
                removed.append(str(entry.relative_to(self.path)))
        return removed

    def check(self) -> None:
        """Raise :class:`RunFolderError` naming the first thing that makes the folder unusable.

        Reads only; a missing folder is fine (a new run creates it).
        """
        self._check_is_folder_of_runs("")
        for folder in (self.checkpoints, self.logs, self.train_logs, self.validation_logs):
            if folder.exists() and not folder.is_dir():
                raise RunFolderError(f"{shown(folder)} is a file where the run keeps a folder", emptying_helps=True)
        for file in (self.config_file, self.result_file):
            if file.exists() and not file.is_file():
                raise RunFolderError(f"{shown(file)} is a folder where the run writes a file", emptying_helps=True)
        self.saved_config()

    def check_writable(self) -> None:
        """Raise :class:`RunFolderError` if the folder cannot be created or a file cannot be written in it.

        Found before anything runs (``/proc/x``, ``/dev/null/x``, a read-only disk), not at the first
        save. Leaves the disk as it was: the probe file has no name (or is removed at once), and the
        folders made for it are removed again.
        """
        made = _missing_folders(self.path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(prefix=".helpers-train-probe-", dir=self.path):
                pass
        except OSError as error:
            raise self._unwritable(error) from None
        finally:
            _remove_empty(made)

    def _unwritable(self, error: OSError) -> RunFolderError:
        reason = error.strerror or type(error).__name__
        return RunFolderError(f"{shown(self.path)} cannot be created or written ({reason})", emptying_helps=False)

    @contextlib.contextmanager
    def locked(self, holder: str) -> Iterator[None]:
        """Hold the folder's lock while the block runs: ``fcntl.flock`` on :attr:`lock_file`, with ``holder`` written in it.

        :class:`RunFolderBusyError` naming the holder (what it wrote: its pid ...) if another process holds
        it; nothing is written then. The kernel releases the lock when its process ends, however it
        ends, so a lock file left by a killed process blocks nobody. At the end the lock file goes,
        and the folders made for it if they are still empty.
        """
        made = _missing_folders(self.path)
        descriptor = self._take_lock()
        try:
            try:
                os.ftruncate(descriptor, 0)
                os.write(descriptor, f"{holder}\n".encode())
            except OSError as error:  # a full disk: say which file could not be written
                raise OSError(error.errno, error.strerror, str(self.lock_file)) from None
            yield
        finally:
            with contextlib.suppress(OSError):
                self.lock_file.unlink()  # while still holding it: a process that opened this file finds it gone and opens anew
            os.close(descriptor)  # releases the lock
            _remove_empty(made)

    def _take_lock(self) -> int:
        """An open descriptor of :attr:`lock_file`, locked by this process (the file is created if missing)."""
        while True:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                descriptor = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # a holder that just ended removed the folder it made: make it again
                continue
            except OSError as error:
                raise self._unwritable(error) from None
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(descriptor)
                raise self._busy() from None
            if _names_file(self.lock_file, descriptor):
                return descriptor
            os.close(descriptor)  # its holder removed that file as it ended: lock the one there now

    def _busy(self) -> RunFolderBusyError:
        try:
            holder = self.lock_file.read_text().strip() or "another process (starting)"
        except OSError:
            holder = "another process"
        return RunFolderBusyError(f"{shown(self.path)} is in use: {holder} holds its lock {shown(self.lock_file)}", holder=holder)

    def check_can_empty(self) -> None:
        """:class:`RunFolderError` if :meth:`empty` would refuse the folder (reads only)."""
        self._check_is_folder_of_runs("; refusing to empty it")

    def _check_is_folder_of_runs(self, refusal: str) -> None:
        """:class:`RunFolderError` if the path is a file or holds files no run writes (``refusal`` ends that message)."""
        if self.path.exists() and not self.path.is_dir():
            raise RunFolderError(f"{shown(self.path)} is a file, not a folder", emptying_helps=False)
        foreign = self.foreign_entries()
        if foreign:  # --run-dir . or a typo must never delete unrelated files
            raise RunFolderError(f"{shown(self.path)} holds files no run writes ({', '.join(foreign[:5])}){refusal}", emptying_helps=False)

    def saved_config(self) -> dict[str, Any] | None:
        """The ``config.json`` an earlier run wrote, or None; :class:`RunFolderError` if it is not one."""
        if not self.config_file.is_file():
            return None
        try:
            saved = json.loads(self.config_file.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RunFolderError(f"{shown(self.config_file)} is not a run's config ({type(error).__name__})", emptying_helps=True) from None
        if not isinstance(saved, dict):
            raise RunFolderError(f"{shown(self.config_file)} is not a run's config (not a JSON object)", emptying_helps=True)
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
        progress, or one torn by a kill); a resume rightly ignores those. Imports TensorFlow, which
        owns the state file's format.
        """
        from helpers.environment import quiet_tensorflow_logs

        quiet_tensorflow_logs()
        import tensorflow as tf

        try:
            latest = tf.train.latest_checkpoint(str(self.checkpoints))
        except ValueError:  # a state file that names no latest checkpoint (an empty one, say): nothing is published
            return -1
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
        """Remove what a run wrote (``--fresh``), and the folder once empty; :class:`RunFolderError` if it holds anything else.

        The lock file stays: the process emptying the folder holds it, and removing it would let a second run in.
        """
        self.check_can_empty()
        if not self.path.is_dir():
            return
        for entry in self.path.iterdir():
            if entry.name == self.LOCK:
                continue
            remove(entry, ignore_errors=False)
        with contextlib.suppress(OSError):
            self.path.rmdir()  # stays while it holds the lock file


#: The partial file of :func:`_write_json` for ``config.json`` or ``result.json``: ``.<name>.<pid>.tmp``.
_PARTIAL_JSON = re.compile(r"^\.(config|result)\.json\.\d+\.tmp$")


#: A TensorFlow event file's name (``events.out.tfevents.<time>.<host>...``).
_EVENTS = re.compile(r"^events\.out\.tfevents\.")


def _is_empty_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink() and path.stat().st_size == 0


def _write_json(path: Path, values: Mapping[str, Any]) -> None:
    """Write ``path`` through a partial file renamed into place; a write that fails (a full disk) removes the partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps(values, indent=2) + "\n")
        os.replace(partial, path)  # readers see the old file or the new one, never half of one
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from None  # the error of a full disk names no file
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _missing_folders(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, outermost first."""
    return [folder for folder in (path, *path.parents) if not os.path.lexists(folder)][::-1]


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (outermost first, as :func:`_missing_folders` lists them) that are empty, innermost first."""
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _names_file(path: Path, descriptor: int) -> bool:
    """True when ``path`` is the file open as ``descriptor`` (not removed, nor replaced by another)."""
    try:
        on_disk = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)
