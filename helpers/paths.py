"""Where the workbook writes: one build folder per notebook, emptied at the start of a run.

Everything a notebook writes goes under ``build/<notebook name>/`` in the repository (or under
``$WORKBOOK_BUILD_DIR`` if set, which the tests use), so reruns are idempotent and nothing
is written elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: How :class:`helpers.checkpoints.TrainingCheckpoint` names a checkpoint: ``ckpt-<global step>``
#: (files ``ckpt-<step>.index`` and ``ckpt-<step>.data-*``). Here, so code that must not import
#: TensorFlow (the capstone command's early checks) can read the rule too.
CHECKPOINT_PREFIX = re.compile(r"^ckpt-(\d+)$")
#: What a save that did not finish leaves in a checkpoint folder: TensorFlow writes ``ckpt-<step>``'s
#: files in the folder ``ckpt-<step>_temp`` before moving them into place, and the ``checkpoint`` state
#: file as ``checkpoint.tmp<hex>`` before renaming it. Nothing reads these; a save or a start removes them.
TORN_SAVE = re.compile(r"^(ckpt-\d+_temp|checkpoint\.tmp[0-9a-f]+)$")


def repo_root() -> Path:
    """The repository folder (the parent of this package)."""
    return Path(__file__).resolve().parent.parent


#: The folder of the chapters (``NN_name.ipynb``), the seed map and the glossary; the executor and the
#: glossary both take it from here.
NOTEBOOKS_DIR = repo_root() / "notebooks"


def build_root() -> Path:
    """The build area: ``$WORKBOOK_BUILD_DIR`` if set, else ``<repo>/build``."""
    override = os.environ.get("WORKBOOK_BUILD_DIR")
    return Path(override).resolve() if override else repo_root() / "build"


def run_dir(name: str, *, clean: bool = True) -> Path:
    """Return ``build/<name>``, created, and emptied first when ``clean`` (the default).

    ``name`` is a single folder name (letters, digits, ``_ . -``); anything that could point
    outside the build area is refused with ``ValueError``.
    """
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ValueError(f"name must be a plain folder name like '01_global_step', got {name!r}")
    path = build_root() / name
    if clean and path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def remove(path: Path, *, ignore_errors: bool = True) -> None:
    """Remove a file or a folder (a symlink as a file), gone already or not; ``ignore_errors=False`` raises what stops it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=ignore_errors)
    elif ignore_errors:
        path.unlink(missing_ok=True)
    else:
        path.unlink()


def display_path(path: str | os.PathLike[str], *, keep_outside: bool = False) -> str:
    """A path as a reader should see it: relative to the build area's parent when inside the build area (so it
    reads ``build/...``), else relative to the repository when inside it.

    Stored notebook outputs must not hold absolute paths (they differ per machine), so a path
    outside both becomes its last name; ``keep_outside=True`` (messages of a command, where the
    user typed the path) keeps it whole instead.
    """
    resolved = Path(path).resolve()
    # A path in the build area reads `build/...` wherever the area is (the tests' and make drift's are elsewhere).
    for base in (build_root().parent, repo_root()) if resolved.is_relative_to(build_root()) else (repo_root(), build_root().parent):
        try:
            return resolved.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(resolved) if keep_outside else resolved.name


def checkpoint_name(step: int) -> str:
    """The name of the checkpoint saved at global step ``step``: ``ckpt-<step>`` (see :data:`CHECKPOINT_PREFIX`)."""
    return f"ckpt-{int(step)}"


def checkpoint_step(prefix: str | os.PathLike[str]) -> int:
    """The global step in a checkpoint's name: ``ckpt-120`` (or ``.../ckpt-120``) gives 120.

    A name that does not follow :data:`CHECKPOINT_PREFIX` raises ``ValueError``.
    """
    name = Path(prefix).name
    match = CHECKPOINT_PREFIX.match(name)
    if not match:
        raise ValueError(f"{name!r} is not a checkpoint name like 'ckpt-120'")
    return int(match.group(1))


def checkpoint_prefixes(directory: str | os.PathLike[str]) -> list[Path]:
    """The ``ckpt-<step>`` prefixes in ``directory`` that have an ``.index`` file, by step (oldest first)."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    found: list[tuple[int, Path]] = []
    for index_file in folder.glob("ckpt-*.index"):
        prefix = folder / index_file.name.removesuffix(".index")
        if CHECKPOINT_PREFIX.match(prefix.name):
            found.append((checkpoint_step(prefix), prefix))
    return [prefix for _, prefix in sorted(found)]
