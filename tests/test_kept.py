"""tests/kept.py: what the expensive fixtures key on, and that they are made once while their key holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kept import content_key, kept


def test_the_key_changes_with_an_inputs_bytes_a_new_file_or_a_fact_and_with_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBOOK_CACHE", raising=False)
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "a.txt").write_text("one")
    first = content_key(["inputs"], 1, root=tmp_path)
    assert content_key(["inputs"], 1, root=tmp_path) == first
    assert content_key(["inputs"], 2, root=tmp_path) != first
    (tmp_path / "inputs" / "__pycache__").mkdir()
    (tmp_path / "inputs" / "__pycache__" / "a.pyc").write_bytes(b"compiled")
    assert content_key(["inputs"], 1, root=tmp_path) == first  # bytecode is not an input
    (tmp_path / "inputs" / "a.txt").write_text("two")
    changed = content_key(["inputs"], 1, root=tmp_path)
    (tmp_path / "inputs" / "b.txt").write_text("")
    assert len({first, changed, content_key(["inputs"], 1, root=tmp_path)}) == 3
    monkeypatch.setenv("WORKBOOK_CACHE", "0")
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "this-run")
    off = content_key(["inputs"], 1, root=tmp_path)
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "the-next-run")
    assert off != content_key(["inputs"], 1, root=tmp_path)  # with the cache off, kept for one run only


def test_a_folder_is_made_once_per_key_and_made_again_after_a_failed_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path))
    calls: list[str] = []

    def make(folder: Path) -> None:
        calls.append(folder.name)
        (folder / "result.txt").write_text(str(len(calls)))

    made = kept("things", "k1", make)
    assert kept("things", "k1", make) == made and calls == ["made"] and (made / "result.txt").read_text() == "1"
    kept("things", "k2", make)
    assert len(calls) == 2

    def fail(folder: Path) -> None:
        (folder / "half.txt").write_text("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        kept("things", "k3", fail)
    again = kept("things", "k3", make)
    assert sorted(path.name for path in again.iterdir()) == ["result.txt"]  # what the failed attempt left is gone
