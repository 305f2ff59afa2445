"""The grading sandbox's parts, without starting it: what it binds, its limits, its control groups, its refusals.

The sandbox at work, with hostile returned notebooks graded beside an honest one, is in ``tests/test_workbook_course.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers.paths import repo_root
from helpers.workbook import sandbox
from helpers.workbook.commands import main


def _pairs(arguments: list[str], option: str) -> list[tuple[str, str]]:
    return [(arguments[index + 1], arguments[index + 2]) for index, value in enumerate(arguments) if value == option]


def test_the_kernel_sees_python_helpers_data_and_the_returned_folder_and_nothing_else_of_the_repository(tmp_path: Path) -> None:
    returned, sockets = tmp_path / "submitted" / "ada" / "03", tmp_path / "sockets"
    arguments = sandbox.bwrap_arguments(returned, sockets, sandbox.Limits())
    read_only = dict(_pairs(arguments, "--ro-bind"))
    root = repo_root()
    assert read_only[str(root / "helpers")] == str(root / "helpers") and read_only[str(root / "data")] == str(root / "data")
    assert read_only[str(Path(sys.prefix).resolve())] == str(Path(sys.prefix).resolve())
    assert read_only[str(returned)] == "/sandbox/returned"  # the student's own folder, read-only; the kernel works in a copy
    assert not [source for source in read_only if Path(source) in (root, root / "notebooks", root / "build", tmp_path)]  # no solutions, no course
    assert _pairs(arguments, "--bind") == [(str(sockets), str(sockets))]  # the only writable folder of this machine: the kernel's sockets
    assert {"--unshare-all", "--die-with-parent", "--clearenv", "--new-session"} <= set(arguments) and "--share-net" not in arguments
    assert dict(_pairs(arguments, "--setenv"))["WORKBOOK_BUILD_DIR"] == "/sandbox/build"
    assert arguments[arguments.index("--remount-ro") + 1] == "/"  # the folders bwrap made for the mounts are not writable either
    assert not [target for _, target in _pairs(arguments, "--ro-bind-try") if not target.startswith("/etc/")]


def test_the_command_copies_the_returned_folder_then_starts_the_program(tmp_path: Path) -> None:
    command = sandbox.command(tmp_path, tmp_path, sandbox.Limits(), ["python", "-m", "ipykernel_launcher"])
    separator = command.index("--")
    assert command[0] == sandbox.BWRAP and command[separator + 1 : separator + 3] == ["/bin/sh", "-c"]
    assert "cp -R /sandbox/returned/. /sandbox/work/" in command[separator + 3] and command[-3:] == ["python", "-m", "ipykernel_launcher"]


@pytest.mark.parametrize("name", ["memory_bytes", "tasks", "wall_seconds", "output_bytes"])
def test_a_limit_must_be_positive(name: str) -> None:
    with pytest.raises(ValueError, match=f"Limits.{name} must be positive"):
        sandbox.Limits(**{name: 0})


def _cgroup_v1(root: Path) -> Path:
    for controller in ("memory", "pids"):
        (root / controller).mkdir(parents=True)
    return root


def _cgroup_v2(root: Path) -> Path:
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / "cgroup.subtree_control").write_text("cpu\n")
    return root


def test_a_control_group_in_cgroup_v1_writes_the_memory_and_tasks_limits_and_reads_its_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "_own_cgroups", lambda: {"memory": "/", "pids": "/"})
    root = _cgroup_v1(tmp_path / "cgroup")
    group = sandbox.ControlGroup.create(sandbox.Limits(memory_bytes=3 * 2**30, tasks=99), root)
    memory, pids = group.folders["memory"], group.folders["pids"]
    assert (memory / "memory.limit_in_bytes").read_text() == str(3 * 2**30) and (pids / "pids.max").read_text() == "99"
    assert group.procs == [memory / "cgroup.procs", pids / "cgroup.procs"]
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (pids / "pids.events").write_text("max 7\n")
    assert group.events() == {"oom_kill": 2, "max": 7}


def test_a_control_group_in_cgroup_v2_enables_the_controllers_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "_own_cgroups", lambda: {"": "/"})
    root = _cgroup_v2(tmp_path / "cgroup")
    group = sandbox.ControlGroup.create(sandbox.Limits(memory_bytes=2**30, tasks=50), root)
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (group.folders[""] / "memory.max").read_text() == str(2**30) and (group.folders[""] / "pids.max").read_text() == "50"


def test_no_control_group_is_a_reason_not_to_grade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OSError, match="no cgroup v2 with the memory and pids controllers"):
        sandbox.ControlGroup.create(sandbox.Limits(), tmp_path)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    assert sandbox.problem().startswith("bwrap is not installed (Debian: apt-get install bubblewrap")


def test_grading_without_a_sandbox_refuses_in_one_line_that_names_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path))
    (tmp_path / "course" / "source" / "03").mkdir(parents=True)
    (tmp_path / "course" / "submitted" / "ada" / "03").mkdir(parents=True)
    monkeypatch.setattr(sandbox, "problem", lambda limits=None: "bwrap is not installed")
    assert main(["grade"]) == sandbox.SandboxUnavailable.exit_status == 5
    error = capsys.readouterr().err.strip().splitlines()
    said = "cannot grade in a sandbox: bwrap is not installed; --unsafe-no-sandbox grades with your own rights, at your own risk"
    assert error == [f"python -m helpers.workbook: error: {said}"]


def test_a_python_environment_that_holds_the_course_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Binding it read-only would show the kernel the whole course: its solutions and the gradebook."""
    monkeypatch.setattr(sandbox, "read_only_paths", lambda: [tmp_path])
    with pytest.raises(sandbox.SandboxUnavailable, match="holds the returned notebooks"):
        sandbox.bwrap_arguments(tmp_path / "course" / "autograded" / "ada" / "03", tmp_path / "sockets", sandbox.Limits())
