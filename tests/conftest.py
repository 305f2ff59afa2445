"""Shared test set-up: TensorFlow's logs quieted before any test module imports it; the expensive fixtures;
the markers that follow from them; and the guard that keeps a run without process tests free of processes.

**Markers follow from fixtures.** A test that uses a fixture of :data:`STARTS` (directly, through another
fixture, or with ``@pytest.mark.usefixtures``) starts a process, a server, a Jupyter kernel or a browser,
and is marked ``process`` at collection: ``make unit`` (``-m "not notebook and not process"``) leaves it
out, ``make test`` runs it. A notebook collected by nbval is marked ``notebook``. A test that starts a
process through the product's own code (a TensorBoard server, a JupyterLab, ``helpers.train`` in a process)
is still marked ``process`` by hand.

**The guard.** When the selected tests hold no ``process`` or ``notebook`` test (``make unit``, or any run of
unit tests alone), starting a Jupyter kernel or a process that imports TensorFlow or serves or renders
something (a Python, TensorBoard, Jupyter, nbgrader, Sphinx, Chromium: :func:`guarded_start`) fails the test
that did it, naming the fixture to use, even if the code under test caught the error: a unit test cannot
start a kernel. In a run with process tests, a test marked ``process`` by hand that started none of them is
named in a warning (a unit test that ``make unit`` leaves out).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from helpers import environment
from tests.kept import content_key, kept

if TYPE_CHECKING:
    from helpers.workbook.executor import Result


def pytest_configure(config: pytest.Config) -> None:
    """Quiet TensorFlow's logs in every process that runs tests, before collection imports any test module.

    Under xdist the controller runs no test: it skips the import (about 9 s of CPU before the workers start).
    """
    distributed = getattr(config.option, "numprocesses", None) not in (None, 0)
    controller = distributed and not hasattr(config, "workerinput")
    if not controller:
        environment.quiet_tensorflow_logs()

#: Every fixture that starts a process, a server, a kernel or a browser, and what it starts. A test that uses one is a ``process`` test.
STARTS: dict[str, str] = {
    "built_book": "sphinx-build, once per edition, on every chapter",
    "tiny_book": "sphinx-build, once per edition, on three tiny chapters",
    "failing_tiny_build": "sphinx-build on a tiny chapter with a broken link",
    "execute_notebook": "a Jupyter kernel for each notebook it executes",
    "python": "a Python process (this environment's interpreter, which may import TensorFlow)",
    "browser": "Chromium, through chromedriver",
    "graded_answers": "nbgrader, and a Jupyter kernel per returned notebook (chapter 03, with TensorFlow)",
    "graded_mechanics": "nbgrader, and a Jupyter kernel per returned notebook (a tiny chapter without TensorFlow)",
    "graded_hostile": "nbgrader, and a sandboxed Jupyter kernel per returned notebook (the tiny chapter, attacking the grader)",
    "graded_class": "nbgrader, and a sandboxed Jupyter kernel per returned notebook (the tiny chapter, graded four times)",
}

#: A POSIX time zone eight hours east of UTC (China's), which needs no tz database: the local time of :func:`time_zone`.
EAST_8 = "CST-8"


@pytest.fixture()
def time_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local time zone is :data:`EAST_8` for the test, and what it was afterwards."""
    import time

    monkeypatch.setenv("TZ", EAST_8)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


#: The run's status in the index of :func:`built_book`: every chapter ok in this many seconds but the last ...
BOOK_OK_SECONDS = 1.5
#: ... which failed after this many.
BOOK_FAILED_SECONDS = 2.0


# --- markers -------------------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        uses = sorted(set(getattr(item, "fixturenames", ())) & set(STARTS))
        if uses and not item.get_closest_marker("process"):
            item.add_marker(pytest.mark.process)
        if item.path.suffix == ".ipynb" and not item.get_closest_marker("notebook"):  # nbval's cells share a kernel
            item.add_marker(pytest.mark.notebook)


# --- the guard -----------------------------------------------------------------------------------------------

#: Whether this session's tests may start processes: set once collection is done (:func:`pytest_collection_finish`).
_GUARDED = pytest.StashKey[bool]()
#: The programs that a unit test may not start, by the start of their file name, and the fixture to use instead.
_GUARDED_PROGRAMS = {
    "python": "the python fixture (the interpreter to start), execute_notebook, or another fixture of tests/conftest.py's STARTS",
    "tensorboard": "a fixture of STARTS, or mark the test @pytest.mark.process",
    "jupyter": "execute_notebook, or a fixture of STARTS",
    "nbgrader": "graded_mechanics, graded_answers or graded_hostile",
    "sphinx": "built_book, tiny_book or failing_tiny_build",
    "chromium": "browser",
    "chromedriver": "browser",
}


class ProcessInUnitRun(RuntimeError):
    """A test of a run without process tests started a kernel or a process."""


def guarded_start(argv: Sequence[object]) -> str | None:
    """Why a run without process tests may not start ``argv``, naming the fixture to use; None if it may."""
    words = [os.fsdecode(word) if isinstance(word, bytes | os.PathLike) else str(word) for word in argv]
    if not words:
        return None
    program = os.path.basename(words[0])
    if any("ipykernel" in word for word in words):
        return f"a Jupyter kernel ({' '.join(words)[:120]}): use the execute_notebook fixture, which makes the test a process test"
    if words[0] == sys.executable or any(program.startswith(name) for name in _GUARDED_PROGRAMS):
        kind = next((name for name in _GUARDED_PROGRAMS if program.startswith(name)), "python")
        return f"a process ({' '.join(words)[:120]}): use {_GUARDED_PROGRAMS[kind]}"
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    heavy = any(item.get_closest_marker("process") or item.get_closest_marker("notebook") for item in session.items)
    session.config.stash[_GUARDED] = not heavy


@pytest.fixture(scope="session", autouse=True)
def _process_guard(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Every start of a kernel or a guarded process (:func:`guarded_start`), noted; in a run without process tests it also raises.

    Session-scoped and autouse, so it is in place before any other fixture of the session is set up.
    """
    started: list[str] = []
    guarded = request.config.stash.get(_GUARDED, False)
    original = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def note(popen: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> Any:
        why = guarded_start([args] if isinstance(args, str | bytes | os.PathLike) else list(args))
        if why:
            started.append(why)
            if guarded:
                raise ProcessInUnitRun(f"a run without process tests started {why}")
        return original(popen, args, *rest, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", note)
        yield started


@pytest.fixture(autouse=True)
def _no_process_in_a_unit_run(_process_guard: list[str], request: pytest.FixtureRequest) -> Iterator[None]:
    """In a run without process tests, fail the test that started what :func:`_process_guard` refused, even if the code under
    test caught the error (checked at set-up too: a fixture of a wider scope, set up for this test, may have started it).

    In a run with process tests, warn about a test marked ``process`` by hand that started nothing: a unit test left out of ``make unit``.
    """
    if not request.config.stash.get(_GUARDED, False):
        before = len(_process_guard)
        yield
        item = request.node
        if item.get_closest_marker("process") and not set(item.fixturenames) & set(STARTS) and len(_process_guard) == before:
            warnings.warn(pytest.PytestWarning(f"{item.nodeid} is marked process but started no kernel or guarded process"), stacklevel=1)
        return
    _fail_if_started(_process_guard)
    yield
    _fail_if_started(_process_guard, reported=request.node.stash.get(_FAILED, False))


def _fail_if_started(started: list[str], *, reported: bool = False) -> None:
    """Fail with the first start :func:`_process_guard` refused, unless the test already failed (with the guard's error, then)."""
    if started:
        why = started[0]
        started.clear()
        if not reported:
            pytest.fail(f"a run without process tests started {why}", pytrace=False)


#: Whether a test's call failed: its guard then has nothing more to say.
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        item.stash[_FAILED] = report.failed
    return report


# --- shared fixtures -----------------------------------------------------------------------------------------


class ExecuteNotebook(Protocol):
    """:func:`helpers.workbook.executor.execute`'s signature."""

    def __call__(
        self, notebook: Path, output: Path, parameters: dict[str, object], *, progress: bool = True, cwd: Path | None = None
    ) -> Result: ...


@pytest.fixture()
def execute_notebook() -> ExecuteNotebook:
    """Execute a notebook in a fresh Jupyter kernel (the runner's executor). A test that starts kernels in other ways
    (``python -m helpers.workbook run``, ``refresh``) asks for it too, with ``@pytest.mark.usefixtures``."""
    from helpers.workbook import executor

    return executor.execute


@pytest.fixture()
def python() -> str:
    """The interpreter to start a Python process with (this environment's); a test that asks for it is a process test."""
    return sys.executable


#: What the whole book is built from: a change to one of these builds it again (see :func:`built_book`).
#: The files a chapter shows whole are book.SHOWN_SOURCES (not imported here: conftest stays light; a test compares them).
BOOK_INPUTS = (
    "notebooks",
    "helpers/workbook",
    "helpers/resume_lab.py",
    "helpers/train/step.py",
    "helpers/train/calls.py",
    "LICENSE",
    "LICENSE-docs",
    "requirements.txt",
)


@pytest.fixture(scope="session")
def built_book() -> Path:
    """The whole book in both editions from the stored notebooks, as ``make run`` builds it: its folder (``index.html`` leads on).

    The run it shows: every chapter ok in :data:`BOOK_OK_SECONDS`, but the last, which failed after :data:`BOOK_FAILED_SECONDS`.
    Built once for all the tests that use it, whichever worker runs them, and kept while :data:`BOOK_INPUTS` are
    unchanged (:func:`kept`, in ``build/test-book/``), as the chapter runs are.
    """
    from helpers.paths import NOTEBOOKS_DIR
    from helpers.workbook import book, executor

    def build(folder: Path) -> None:
        chapters = [book.Chapter(path, ok=True, seconds=BOOK_OK_SECONDS) for path in executor.notebooks()]
        chapters[-1] = book.Chapter(chapters[-1].notebook, ok=False, seconds=BOOK_FAILED_SECONDS)
        index = book.build_book(chapters, folder / "book", notebooks_dir=NOTEBOOKS_DIR)
        assert index == folder / "book" / "index.html"

    return kept("test-book", content_key(BOOK_INPUTS, BOOK_OK_SECONDS, BOOK_FAILED_SECONDS), build) / "book"
