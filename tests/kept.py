"""Expensive things the tests make once and keep: a folder per content key under ``build/`` (:func:`kept`).

The fixtures that use it (the whole book, the graded courses) are rebuilt when what they are made of changes, and
on every run with ``WORKBOOK_CACHE=0``; a fresh clone (CI) has no ``build/``, so it makes everything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path


def content_key(inputs: Sequence[str], *facts: object, root: Path | None = None) -> str:
    """A key of the bytes of ``inputs`` (files or folders under ``root``, the repository's) and of ``facts``, and of the
    run's id when the cache is off (``WORKBOOK_CACHE=0``: kept for this run's workers only, pytest-xdist gives them one id)."""
    import hashlib

    from helpers.paths import repo_root
    from helpers.workbook import cache

    digest = hashlib.sha256(repr(facts).encode())
    top = root if root is not None else repo_root()
    for name in inputs:
        path = top / name
        files = sorted([path] if path.is_file() else (entry for entry in path.rglob("*") if entry.is_file() and "__pycache__" not in entry.parts))
        digest.update(cache.files_digest(files, top))
    if not cache.enabled():
        digest.update(os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid())).encode())
    return digest.hexdigest()[:16]


def kept(name: str, key: str, make: Callable[[Path], None]) -> Path:
    """``build/<name>/<key>/made/``, made once by ``make(folder)`` for every test and run that asks with the same key.

    Under a lock that the other worker waits on, then finds the folder complete; a later run finds it too while
    the key holds (the key covers what the folder is made of: :func:`content_key`). ``make`` that fails leaves the
    folder incomplete, so the next request makes it again. Tests only read what it made.
    """
    import fcntl

    from helpers.paths import build_root, remove

    folder = build_root() / name / key
    made, done = folder / "made", folder / "complete"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits here, then finds it complete
        if not (done.is_file() and made.is_dir()):
            remove(made)  # what an interrupted or failed attempt left
            made.mkdir()
            make(made)
            done.write_text("made\n", encoding="utf-8")
    return made
