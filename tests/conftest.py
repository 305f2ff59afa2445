"""Shared test set-up: import TensorFlow once, quietly, before any test module does; share the tests out over xdist's workers.

``make test`` runs ``pytest -n 2 --dist loadfile``. xdist's ``loadfile`` keeps every file on one
worker, which nbval needs (a notebook's cells share one kernel and run in order) and module-scoped
fixtures expect. It also queued the ten papermill runs of ``tests/test_notebooks.py``, the suite's
longest tests, on one worker. :class:`SpreadScheduling` is ``loadfile`` with that one exception:
each papermill run is a work unit of its own (each starts its own kernel and build folder), so the
two workers share them out as they free up.

(``--dist loadgroup`` with ``xdist_group`` marks would say the same, but xdist 3.8 marks a group by
rewriting ``item._nodeid``, which pytest 9 no longer reads: every test became a unit of its own and
the notebooks' cells were split across workers.)
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

from helpers import environment

environment.quiet_tensorflow_logs()

#: Tests whose parametrized runs are spread over the workers one by one.
SPREAD_TESTS = ("tests/test_notebooks.py::test_notebook_runs_with_other_parameters_and_answers[",)


def work_unit(nodeid: str) -> str:
    """The unit a test runs in: its file, or the test itself for a run of :data:`SPREAD_TESTS`."""
    if nodeid.startswith(SPREAD_TESTS):
        return nodeid
    return nodeid.split("::", 1)[0]


class SpreadScheduling(LoadFileScheduling):
    """``--dist loadfile``, except that every run of :data:`SPREAD_TESTS` is a unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> SpreadScheduling | None:
    """Replace xdist's ``loadfile`` scheduler with :class:`SpreadScheduling`; other ``--dist`` modes stay as they are."""
    if config.getoption("dist") != "loadfile":
        return None
    return SpreadScheduling(config, log)
