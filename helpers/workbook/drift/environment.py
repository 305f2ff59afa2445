"""The drift environment: its folder, its requirements (TensorFlow, Keras and TensorBoard moved to the newest), building it, its versions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.paths import build_root, repo_root

#: The packages a drift run replaces, and what it installs instead (latest release, or nightly).
MOVING = {"tensorflow": "tf-nightly", "keras": "keras-nightly", "tensorboard": "tb-nightly"}


def drift_root() -> Path:
    """``build/drift``: the venvs, the executed notebooks, their work folders and the report."""
    return build_root() / "drift"


def venv_for(nightly: bool) -> Path:
    """The drift environment: ``build/drift/venv-nightly`` or ``build/drift/venv-latest``, one per kind.

    Two, because ``tf-nightly`` and ``tensorflow`` install the same ``tensorflow`` package: one
    environment switched from one to the other would hold both, overwriting each other's files.
    """
    return drift_root() / ("venv-nightly" if nightly else "venv-latest")


def requirement_lines(nightly: bool) -> list[str]:
    """``requirements.txt`` with TensorFlow, Keras and TensorBoard unpinned (or their nightly builds); the rest as pinned."""
    lines = []
    for raw in (repo_root() / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"[=<>!~\[ ]", line, maxsplit=1)[0].lower()
        if name in MOVING:
            line = MOVING[name] if nightly else name
        lines.append(line)
    return lines


def run_logged(command: Sequence[str], **options: Any) -> subprocess.CompletedProcess[str]:
    """Print ``command`` (``$ ...``), then run it; a non-zero exit status raises ``CalledProcessError``."""
    print("$", " ".join(command), flush=True)
    return subprocess.run(list(command), check=True, text=True, **options)


def build_environment(venv: Path, *, nightly: bool) -> Path:
    """Create ``venv`` (if missing) and install the newest TensorFlow stack into it; return its Python."""
    python = venv / "bin" / "python"
    if not python.exists():
        run_logged([sys.executable, "-m", "venv", str(venv)])
    requirements = venv.parent / f"requirements-{venv.name}.txt"
    requirements.write_text("\n".join(requirement_lines(nightly)) + "\n", encoding="utf-8")
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--upgrade"]
    run_logged([*pip, *(["--pre"] if nightly else []), "-r", str(requirements)])
    run_logged([*pip, "--no-deps", "-e", str(repo_root())])
    return python


def versions(python: Path) -> dict[str, str]:
    """The installed versions of the moving packages in the environment of ``python`` (:func:`helpers.environment.installed_version` there)."""
    names = [*MOVING, *MOVING.values()]
    code = (
        "import json, sys\nfrom helpers.environment import installed_version\n"
        "print(json.dumps({name: version for name in sys.argv[1:] if (version := installed_version(name)) is not None}))"
    )
    completed = subprocess.run([str(python), "-c", code, *names], cwd=repo_root(), check=True, capture_output=True, text=True)
    return dict(json.loads(completed.stdout))
