"""A cache of executed chapters, keyed by content, under ``build/cache/`` (``WORKBOOK_CACHE=0`` turns it off).

A chapter's :func:`key` is a SHA-256 of everything its run depends on: the notebook without its outputs,
the parameters and environment variables it runs with, the bytes of every module the chapters import and
of the machinery that runs them (:func:`code_files`), ``data/``, ``requirements.txt``, and the Python and
TensorFlow versions and the CPU (which decides TensorFlow's CPU kernels). Two uses:

- ``validated``: the test suite records a chapter run that passed all of its validation
  (``tests/chapter_runs.py`` adds to the key what that validation compares with: the stored outputs and the
  comparison rules). A local ``make test`` does not execute that run again while its key is unchanged, and
  reports it as *skipped*, naming the key, never as a fresh pass.
- ``executed``: ``make run`` stores each chapter it executed without a failure, under the key of its parameters;
  ``make book`` builds a chapter from the copy of a default run (and shows that run in its index) while the
  chapter's key is unchanged, from the stored outputs otherwise. ``make run`` always executes (running the
  workbook is its job) unless asked: ``make run ARGS=--cached`` reuses such a copy instead.

A fresh clone has no ``build/``, so what CI runs validates everything. Entries are small JSON files (and, for
``executed``, the executed notebook) named by their key: a changed input simply makes a new key, and
``make clean`` empties the cache with the rest of ``build/``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from helpers.environment import ONEDNN_VARIABLE
from helpers.paths import build_root, repo_root

#: Set to ``0`` to turn the cache off: nothing is looked up or recorded (``make test`` executes every chapter).
CACHE_VARIABLE = "WORKBOOK_CACHE"
#: The kinds of entry (see the module's docstring).
KINDS = ("validated", "executed")
#: The machinery a chapter's run goes through besides ``helpers/``'s chapter-facing modules.
MACHINERY = ("executor.py", "exercise_layout.py", "cache.py")


def enabled() -> bool:
    """Whether the cache is on (it is unless ``WORKBOOK_CACHE=0``)."""
    return os.environ.get(CACHE_VARIABLE, "1").strip() != "0"


def cache_root() -> Path:
    """``build/cache``, one folder per kind."""
    return build_root() / "cache"


def code_files(root: Path | None = None) -> list[Path]:
    """What a chapter's run executes besides the notebook: every module of ``helpers/`` outside ``helpers/workbook/``
    (what chapters import, the trainer chapter 08 starts), the machinery named in :data:`MACHINERY`, ``data/`` and
    ``requirements.txt``; sorted, so the key does not depend on the file system's order."""
    top = root if root is not None else repo_root()
    helpers = top / "helpers"
    files = [path for path in helpers.rglob("*.py") if "workbook" not in path.relative_to(helpers).parts]
    files += [helpers / "workbook" / name for name in MACHINERY]
    files += [path for path in (top / "data").rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    files.append(top / "requirements.txt")
    return sorted(path for path in files if path.is_file())


def _cpu() -> str:
    """The CPU's model name (Linux), which decides TensorFlow's default CPU kernels; the machine type elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def files_digest(files: Iterable[Path], top: Path) -> bytes:
    """A digest of ``files``: each one's path under ``top`` and the hash of its bytes, in the order given."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(top).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


@cache
def environment_digest() -> str:
    """The part of every key that does not depend on the chapter: code, data, pins, versions, CPU (computed once)."""
    top = repo_root()
    digest = hashlib.sha256(files_digest(code_files(top), top))
    facts = {"python": sys.version, "tensorflow": _version("tensorflow"), "keras": _version("keras"), "machine": platform.machine(), "cpu": _cpu()}
    digest.update(json.dumps(facts, sort_keys=True).encode())
    return digest.hexdigest()


def without_outputs(notebook: Mapping[str, Any]) -> dict[str, Any]:
    """The notebook as JSON-ready data with no outputs or execution counts (what its run depends on)."""
    cells = []
    for cell in notebook["cells"]:
        cell = dict(cell)
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    return {"cells": cells, "metadata": {key: value for key, value in notebook.get("metadata", {}).items() if key != "papermill"}}


def key(
    notebook: Mapping[str, Any],
    parameters: Mapping[str, object],
    environment: Mapping[str, str],
    *,
    extra: Iterable[bytes] = (),
) -> str:
    """The content key of one run of ``notebook`` with ``parameters`` and ``environment`` variables set.

    ``extra`` adds what a particular use depends on as well (the tests add the stored outputs they compare with).
    """
    digest = hashlib.sha256(environment_digest().encode())
    run = {"notebook": without_outputs(notebook), "parameters": dict(parameters), "environment": dict(environment)}
    digest.update(json.dumps(run, sort_keys=True, default=repr).encode())
    for part in extra:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def _entry(kind: str, run_key: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"no cache kind {kind!r}; the kinds are {', '.join(KINDS)}")
    return cache_root() / kind / f"{run_key}.json"


def lookup(kind: str, run_key: str) -> dict[str, Any] | None:
    """The record stored under ``run_key`` (``None`` when there is none, it is unreadable, or the cache is off)."""
    path = _entry(kind, run_key)
    if not enabled() or not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def record(kind: str, run_key: str, facts: Mapping[str, Any]) -> Path | None:
    """Store ``facts`` (and the time) under ``run_key``, atomically; nothing when the cache is off. Returns the file."""
    if not enabled():
        return None
    path = _entry(kind, run_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({**facts, "key": run_key, "recorded": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=1), encoding="utf-8")
    os.replace(partial, path)
    return path


def notebook_parameters(notebook: Mapping[str, Any]) -> dict[str, object]:
    """The values a chapter's ``parameters`` cell assigns (its defaults), read without running it."""
    for cell in notebook["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            body = ast.parse(source).body
            return {node.targets[0].id: ast.literal_eval(node.value) for node in body if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    return {}


def run_key(notebook: Path, parameters: Mapping[str, object]) -> str | None:
    """The key of ``make run``'s execution of ``notebook`` with ``parameters`` over its defaults, in this process's
    environment (its ``TF_ENABLE_ONEDNN_OPTS``); ``None`` for a file that is not a notebook (the run or the book
    then names it)."""
    try:
        content = json.loads(notebook.read_text(encoding="utf-8"))
        if not isinstance(content, dict) or not isinstance(content.get("cells"), list):
            return None
    except (OSError, ValueError):
        return None
    values = {**notebook_parameters(content), **parameters}
    return key(content, values, {ONEDNN_VARIABLE: os.environ.get(ONEDNN_VARIABLE, "")})


def executed_copy(run_key: str, chapter: str) -> Path:
    """Where the ``executed`` entry of ``run_key`` keeps its executed notebook, under the chapter's own file name."""
    return cache_root() / "executed" / run_key / f"{chapter}.ipynb"


def store_executed(run_key: str, executed: Path, seconds: float) -> None:
    """Keep a copy of a chapter that executed without failure, with its time (nothing when the cache is off)."""
    if not enabled():
        return
    copy = executed_copy(run_key, executed.stem)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(executed, copy)
    record("executed", run_key, {"chapter": executed.stem, "seconds": round(seconds, 1)})


def executed(run_key: str | None) -> tuple[Path, float] | None:
    """The executed copy stored under ``run_key`` and its run's seconds, or ``None`` (also for no key)."""
    if run_key is None:
        return None
    entry = lookup("executed", run_key)
    if entry is None:
        return None
    copy = executed_copy(run_key, str(entry.get("chapter", "")))
    return (copy, float(entry.get("seconds", 0.0))) if copy.is_file() else None


def short(run_key: str) -> str:
    """The first 12 hex digits of a key, as reports show it."""
    return run_key[:12]
