"""helpers.environment and helpers.seeding."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from helpers import environment, paths
from helpers.seeding import set_seed


def _run(python: str, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"} | env
    return subprocess.run([python, "-c", code], capture_output=True, text=True, env=environ, timeout=300, check=True)


def test_min_versions_match_requirements_pins() -> None:
    pins = dict(re.findall(r"^([a-z-]+)==(\S+)$", (paths.repo_root() / "requirements.txt").read_text(), re.MULTILINE))
    for package, (major, minor) in environment.MIN_VERSIONS.items():
        assert environment._major_minor(pins[package]) == (major, minor), package


def test_check_versions_reports_and_refuses_old_versions(capsys: pytest.CaptureFixture[str]) -> None:
    found = environment.check_versions()
    assert set(found) == {"tensorflow", "keras"}
    printed = capsys.readouterr().out
    assert printed.startswith("Python 3.") and f"tensorflow {found['tensorflow']}" in printed
    with pytest.raises(environment.VersionError, match="tensorflow .* is older than 99.0"):
        environment.check_versions({"tensorflow": (99, 0)}, show=False)
    with pytest.raises(environment.VersionError, match="not installed"):
        environment.check_versions({"no-such-package-here": (1, 0)}, show=False)


def test_quiet_tensorflow_logs_rejects_bad_levels() -> None:
    with pytest.raises(ValueError, match="level must be"):
        environment.quiet_tensorflow_logs(7)


def test_quiet_tensorflow_logs_is_idempotent_but_warns_after_a_plain_import(python: str) -> None:
    again = _run(python, "import helpers, warnings; warnings.simplefilter('error'); helpers.quiet_tensorflow_logs(); helpers.quiet_tensorflow_logs()")
    assert again.stderr == ""
    late = _run(python, "import tensorflow, helpers; helpers.quiet_tensorflow_logs()")
    assert "called after tensorflow was imported" in late.stderr


def test_tf_cpp_min_log_level_alone_leaves_start_up_lines_but_the_helper_removes_them(python: str) -> None:
    """Why the helper mutes fd 2: in TF 2.21 the variable alone does not silence start-up logs."""
    start = "import tensorflow as tf; tf.config.list_physical_devices(); tf.Variable(1.0)"
    naive = _run(python, start, TF_CPP_MIN_LOG_LEVEL="1")
    assert re.search(r"^[IEW]0000 ", naive.stderr, re.MULTILINE), naive.stderr[:500]
    quiet = _run(
        python,
        "import helpers, sys; helpers.quiet_tensorflow_logs(); " + start + "; print('after', file=sys.stderr)"
    )
    assert quiet.stderr == "after\n"


def test_set_seed_repeats_numpy_and_tensorflow_draws() -> None:
    import tensorflow as tf

    def draws() -> tuple[np.ndarray, np.ndarray]:
        return np.random.rand(3), tf.random.normal([3]).numpy()

    set_seed(11)
    first = draws()
    set_seed(11)
    second = draws()
    set_seed(12)
    third = draws()
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[1], third[1])


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True, "0"])
def test_set_seed_rejects_bad_seeds(seed: object) -> None:
    with pytest.raises(ValueError, match=r"^seed must be an int in \[0, 2\*\*32\)"):
        set_seed(seed)  # type: ignore[arg-type]


def test_check_versions_accepts_the_nightly_distributions(monkeypatch: pytest.MonkeyPatch) -> None:
    """make drift --nightly installs tf-nightly and keras-nightly, which provide the same import packages."""
    from importlib import metadata

    nightly = {"tf-nightly": "2.99.0.dev20990101", "keras-nightly": "3.99.0.dev2099010103"}

    def version(distribution: str) -> str:
        if distribution in nightly:
            return nightly[distribution]
        raise metadata.PackageNotFoundError(distribution)

    monkeypatch.setattr(environment.metadata, "version", version)
    assert environment.check_versions(show=False) == {"tensorflow": "2.99.0.dev20990101", "keras": "3.99.0.dev2099010103"}
    monkeypatch.setattr(environment.metadata, "version", lambda distribution: (_ for _ in ()).throw(metadata.PackageNotFoundError(distribution)))
    with pytest.raises(environment.VersionError, match="tensorflow is not installed"):
        environment.check_versions(show=False)



@pytest.mark.parametrize("setting, expected", [("0", False), ("1", True)])
def test_onednn_enabled_follows_the_environment_variable(python: str, setting: str, expected: bool) -> None:
    """TF_ENABLE_ONEDNN_OPTS forces the kernel family either way, whatever the CPU (read in a new process)."""
    code = "import helpers; helpers.quiet_tensorflow_logs(); from helpers.environment import onednn_enabled; print(onednn_enabled())"
    completed = _run(python, code, **{environment.ONEDNN_VARIABLE: setting})
    assert completed.stdout.strip().splitlines()[-1] == str(expected)
