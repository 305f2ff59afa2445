"""The grading sandbox: a returned notebook's kernel runs with no more than it needs.

``make grade`` executes what students returned. nbgrader does not isolate that code (its FAQ: "Does nbgrader
protect against unsafe code? Not yet"), so the kernel of every graded notebook starts inside `bubblewrap`_
(Debian's ``bwrap``, no daemon), while nbgrader stays outside: it reads the kernel's outputs over two Unix
sockets, scores them, and alone touches the gradebook. What the kernel sees:

- read-only: the system's programs and libraries (``/usr`` and its links, a few files of ``/etc``), the Python
  that runs the workbook (its environment and base installation), the project's ``helpers/`` and ``data/``,
  and the student's own returned folder, as its working folder;
- writable, in memory and bounded (:attr:`Limits.scratch_bytes`): ``HOME``, the chapter's build folder
  (``WORKBOOK_BUILD_DIR``) and ``/tmp``;
- nothing else: not the course's ``source/``, ``release/``, ``gradebook.db`` or other students' folders, not the
  rest of the repository (the chapters hold the solutions), not the teacher's home;
- the network: its own loopback only (chapters start TensorBoard and workers on 127.0.0.1); the teacher's
  ports are in another network namespace;
- limits (:class:`Limits`): memory and processes by a control group (cgroup v2, or v1's ``memory`` and ``pids``
  hierarchies), wall time (everything the kernel started is killed), the size of each file it writes, and the
  output nbgrader keeps.

What a student can still do from inside: anything their own kernel can, to their own grade. A cell can
redefine a check before it runs, as in any nbgrader course; the teacher's formgrader shows the notebook.

:func:`problem` says why the sandbox cannot be set up on this machine; ``make grade`` then refuses, naming
``--unsafe-no-sandbox``.

.. _bubblewrap: https://github.com/containers/bubblewrap
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.failures import CommandError
from helpers.paths import repo_root
from helpers.processes import Deadline

#: The program that builds the sandbox (Debian's package ``bubblewrap``; ``make grade`` and ``make test`` install it).
BWRAP = "bwrap"
#: The sandbox's own folder, in memory: ``returned/`` (the student's folder, read-only), ``work/`` (a writable copy of it,
#: the kernel's working folder), ``home/`` and ``build/``.
SCRATCH = Path("/sandbox")
#: The files of ``/etc`` a kernel needs (libraries, users, ``localhost``, time zone); the rest of ``/etc`` is not there.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "hosts", "nsswitch.conf", "localtime", "alternatives", "fonts")
#: Environment variables passed into the sandbox when set (everything else is cleared).
PASSED_VARIABLES = ("LANG", "LC_ALL", "TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL", "NBGRADER_EXECUTION", "PYTHONHASHSEED")


class SandboxUnavailable(CommandError):
    """The grading sandbox cannot be set up on this machine; the message says why and names the option that grades anyway."""

    exit_status = 5
    meaning = "the grading sandbox cannot be set up here (make grade; --unsafe-no-sandbox grades at your own risk)"


class SandboxLimitError(RuntimeError):
    """A graded notebook ran into a limit of its sandbox and was stopped (the message names the limit)."""


@dataclass(frozen=True)
class Limits:
    """What one graded notebook may use. The defaults are generous guesses, not measured per chapter: the tests grade
    chapter 03 and a tiny chapter within them (chapter 09, which starts two TensorFlow workers, is not yet graded so)."""

    #: Memory of the kernel and everything it starts, the in-memory scratch space included.
    memory_bytes: int = 6 * 2**30
    #: Processes and threads (a control group's ``pids``: TensorFlow starts dozens of threads per process).
    tasks: int = 2048
    #: Wall time of the whole notebook; then the kernel and everything it started are killed.
    wall_seconds: float = 1800.0
    #: Size of any one file the kernel writes (a larger write stops the writer).
    file_bytes: int = 512 * 2**20
    #: The in-memory scratch space (``HOME``, the build folder) and ``/tmp``, each.
    scratch_bytes: int = 1 * 2**30
    #: Output nbgrader keeps from one notebook; the rest is cut, and the notebook says so.
    output_bytes: int = 20 * 2**20

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "tasks", "wall_seconds", "file_bytes", "scratch_bytes", "output_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")


# --- control groups ------------------------------------------------------------------------------------------


def _own_cgroups() -> dict[str, str]:
    """This process's control group per hierarchy, from ``/proc/self/cgroup``: ``""`` for v2, else the controller's name."""
    groups: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = path
    return groups


class ControlGroup:
    """A new control group that bounds memory and tasks, in cgroup v2 or in v1's ``memory`` and ``pids`` hierarchies.

    :meth:`create` makes it (or raises :class:`OSError` saying why it cannot), :attr:`procs` are the files a process
    writes its pid into to join, :meth:`kill` stops everything in it, :meth:`events` says which limit was hit.
    """

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = folders  # "memory"/"pids" for v1, "" for v2

    @classmethod
    def create(cls, limits: Limits, root: Path = Path("/sys/fs/cgroup")) -> ControlGroup:
        name = f"workbook-grading-{os.getpid()}-{time.monotonic_ns()}"
        own = _own_cgroups()
        v2 = root / "cgroup.controllers"
        if v2.is_file() and {"memory", "pids"} <= set(v2.read_text(encoding="utf-8").split()):
            parent = root / own.get("", "/").lstrip("/")
            enabled = (parent / "cgroup.subtree_control").read_text(encoding="utf-8").split()
            missing = [controller for controller in ("memory", "pids") if controller not in enabled]
            if missing:
                (parent / "cgroup.subtree_control").write_text(" ".join(f"+{controller}" for controller in missing), encoding="utf-8")
            group = cls({"": parent / name})
        elif (root / "memory").is_dir() and (root / "pids").is_dir():
            group = cls({controller: root / controller / own.get(controller, "/").lstrip("/") / name for controller in ("memory", "pids")})
        else:
            raise OSError(f"no cgroup v2 with the memory and pids controllers, nor v1 memory and pids hierarchies, under {root}")
        try:
            for folder in group.folders.values():
                folder.mkdir()
            v2_group = "" in group.folders
            group._write("memory", "memory.max" if v2_group else "memory.limit_in_bytes", str(limits.memory_bytes))
            swap = ("memory.swap.max", "0") if v2_group else ("memory.memsw.limit_in_bytes", str(limits.memory_bytes))  # no swap beyond it
            group._write("memory", *swap, optional=True)
            group._write("pids", "pids.max", str(limits.tasks))
        except OSError:
            group.remove()
            raise
        return group

    def _folder(self, controller: str) -> Path:
        return self.folders.get("", self.folders.get(controller, Path("/nonexistent")))

    def _write(self, controller: str, name: str, value: str, *, optional: bool = False) -> None:
        path = self._folder(controller) / name
        if optional and not path.exists():
            return
        path.write_text(value, encoding="utf-8")

    @property
    def procs(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.folders.values()]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.procs:
            try:
                found |= {int(pid) for pid in path.read_text(encoding="utf-8").split()}
            except OSError:
                pass
        return found

    def events(self) -> dict[str, int]:
        """How many times each limit stopped something: ``oom_kill`` (memory) and ``max`` (tasks)."""
        counts = {"oom_kill": 0, "max": 0}
        memory_events = self._folder("memory") / ("memory.events" if "" in self.folders else "memory.oom_control")
        for path in (memory_events, self._folder("pids") / "pids.events"):
            try:
                for line in path.read_text(encoding="utf-8").splitlines():
                    key, _, value = line.partition(" ")
                    if key in counts and value.strip().isdigit():
                        counts[key] += int(value)
            except OSError:
                pass
        return counts

    def kill(self) -> None:
        """SIGKILL everything in the group until it is empty (a fork bomb keeps forking while it is killed), 30 s at most."""
        kill_file = self.folders.get("", Path("/nonexistent")) / "cgroup.kill"
        if kill_file.exists():
            kill_file.write_text("1", encoding="utf-8")
        deadline = Deadline(30)
        while (pids := self.pids()) and not deadline.passed():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            deadline.pause(0.05)

    def remove(self) -> None:
        self.kill()
        for folder in self.folders.values():
            deadline = Deadline(5)  # a killed process leaves its group a moment later
            while folder.exists() and not deadline.passed():
                with contextlib.suppress(OSError):
                    folder.rmdir()
                deadline.pause(0.05)


# --- the sandbox ---------------------------------------------------------------------------------------------


def read_only_paths() -> list[Path]:
    """What the kernel may read besides the system: the Python environment, its base installation, ``helpers/`` and ``data/``."""
    root = repo_root()
    paths = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), root / "helpers", root / "data"]
    return [path for index, path in enumerate(paths) if path.exists() and path not in paths[:index]]


def command(returned: Path, sockets: Path, limits: Limits, program: Sequence[str]) -> list[str]:
    """The command that runs ``program`` in the sandbox: in a writable copy of ``returned``, talking over ``sockets``."""
    copy_then_run = f'cp -R {SCRATCH}/returned/. {SCRATCH}/work/ && exec "$@"'
    return [*bwrap_arguments(returned, sockets, limits), "--", "/bin/sh", "-c", copy_then_run, "sh", *program]


def bwrap_arguments(returned: Path, sockets: Path, limits: Limits) -> list[str]:
    """``bwrap``'s arguments (before the command): ``returned`` read-only in the sandbox's folder, ``sockets`` writable.

    :class:`SandboxUnavailable` if a read-only path would hold ``returned`` (a Python environment that contains the
    course folder would show the sandbox the course: its solutions and the gradebook).
    """
    for path in read_only_paths():
        if returned.resolve().is_relative_to(path):
            raise SandboxUnavailable(f"{path} holds the returned notebooks ({returned}): the sandbox would show it the whole course")
    arguments = [
        BWRAP, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
        "--dev", "/dev", "--proc", "/proc",
        "--size", str(limits.scratch_bytes), "--tmpfs", "/tmp",
        "--size", str(limits.scratch_bytes), "--tmpfs", str(SCRATCH),
        "--dir", str(SCRATCH / "home"), "--dir", str(SCRATCH / "build"), "--dir", str(SCRATCH / "work"),
    ]  # fmt: skip
    for system in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
        if Path(system).is_symlink():  # merged /usr: /bin -> usr/bin
            arguments += ["--symlink", os.readlink(system), system]
        elif Path(system).is_dir():
            arguments += ["--ro-bind", system, system]
    for name in ETC_FILES:
        arguments += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in read_only_paths():
        if not path.is_relative_to("/usr"):
            arguments += ["--ro-bind", str(path), str(path)]
    arguments += ["--ro-bind", str(returned), str(SCRATCH / "returned"), "--bind", str(sockets), str(sockets), "--chdir", str(SCRATCH / "work")]
    arguments += ["--remount-ro", "/"]  # the sandbox's own root, which holds the folders made for the mounts: read-only too
    environment = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(SCRATCH / "home"),
        "TMPDIR": "/tmp",
        "WORKBOOK_BUILD_DIR": str(SCRATCH / "build"),
        "MPLBACKEND": "Agg",
        **{name: os.environ[name] for name in PASSED_VARIABLES if name in os.environ},
    }
    for name, value in environment.items():
        arguments += ["--setenv", name, value]
    return arguments


def _join(procs: Sequence[Path], file_bytes: int) -> None:
    """In the child, before ``exec``: join the control group and bound the size of the files it writes."""
    for path in procs:
        path.write_text(str(os.getpid()), encoding="utf-8")
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def problem(limits: Limits | None = None) -> str:
    """Why the sandbox cannot be set up here (``""`` when it can): ``bwrap`` missing or refused, or no control group."""
    limits = limits or Limits()
    if shutil.which(BWRAP) is None:
        return f"{BWRAP} is not installed (Debian: apt-get install bubblewrap; make grade installs it as root)"
    try:
        group = ControlGroup.create(limits)
    except OSError as error:
        return f"cannot create a control group to limit memory and processes: {error}"
    try:
        with tempfile.TemporaryDirectory(prefix="workbook-sandbox-probe-") as folder:
            probe = command(Path(folder), Path(folder), limits, [sys.executable, "-c", "import helpers"])
            done = subprocess.run(probe, capture_output=True, text=True, timeout=60, preexec_fn=lambda: _join(group.procs, limits.file_bytes))
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
            return f"{BWRAP} cannot start Python in a sandbox here: {last}"
    finally:
        group.remove()
    return ""


def require(limits: Limits | None = None) -> None:
    """Raise :class:`SandboxUnavailable` (one line) unless the sandbox can be set up here."""
    reason = problem(limits)
    if reason:
        raise SandboxUnavailable(f"cannot grade in a sandbox: {reason}; --unsafe-no-sandbox grades with your own rights, at your own risk")


# --- nbgrader's side: a kernel manager and an Execute preprocessor ----------------------------------------------


def _kernel_manager_class() -> type:
    import zmq.asyncio
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager

    class LimitedClient(AsyncKernelClient):
        """A client whose sockets refuse a message over :attr:`Limits.output_bytes` (ZeroMQ drops it and reconnects)."""

        largest_message = Limits.output_bytes

        def _context_default(self) -> zmq.asyncio.Context:
            self._created_context = True
            context = zmq.asyncio.Context()
            context.setsockopt(zmq.MAXMSGSIZE, self.largest_message)
            return context

    class SandboxedKernelManager(AsyncKernelManager):
        """A kernel that starts inside :func:`bwrap_arguments`' sandbox and talks over Unix sockets (its network is its own)."""

        limits = Limits()
        group: ControlGroup | None = None
        sockets: Path | None = None
        #: What the limits stopped (:meth:`ControlGroup.events`), read when the kernel's group is removed.
        events: dict[str, int] = {}

        def __init__(self, **kwargs: Any) -> None:
            self.sockets = Path(tempfile.mkdtemp(prefix="workbook-kernel-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", str(self.sockets / "kernel"))
            super().__init__(**kwargs)
            self.connection_file = str(self.sockets / "connection.json")
            self.client_factory = type("Limited", (LimitedClient,), {"largest_message": self.limits.output_bytes})

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            kernel: list[str] = super().format_kernel_cmd(extra_arguments)
            assert self.sockets is not None
            returned = Path(str((self._launch_args or {}).get("cwd") or os.getcwd())).resolve()
            return command(returned, self.sockets, self.limits, kernel)

        async def _async_pre_start_kernel(self, **kwargs: Any) -> Any:
            if self.group is not None:  # a restart: the old kernel's group goes with it
                self._remove_group()
            self.group = ControlGroup.create(self.limits)
            if self.kernel_spec is not None:  # a signal cannot reach into the sandbox's own session: ask over the control socket
                self.kernel_spec.interrupt_mode = "message"
            group, file_bytes = self.group, self.limits.file_bytes
            kwargs["preexec_fn"] = lambda: _join(group.procs, file_bytes)
            # What the kernel writes to its own stdout and stderr would reach the grader's memory, past the output limit.
            kwargs["stdout"] = kwargs["stderr"] = subprocess.DEVNULL
            return await super()._async_pre_start_kernel(**kwargs)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart)
            if not restart:
                self._remove_group()
                if self.sockets is not None:
                    shutil.rmtree(self.sockets, ignore_errors=True)

        cleanup_resources = _async_cleanup_resources

        def _remove_group(self) -> None:
            if self.group is not None:
                self.group.kill()
                self.events = {key: self.events.get(key, 0) + value for key, value in self.group.events().items()}
                self.group.remove()
                self.group = None

    return SandboxedKernelManager


def execute_class() -> type:
    """nbgrader's ``Execute`` preprocessor with the kernel in the sandbox, a wall-time limit and an output limit.

    The course's ``nbgrader_config.py`` puts it in ``Autograde.autograde_preprocessors`` in place of ``Execute``.
    """
    from jupyter_core.utils import run_sync
    from nbgrader.preprocessors import Execute
    from traitlets import Bool, Float, Int, Unicode

    manager_class = _kernel_manager_class()

    class SandboxedExecute(Execute):
        sandbox = Bool(True, help="Start the kernel in the sandbox (False: with the grader's own rights)").tag(config=True)
        memory_bytes = Int(Limits.memory_bytes, help="Limits.memory_bytes").tag(config=True)
        tasks = Int(Limits.tasks, help="Limits.tasks").tag(config=True)
        wall_seconds = Float(Limits.wall_seconds, help="Limits.wall_seconds").tag(config=True)
        output_bytes = Int(Limits.output_bytes, help="Limits.output_bytes").tag(config=True)
        report = Unicode("", help="A JSON file to write what the sandbox stopped (limits hit, output cut)").tag(config=True)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.limits = Limits(memory_bytes=self.memory_bytes, tasks=self.tasks, wall_seconds=self.wall_seconds, output_bytes=self.output_bytes)
            if self.sandbox:
                self.kernel_manager_class = type("Limited", (manager_class,), {"limits": self.limits})
            self._kept = 0
            self._cut = False
            self._timed_out = False
            self._manager: Any = None

        def create_kernel_manager(self) -> Any:
            self._manager = super().create_kernel_manager()
            return self._manager

        async def async_execute_cell(self, cell: Any, cell_index: int, execution_count: int | None = None, store_history: bool = True) -> Any:
            try:
                return await self._execute_cell(cell, cell_index, execution_count, store_history)
            finally:
                self._stop_at_a_limit()

        def _stop_at_a_limit(self) -> None:
            """After each cell: a kernel that reached its memory or task limit is stopped now, not cell timeout after cell timeout."""
            group = getattr(self._manager, "group", None)
            if self.sandbox and group is not None:
                events = group.events()
                if events["max"] or events["oom_kill"]:
                    group.kill()
                    raise SandboxLimitError(self._why(events, RuntimeError("a limit was reached")))

        async def _execute_cell(self, cell: Any, cell_index: int, execution_count: int | None, store_history: bool) -> Any:
            from nbclient.exceptions import CellTimeoutError

            try:
                return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            except CellTimeoutError as error:
                if not self.sandbox or "Timeout waiting for IOPub output" not in str(error):
                    raise
                # The client dropped a message over the limit (LimitedClient) and lost the cell's last messages with it. Its
                # reply may have been an error: the cell is recorded as one, so a check whose output was lost wins no point.
                self._cut = True
                from nbformat.v4 import new_output

                limit = f"{self.limits.output_bytes / 2**20:g} MB"
                note = f"this cell sent a message over {limit}, or none within {self.iopub_timeout} s: its output was cut"
                cell.outputs.append(new_output("error", ename="OutputCut", evalue=note, traceback=[f"OutputCut: {note}"]))
                return cell

        execute_cell = run_sync(async_execute_cell)  # nbconvert calls the blocking one, bound to the parent's coroutine

        def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> Any:
            size = len(json.dumps(msg.get("content", {})))
            if self._kept + size > self.limits.output_bytes and msg.get("msg_type") != "error":  # an error decides a grade: kept
                if not self._cut:
                    self._cut = True
                    from nbformat.v4 import new_output

                    note = f"[output cut: this notebook printed more than {self.limits.output_bytes / 2**20:g} MB]\n"
                    outs.append(new_output("stream", name="stderr", text=note))
                return None
            self._kept += size
            return super().output(outs, msg, display_id, cell_index)

        def preprocess(self, nb: Any, resources: Any = None, km: Any = None) -> Any:
            if not self.sandbox:
                return super().preprocess(nb, resources, km)
            stopped = threading.Event()

            def stop_at_wall_time() -> None:
                if stopped.wait(self.limits.wall_seconds):
                    return
                group = getattr(self._manager, "group", None)
                if group is not None:
                    self._timed_out = True
                    group.kill()

            self._timed_out = False
            watchdog = threading.Thread(target=stop_at_wall_time, daemon=True)
            watchdog.start()
            try:
                return super().preprocess(nb, resources, km)
            except SandboxLimitError:
                raise
            except Exception as error:
                raise SandboxLimitError(self._why(getattr(self._manager, "events", {}), error)) from error
            finally:
                stopped.set()
                self._write_report(getattr(self._manager, "events", {}))

        def _reached(self, events: dict[str, int]) -> list[str]:
            """The limits the kernel reached, in the words of the grade's problem column."""
            reached = [f"stopped after its {self.limits.wall_seconds:g} s of wall time"] if self._timed_out else []
            if events.get("oom_kill"):
                reached.append(f"stopped at its memory limit ({self.limits.memory_bytes / 2**30:g} GiB)")
            if events.get("max"):
                reached.append(f"reached its limit of {self.limits.tasks} processes and threads")
            return reached

        def _why(self, events: dict[str, int], error: Exception) -> str:
            """Why the kernel stopped: every limit it reached, else the error nbclient raised."""
            first_line = (str(error).strip().splitlines() or [""])[0]
            return "; ".join(self._reached(events)) or f"the kernel stopped: {type(error).__name__}: {first_line}"

        def _write_report(self, events: dict[str, int]) -> None:
            if not self.report:
                return
            notes = self._reached(events)
            if self._cut:
                notes.append(f"printed more than {self.limits.output_bytes / 2**20:g} MB: the rest was cut")
            Path(self.report).write_text(json.dumps({"notes": notes}), encoding="utf-8")

    return SandboxedExecute


def __getattr__(name: str) -> Any:
    """``SandboxedExecute``, made on first use (importing nbgrader costs a second), for ``nbgrader_config.py``."""
    if name == "SandboxedExecute":
        value = execute_class()
        globals()[name] = value
        return value
    raise AttributeError(name)
