"""helpers.paths and helpers.errors: build folders and expected-error display."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import paths
from helpers.errors import expect_error


@pytest.fixture()
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKBOOK_BUILD_DIR", str(tmp_path / "build"))
    return tmp_path / "build"


def test_run_dir_creates_and_cleans(build: Path) -> None:
    first = paths.run_dir("01_global_step")
    assert first == build / "01_global_step" and first.is_dir()
    (first / "left_over.txt").write_text("old run")
    second = paths.run_dir("01_global_step")
    assert second == first and list(second.iterdir()) == []


def test_run_dir_keeps_contents_without_clean(build: Path) -> None:
    folder = paths.run_dir("keep")
    (folder / "a.txt").write_text("x")
    assert (paths.run_dir("keep", clean=False) / "a.txt").read_text() == "x"


@pytest.mark.parametrize("name", ["", "..", "../escape", "a/b", "/abs", ".hidden", "a..b"])
def test_run_dir_refuses_names_that_leave_the_build_area(build: Path, name: str) -> None:
    with pytest.raises(ValueError, match="plain folder name"):
        paths.run_dir(name)


def test_build_root_defaults_to_repo_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBOOK_BUILD_DIR", raising=False)
    assert paths.build_root() == paths.repo_root() / "build"
    assert (paths.repo_root() / "helpers" / "paths.py").is_file()


def test_display_path_is_relative_inside_the_repo_and_never_absolute(build: Path, tmp_path: Path) -> None:
    assert paths.display_path(paths.repo_root() / "data" / "digits.npz") == "data/digits.npz"
    assert paths.display_path(build / "01_x") == "build/01_x"
    outside = Path("/") / "somewhere" / "else.txt"
    assert paths.display_path(outside) == "else.txt"
    assert paths.display_path(outside, keep_outside=True) == str(outside.resolve())


def test_expect_error_prints_type_and_first_line(capsys: pytest.CaptureFixture[str]) -> None:
    with expect_error(ValueError) as caught:
        raise ValueError("first line\nsecond line")
    assert capsys.readouterr().out == "ValueError: first line\n"
    assert isinstance(caught.value, ValueError) and caught.first_line == "first line"


def test_a_quiet_expect_error_checks_the_same_and_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with expect_error(ValueError, match="^bad", quiet=True) as caught:
        raise ValueError("bad value\nsecond line")
    assert caught.first_line == "bad value" and capsys.readouterr().out == ""
    with pytest.raises(AssertionError, match="does not match"), expect_error(ValueError, match="^good", quiet=True):
        raise ValueError("bad value")
    with pytest.raises(AssertionError, match="raised nothing"), expect_error(ValueError, quiet=True):
        pass


def test_expect_error_accepts_several_types_and_checks_match(capsys: pytest.CaptureFixture[str]) -> None:
    with expect_error(KeyError, AttributeError, match="no attribute"):
        _ = object().missing
    assert capsys.readouterr().out.startswith("AttributeError: ")
    with pytest.raises(AssertionError, match="does not match"):
        with expect_error(ValueError, match="something else"):
            raise ValueError("actual message")


def test_expect_error_prints_the_line_that_matches(capsys: pytest.CaptureFixture[str]) -> None:
    with expect_error(ValueError, match="singleton"):
        raise ValueError("in user code:\n\n    File x, line 1\n    only supports singleton variables")
    assert capsys.readouterr().out == "ValueError: only supports singleton variables\n"


def test_expect_error_fails_when_nothing_is_raised() -> None:
    with pytest.raises(AssertionError, match="expected ValueError, but the block raised nothing"):
        with expect_error(ValueError):
            pass


def test_expect_error_lets_other_errors_through() -> None:
    with pytest.raises(ZeroDivisionError):
        with expect_error(ValueError):
            1 / 0  # noqa: B018


def test_expect_error_truncates_long_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with expect_error(RuntimeError, max_chars=20):
        raise RuntimeError("x" * 100)
    printed = capsys.readouterr().out.strip()
    assert printed == "RuntimeError: " + "x" * 17 + "..."


def test_expect_error_needs_a_type() -> None:
    with pytest.raises(TypeError):
        with expect_error():
            pass


def test_expect_error_prints_plain_text_without_colour_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with expect_error(ValueError, match="Expected shape") as caught:
        raise ValueError("Input 0 is incompatible: \x1b[1mExpected shape\x1b[0m (None, 28, 28)")
    assert capsys.readouterr().out == "ValueError: Input 0 is incompatible: Expected shape (None, 28, 28)\n"
    assert "\x1b" not in caught.message


def test_expect_error_drops_tf_internal_prefixes_and_object_addresses(capsys: pytest.CaptureFixture[str]) -> None:
    raw = "{{function_node __wrapped__CheckNumerics_device_/job:localhost/replica:0/task:0/device:CPU:0}} x : Tensor had NaN values"
    with expect_error(RuntimeError, match="Tensor had NaN"):
        raise RuntimeError(raw)
    with expect_error(RuntimeError, match="closed"):
        raise RuntimeError("<tensorflow.python.ops.summary_ops_v2._Writer object at 0x7f3a2c1b9d50> is already closed")
    assert capsys.readouterr().out.splitlines() == [
        "RuntimeError: x : Tensor had NaN values",
        "RuntimeError: <tensorflow.python.ops.summary_ops_v2._Writer> is already closed",
    ]


def test_checkpoint_prefixes_lists_indexed_checkpoints_by_step(tmp_path: Path) -> None:
    from helpers.paths import checkpoint_prefixes

    for name in ("ckpt-10.index", "ckpt-10.data-00000-of-00001", "ckpt-9.index", "ckpt-11.data-00000-of-00001", "ckpt-x.index", "other-3.index"):
        (tmp_path / name).write_text("")
    assert checkpoint_prefixes(tmp_path) == [tmp_path / "ckpt-9", tmp_path / "ckpt-10"]  # by step, not by name
    assert checkpoint_prefixes(tmp_path / "missing") == []


def test_checkpoint_names_and_steps_go_both_ways(tmp_path: Path) -> None:
    from helpers.paths import checkpoint_name, checkpoint_step

    assert checkpoint_name(120) == "ckpt-120" and checkpoint_step(tmp_path / checkpoint_name(120)) == 120
    for wrong in ("ckpt-", "ckpt-1.index", "model-3", "ckpt-x"):
        with pytest.raises(ValueError, match="is not a checkpoint name like 'ckpt-120'"):
            checkpoint_step(wrong)


def test_errno_of_reads_an_oserror_or_the_words_in_tensorflows_message() -> None:
    """TensorFlow reports a full disk as a ResourceExhaustedError whose message ends in the C library's words, with no errno."""
    import errno

    from helpers.errors import errno_of

    assert errno_of(PermissionError(errno.EACCES, "Permission denied")) == errno.EACCES
    assert errno_of(RuntimeError("/run/ckpt-30_temp/part-00000; No space left on device [Op:SaveV2]")) == errno.ENOSPC
    assert errno_of(RuntimeError("events.out.tfevents.1; Disk quota exceeded")) == errno.EDQUOT
    assert errno_of(RuntimeError("OOM when allocating tensor with shape [1000000]")) == errno.EIO  # no such words: a generic I/O error
    assert errno_of(OSError("no errno")) == errno.EIO
