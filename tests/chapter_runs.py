"""Every chapter executed once per parameter set: papermill prepares the answered copy, nbval executes and validates it.

For each chapter ``notebooks/NN_name.ipynb`` and each entry of :data:`RUNS`, this plugin writes a prepared copy,
``build/test-runs/<run>/notebooks/NN_name.ipynb``: every exercise answered (the stored stub and check first, then
each wrong and each right answer with the check and an assert on its verdict: :func:`helpers.workbook.exercise_layout.with_answers`),
and the run's parameters injected by papermill's own ``parameterize_notebook``. nbval collects that copy and
executes it in one kernel, started in the copy's folder with ``WORKBOOK_BUILD_DIR`` set to the run's own
``build/test-runs/<run>/build`` (and, for the other kernels, ``TF_ENABLE_ONEDNN_OPTS`` set to the opposite of
this machine's default):

- ``default``: the chapter's own parameters, this machine's kernels, strict: every stored code cell's fresh
  outputs must equal its stored ones under ``tests/nbval_sanitize.cfg`` (each exercise's untouched check
  printing its stored "not solved yet" included); the cells the answers add are tagged
  ``nbval-ignore-output``, so they run, their asserts included, without being compared;
- ``other-seed-fast-other-kernels``: ``SEED=1234, FAST=True`` in the other family of CPU kernels (CONTRIBUTING.md,
  *Kernel configurations*), lax: every cell and assert must run, the outputs (which depend on the seed) are
  not compared.

So each check meets every wrong and right answer at two seeds, in both modes and in both kernel families,
and each chapter runs twice per ``make test``. A last item per copy checks that the chapter wrote under its own
build folder, then records the pass in the cache (:mod:`helpers.workbook.cache`) under :func:`validation_key`
(the copy's code, not its prose; the stored outputs; the comparison rules): while that key holds, a local
run reports the copy as *skipped* ("cached", with its key) instead of executing it. ``WORKBOOK_CACHE=0``
executes everything; a fresh clone (CI) has no cache.

Scheduling (pytest-xdist's ``--dist loadfile``): each copy is a file, so a unit of its own (its cells share a
kernel and run in order on one worker), as is every test file. The units start longest first: the chapter runs,
by their last measured time (``build/test-runs/durations.json``) or the notebook's size, then the rest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbval.plugin import IPyNbCell, IPyNbFile

from helpers.environment import ONEDNN_VARIABLE
from helpers.paths import NOTEBOOKS_DIR, build_root, repo_root
from helpers.workbook import cache, executor, exercise_layout

#: A chapter's notebook file, as the workbook names them.
CHAPTER_GLOB = "[0-9][0-9]_*.ipynb"
#: What the other-kernels run sets ONEDNN_VARIABLE to, in the key (the value itself is known only once TensorFlow loads).
OPPOSITE = "the opposite of this machine's default"
#: The files whose rules decide a validation, besides the chapter: a change to one validates every chapter again.
RULES = (Path(__file__), repo_root() / "tests" / "nbval_sanitize.cfg")


@dataclass(frozen=True)
class ChapterRun:
    """One way each chapter is executed in the test suite."""

    name: str
    parameters: dict[str, object] = field(default_factory=dict)  #: injected over the chapter's own defaults
    other_kernels: bool = False  #: TF_ENABLE_ONEDNN_OPTS set to the opposite of this machine's default
    strict: bool = True  #: outputs compared with the stored ones (nbval), else only run (nbval's lax mode)


#: The two runs of every chapter: together, both seeds, both modes and both kernel families.
RUNS = (
    ChapterRun("default"),
    ChapterRun("other-seed-fast-other-kernels", {"SEED": 1234, "FAST": True}, other_kernels=True, strict=False),
)


def chapters_dir() -> Path:
    """The folder whose chapters are collected: ``notebooks/``, or ``$WORKBOOK_CHAPTERS_DIR`` (the plugin's own test)."""
    override = os.environ.get("WORKBOOK_CHAPTERS_DIR")
    return Path(override).resolve() if override else NOTEBOOKS_DIR


def runs_root() -> Path:
    """``build/test-runs``: per run, the prepared copies (``notebooks/``) and the chapters' build folders (``build/``)."""
    return build_root() / "test-runs"


def prepared(stored: Any, run: ChapterRun) -> Any:
    """The copy of ``stored`` that ``run`` executes: every exercise answered, the run's parameters injected by papermill."""
    from papermill.parameterize import parameterize_notebook

    answered = exercise_layout.with_answers(stored)
    for cell in answered.cells:  # what papermill's own reader adds before it parameterizes a notebook
        cell.metadata.setdefault("tags", [])
    answered.metadata["papermill"] = nbformat.NotebookNode()
    return parameterize_notebook(answered, {**cache.notebook_parameters(stored), **run.parameters})


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` atomically (both xdist workers prepare the same copies at once), unless it is there already."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, partial.with_name(path.name))


def executed_part(notebook: Any) -> dict[str, Any]:
    """What a kernel executes of ``notebook`` and nbval compares: its code cells (source, metadata, outputs) and the
    notebook's metadata; not the prose, nor the cells' ids (the cells the answers add get new ones each time)."""
    cells = [{name: value for name, value in cell.items() if name != "id"} for cell in notebook.cells if cell.cell_type == "code"]
    return {"cells": cells, "metadata": notebook.metadata}


def validation_key(stored: Any, run: ChapterRun, copy: Any = None) -> str:
    """The cache key of ``run`` on the chapter: the content key of its prepared copy's code (the answers included, the
    prose not: an edit of the prose cannot change what the kernel does), plus, for a strict run, the stored outputs it
    is compared with, and the comparison rules. ``copy`` is :func:`prepared`'s result when the caller has it."""
    environment = {ONEDNN_VARIABLE: OPPOSITE} if run.other_kernels else {ONEDNN_VARIABLE: os.environ.get(ONEDNN_VARIABLE, "")}
    code = executed_part(prepared(stored, run) if copy is None else copy)
    outputs = json.dumps([cell["outputs"] for cell in executed_part(stored)["cells"]], sort_keys=True).encode() if run.strict else b""
    extra = [outputs, *(rule.read_bytes() for rule in RULES), run.name.encode()]
    return cache.key(code, {**cache.notebook_parameters(stored), **run.parameters}, environment, extra=extra)


class ChapterRunFile(IPyNbFile):
    """nbval's notebook collector for one prepared copy, with the run's comparison mode, environment and cache."""

    def __init__(self, *args: Any, run: ChapterRun, source: Path, run_key: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run, self.source, self.run_key = run, source, run_key
        self.compare_outputs = run.strict
        self.cached = cache.lookup("validated", run_key)
        self.cells_collected = 0
        self.cells_passed = 0
        self.failures = 0

    def collect(self) -> Iterator[pytest.Item]:
        if self.cached is not None:
            item = CachedChapterRun.from_parent(self, name="cached")
            reason = (
                f"cached: {self.source.stem} ({self.run.name}) passed its validation with key {cache.short(self.run_key)} "
                f"at {self.cached.get('recorded', '?')}; {cache.CACHE_VARIABLE}=0 executes it again"
            )
            item.add_marker(pytest.mark.skip(reason=reason))  # a mark, so the report names this copy, not this file
            yield item
            return
        for item in super().collect():
            item.add_marker(pytest.mark.notebook)
            self.cells_collected += 1
            yield item
        yield ChapterRunEnd.from_parent(self, name="wrote under its build folder")

    def environment(self) -> dict[str, str]:
        """The variables the kernel starts with: the run's build area and, for the other kernels, the other family."""
        variables = {"WORKBOOK_BUILD_DIR": str(runs_root() / self.run.name / "build")}
        if self.run.other_kernels:
            from helpers.environment import onednn_enabled

            variables[ONEDNN_VARIABLE] = "0" if onednn_enabled() else "1"
        return variables

    def setup(self) -> None:
        if self.cached is not None:
            return
        with executor.environment(self.environment()):  # the kernel nbval starts inherits them; this worker's own tests do not
            super().setup()


class CachedChapterRun(pytest.Item):
    """Stands for a prepared copy whose validation already passed with the same key: reported as skipped, never as passed."""

    def runtest(self) -> None:  # never called: collected with a skip mark
        raise AssertionError("a cached chapter run is skipped, not run")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.parent.name if self.parent else ''}: cached"


class ChapterRunEnd(pytest.Item):
    """After the last cell: the chapter wrote under its own build folder; if every cell passed, the pass is cached."""

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, ChapterRunFile)
        chapter = parent.source.stem
        assert (runs_root() / parent.run.name / "build" / chapter).is_dir(), f"{chapter} wrote nothing under its own build folder"
        strays = sorted(path.name for path in self.path.parent.iterdir() if path.suffix != ".ipynb" and not path.name.startswith("."))
        assert not strays, f"files written beside the notebook, outside the build folder: {strays}"
        if parent.failures == 0 and parent.cells_passed == parent.cells_collected:
            cache.record("validated", parent.run_key, {"chapter": chapter, "run": parent.run.name, "cells": parent.cells_collected})

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.parent.name if self.parent else ''}: {self.name}"


class ChapterFile(pytest.File):
    """A chapter: its collectors are the prepared copies, one per run (:data:`RUNS`)."""

    def collect(self) -> Iterator[pytest.Collector]:
        stored = nbformat.read(self.path, as_version=4)
        for run in RUNS:
            copy = runs_root() / run.name / "notebooks" / self.path.name
            answered = prepared(stored, run)
            _write_if_changed(copy, nbformat.writes(answered) + "\n")
            key = validation_key(stored, run, answered)
            yield ChapterRunFile.from_parent(self, path=copy, run=run, source=self.path, run_key=key)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ChapterFile | None:
    """A chapter of ``notebooks/`` is collected as its prepared copies; nbval (without ``--nbval``) collects nothing itself."""
    if file_path.parent == chapters_dir() and file_path.match(CHAPTER_GLOB):
        return ChapterFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    parent = item.parent
    if isinstance(parent, ChapterRunFile) and isinstance(item, IPyNbCell):
        if report.failed:
            parent.failures += 1
        elif report.when == "call" and report.passed:
            parent.cells_passed += 1


#: How many units apart the two runs of one chapter start (see :func:`pytest_collection_modifyitems`).
SPACING = 3


def _durations() -> dict[str, float]:
    path = runs_root() / "durations.json"
    try:
        return {str(name): float(seconds) for name, seconds in json.loads(path.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The chapter runs first, the longest first (by their last measured time, else the notebook's size), then the rest.

    Under ``--dist loadfile`` each prepared copy is a unit of its own and pytest-xdist hands out the units in this
    order, so no long unit starts last. The two runs of one chapter are at least :data:`SPACING` units apart: on two
    workers, near ones would run at the same time, and chapters 08 and 09 start processes and clusters of their own
    that then compete.
    (``--dist loadgroup`` cannot group units: pytest-xdist 3.8 marks a group by rewriting ``item._nodeid``, which
    pytest 9.2 no longer reads.)
    """
    known = _durations()
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        parent = item.parent
        units.setdefault(parent.nodeid if isinstance(parent, ChapterRunFile) else "", []).append(item)
    runs = [name for name in units if name]
    weight = {name: known.get(name, next(iter(units[name])).parent.source.stat().st_size / 10_000) for name in runs}  # type: ignore[union-attr]
    pending = sorted(runs, key=lambda name: -weight[name])
    order: list[str] = []
    while pending:
        recent = {Path(name).name for name in order[-SPACING:]}
        pick = next((name for name in pending if Path(name).name not in recent), pending[0])
        pending.remove(pick)
        order.append(pick)
    items[:] = [item for name in order for item in units[name]] + units.get("", [])


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Keep the chapter runs' measured times, so the next run starts the longest first."""
    if hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    totals: dict[str, float] = {}
    for outcome, reports in reporter.stats.items():
        if outcome not in ("passed", "failed", "error"):
            continue  # a cached run's skip says nothing of its time
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            if nodeid.startswith("build/") and ".ipynb::" in nodeid:
                file = nodeid.split("::")[0]
                totals[file] = totals.get(file, 0.0) + float(getattr(report, "duration", 0.0))
    if totals:
        merged = {**_durations(), **{name: round(seconds, 1) for name, seconds in totals.items()}}
        _write_if_changed(runs_root() / "durations.json", json.dumps(merged, indent=1, sort_keys=True) + "\n")
