"""Quiet TensorFlow's start-up logging and check the installed versions.

Why quiet logs matter here: while it starts, TensorFlow's C++ runtime writes lines such as
``I0000 ... port.cc:153] oneDNN custom operations are on`` and ``E0000 ... failed call to
cuInit`` to the process's stderr. Under ``pytest --nbval`` the kernel does not capture
C-level stderr, so a notebook stored with those lines would fail strict validation.

In TensorFlow 2.21 ``TF_CPP_MIN_LOG_LEVEL`` alone does not remove them: they are written
by Abseil before its logging is initialised, when no level applies yet (checked in
``tests/test_environment_seeding.py``). So :func:`quiet_tensorflow_logs` sets the level for later
messages and imports TensorFlow once with file descriptor 2 pointed at ``/dev/null``,
including the device discovery that triggers the CUDA probe.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata

_quieted = False  # set once quiet_tensorflow_logs() has imported TensorFlow

#: Oldest (major, minor) versions the workbook is written for; requirements.txt pins these.
MIN_VERSIONS: dict[str, tuple[int, int]] = {"tensorflow": (2, 21), "keras": (3, 15)}


#: Other distributions that install the same import package (the nightly builds ``make drift --nightly`` runs).
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"tensorflow": ("tensorflow", "tf-nightly"), "keras": ("keras", "keras-nightly")}


class VersionError(RuntimeError):
    """An installed library is older than the workbook needs."""


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at ``/dev/null`` for the block (C/C++ writes vanish).

    Python's ``sys.stderr`` object is flushed first and works again afterwards.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w", encoding="utf-8") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def quiet_tensorflow_logs(level: int = 3) -> None:
    """Import TensorFlow without its start-up log lines, and keep later ones at ``level``.

    Call it before the first ``import tensorflow`` (a later call warns: the lines were
    already written). ``level`` is ``TF_CPP_MIN_LOG_LEVEL``: 1 hides C++ INFO lines, 2 also
    WARNING, 3 (the default) also ERROR. The default is 3 because ``model.fit`` under op
    determinism logs a harmless ERROR line (``NodeDef mentions attribute
    use_unbounded_threadpool ...``) that would otherwise land in notebook outputs; real
    failures still raise Python exceptions. TensorFlow's Python logger is set to ERROR,
    which hides the deprecation notices of the ``tf.compat.v1`` APIs that the notebooks
    show on purpose.
    """
    if isinstance(level, bool) or level not in (0, 1, 2, 3):
        raise ValueError(f"level must be 0, 1, 2 or 3, got {level!r}")
    global _quieted
    if _quieted:  # a script imported by a notebook calls it again: nothing left to do
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = str(level)
        return
    if "tensorflow" in sys.modules:
        warnings.warn(
            "quiet_tensorflow_logs() called after tensorflow was imported: "
            "its start-up log lines were already written",
            stacklevel=2,
        )
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = str(level)
    with native_stderr_silenced():
        import tensorflow as tf

        tf.config.list_physical_devices()  # device discovery: the CUDA probe logs here
    tf.get_logger().setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="tensorflow")
    _quieted = True


def _major_minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError) as exc:
        raise VersionError(f"cannot read a major.minor version from {version!r}") from exc


def installed_version(*distributions: str) -> str | None:
    """The version of the first of ``distributions`` that is installed, or ``None`` when none is.

    The workbook's one installed-version lookup: :func:`check_versions` (a package by any of its
    :data:`DISTRIBUTIONS`), ``make drift``'s list of the versions in its environment and the benchmarks'
    machine line all read versions through it.
    """
    for distribution in distributions:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


def _installed_version(package: str) -> str:
    """The version of the first installed distribution of ``package`` (:data:`DISTRIBUTIONS`), or :class:`VersionError`."""
    version = installed_version(*DISTRIBUTIONS.get(package, (package,)))
    if version is None:
        raise VersionError(f"{package} is not installed; run `make test` or `pip install -r requirements.txt`")
    return version


def check_versions(minimum: dict[str, tuple[int, int]] | None = None, *, show: bool = True) -> dict[str, str]:
    """Return ``{package: version}`` and raise :class:`VersionError` if one is too old.

    ``minimum`` defaults to :data:`MIN_VERSIONS`. With ``show`` the versions are printed
    (with Python's), which is what the setup cell of every notebook displays.
    """
    minimum = MIN_VERSIONS if minimum is None else minimum
    found: dict[str, str] = {}
    for package, (major, minor) in minimum.items():
        version = _installed_version(package)
        if _major_minor(version) < (major, minor):
            raise VersionError(
                f"{package} {version} is older than {major}.{minor}, the version this workbook "
                f"is written for; install requirements.txt"
            )
        found[package] = version
    if show:
        python = ".".join(str(part) for part in sys.version_info[:2])
        print("Python", python, "| " + " | ".join(f"{name} {version}" for name, version in found.items()))
    return found


#: The environment variable that turns TensorFlow's oneDNN CPU kernels on ("1") or off ("0") in every
#: process started after it is set; unset, TensorFlow decides from the CPU.
ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def onednn_enabled() -> bool:
    """Whether this process's TensorFlow runs oneDNN's CPU kernels (fused MatMul+BiasAdd+Relu and others) or Eigen's.

    It reads TensorFlow's own answer, ``tensorflow.python.util._pywrap_util_port.IsMklEnabled()``: a
    private function (TF 2.21) that applies :data:`ONEDNN_VARIABLE` and, when it is unset, the CPU's
    features. Some results differ between the two families (a NaN through a fused ReLU, the kernel names
    in a profile, the last digits of a loss): the chapters that show one print this condition.
    Imports TensorFlow.
    """
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())
