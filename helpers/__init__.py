"""Plumbing for the TensorFlow 2 training-utilities workbook.

The notebooks keep the TensorFlow calls they teach in plain sight; this package holds
everything else: quiet logs and version checks (:mod:`helpers.environment`), seeding
(:mod:`helpers.seeding`), the check of the notebook parameters (:mod:`helpers.parameters`), per-notebook build folders (:mod:`helpers.paths`), showing an
expected error (:mod:`helpers.errors`), the bundled data (:mod:`helpers.data`), figures
(:mod:`helpers.plots`), the one line a folded check cell prints (:mod:`helpers.checks`) and the exercises'
self-checks (:mod:`helpers.exercises`). The project's own
machinery, which no chapter imports (the executor, ``make lab``, the book, the glossary's checks, the
exercises' layout, the drift guard), is the subpackage :mod:`helpers.workbook`.

Importing this package never imports TensorFlow, so :func:`quiet_tensorflow_logs` can run
before the first ``import tensorflow``.
"""

from helpers.checks import checked
from helpers.environment import check_versions, quiet_tensorflow_logs
from helpers.errors import CaughtError, expect_error
from helpers.parameters import ParameterError, check_parameters
from helpers.paths import build_root, display_path, repo_root, run_dir
from helpers.seeding import set_seed

__all__ = [
    "CaughtError",
    "ParameterError",
    "build_root",
    "check_parameters",
    "check_versions",
    "checked",
    "display_path",
    "expect_error",
    "quiet_tensorflow_logs",
    "repo_root",
    "run_dir",
    "set_seed",
]
