"""The capstone: one training run that survives being killed and resumes bit-identically (chapters 08 and 09).

Chapters 01-07 each taught one piece; this package puts them together in one loop, and chapter 09
runs the same loop under ``tf.distribute`` (``--strategy mirrored`` or ``multiworker``):

- the global step is ``optimizer.iterations`` (chapter 01): the loop, the schedule, the logs and
  the checkpoint names all read it; under a strategy it still counts global steps;
- a train step with ``tf.GradientTape`` (chapter 02) run on every replica by ``strategy.run``; the
  per-replica gradients are summed across replicas (the all-reduce) *before* clipping, so the
  update is the one a single device would make (:mod:`helpers.train.step`);
- clipping by global norm through :class:`helpers.clipping.ClippingMonitor` (chapter 03);
- a Keras ``CosineDecay`` schedule with linear warmup (chapter 04, :mod:`helpers.train.parts`);
- :class:`helpers.checkpoints.TrainingCheckpoint` holding the model, the optimizer, the Dropout
  seed-generator states, the monitor **and the data position** (chapter 05), so a resume in the
  middle of an epoch draws the very batches the uninterrupted run would have drawn;
- TensorBoard scalars keyed on the global step, validation in a separate run (chapter 06);
- a numerics guard: an update whose gradient norm is not finite is skipped (chapters 03, 07), and
  the run stops with ``FloatingPointError`` once :data:`MAX_NON_FINITE_STEPS` were skipped;
- Ctrl-C (SIGINT) and SIGTERM save a checkpoint at the step reached and stop (:mod:`helpers.train.signals`).

The modules, each with one job: :mod:`~helpers.train.config` (what defines a run) and
:mod:`~helpers.train.run_folder` (where it writes), both TensorFlow-free; :mod:`~helpers.train.cluster`
(``TF_CONFIG``, a lost worker, the workers' temporary folders) and :mod:`~helpers.train.strategies`; :mod:`~helpers.train.parts` (the run's
model, optimizer, data and checkpoint, made by :func:`build`); :mod:`~helpers.train.step` (the train
step and ``train_until``, the ``tf.function`` that runs many of them per call);
:mod:`~helpers.train.calls` (the Python loop of calls); :mod:`~helpers.train.run` (one run:
:func:`train`); :mod:`~helpers.train.saver` and :mod:`~helpers.train.signals`;
:mod:`~helpers.train.results` (``result.json`` and the fingerprint); :mod:`~helpers.train.cli` (the
command and its exit statuses); :mod:`~helpers.train.launch` (starting and signalling the command).

Use it as a library (:class:`TrainConfig`, :func:`build`, :func:`train`) or as a command::

    python -m helpers.train --run-dir build/demo --steps 200 --dropout 0.2
    # killed or stopped? run the same command again: it resumes from the latest checkpoint

Importing this package does not import TensorFlow: the names defined beside TensorFlow
(:func:`build`, :func:`train` ...) load their module on first use, and those modules call
``helpers.quiet_tensorflow_logs()`` before they import it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from helpers.train.cli import (
    CRASH_EXIT_CODE,
    DATA_EXIT_CODE,
    MISMATCH_EXIT_CODE,
    NO_SPACE_EXIT_CODE,
    NON_FINITE_EXIT_CODE,
    PEER_LOST_EXIT_CODE,
    USAGE_EXIT_CODE,
    config_from_args,
    hooks_from_args,
    main,
    make_parser,
)
from helpers.train.cluster import ClusterConfigError, PeerLostError, WorkerRole, local_tf_configs, worker_role
from helpers.train.config import (
    MAX_DEFAULT_WARMUP_STEPS,
    MIRRORED_REPLICAS,
    STRATEGIES,
    ConfigError,
    TrainConfig,
    config_options,
    default_text,
    option_name,
)
from helpers.train.launch import Finished, finish, signal_at_step, start, start_workers, stop
from helpers.train.results import TrainResult, fingerprint, state_fingerprint
from helpers.train.run_folder import RunFolder, RunFolderBusyError, RunFolderError
from helpers.train.signals import Interrupted, interrupt_exit_code

if TYPE_CHECKING:  # pragma: no cover
    from helpers.train.calls import StepHook, call_end, run_calls
    from helpers.train.parts import RunParts, build, make_schedule
    from helpers.train.run import evaluate, restore, train
    from helpers.train.step import MAX_NON_FINITE_STEPS, check_not_diverged, make_train_step, make_train_until
    from helpers.train.strategies import StrategyError, make_strategy, split_cpu

#: Names whose module imports TensorFlow: loaded on first use (PEP 562), so ``import helpers.train`` stays light.
_WITH_TENSORFLOW = {
    "helpers.train.calls": ("StepHook", "call_end", "run_calls"),
    "helpers.train.parts": ("RunParts", "build", "make_schedule"),
    "helpers.train.run": ("evaluate", "restore", "train"),
    "helpers.train.step": ("MAX_NON_FINITE_STEPS", "check_not_diverged", "make_train_step", "make_train_until"),
    "helpers.train.strategies": ("StrategyError", "make_strategy", "split_cpu"),
}
_MODULE_OF = {name: module for module, names in _WITH_TENSORFLOW.items() for name in names}


if not TYPE_CHECKING:  # mypy sees the imports above instead, so a name that does not exist is an error

    def __getattr__(name: str) -> Any:
        if name in _MODULE_OF:
            return getattr(importlib.import_module(_MODULE_OF[name]), name)
        raise AttributeError(f"module 'helpers.train' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*globals(), *_MODULE_OF])


__all__ = [
    "CRASH_EXIT_CODE", "DATA_EXIT_CODE", "MAX_DEFAULT_WARMUP_STEPS", "MAX_NON_FINITE_STEPS", "MIRRORED_REPLICAS", "MISMATCH_EXIT_CODE",
    "NO_SPACE_EXIT_CODE", "NON_FINITE_EXIT_CODE", "PEER_LOST_EXIT_CODE", "STRATEGIES", "USAGE_EXIT_CODE", "ClusterConfigError", "ConfigError",
    "Finished", "Interrupted", "PeerLostError", "RunFolder", "RunFolderBusyError", "RunFolderError", "RunParts", "StepHook", "StrategyError",
    "TrainConfig", "TrainResult", "WorkerRole", "build", "call_end", "check_not_diverged", "config_from_args", "config_options", "default_text",
    "evaluate", "fingerprint", "finish", "hooks_from_args",
    "interrupt_exit_code", "local_tf_configs", "main", "make_parser", "make_schedule", "make_strategy", "make_train_step",
    "make_train_until", "option_name", "restore", "run_calls", "signal_at_step", "split_cpu", "start", "start_workers",
    "state_fingerprint", "stop", "train", "worker_role",
]
