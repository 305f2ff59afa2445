"""helpers.log_records.captured_logs: records kept, nothing printed, logger restored."""

from __future__ import annotations

import logging

import pytest

from helpers.log_records import captured_logs


@pytest.fixture
def quiet_logger() -> logging.Logger:
    """A logger set up like TensorFlow's after quiet_tensorflow_logs(): ERROR, one stderr handler."""
    logger = logging.getLogger("test_log_records.quiet")
    logger.handlers = [logging.StreamHandler()]
    logger.setLevel(logging.ERROR)
    logger.propagate = True
    return logger


def test_keeps_warnings_the_level_would_hide(quiet_logger: logging.Logger, capsys: pytest.CaptureFixture[str]) -> None:
    with captured_logs(quiet_logger.name) as records:
        quiet_logger.warning("%s is deprecated", "old_function")
        quiet_logger.info("below the capture level")
    assert [record.getMessage() for record in records] == ["old_function is deprecated"]
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_restores_the_logger_even_when_the_block_raises(quiet_logger: logging.Logger) -> None:
    handlers = list(quiet_logger.handlers)
    with pytest.raises(RuntimeError), captured_logs(quiet_logger.name, level=logging.INFO) as records:
        quiet_logger.info("kept")
        raise RuntimeError("boom")
    assert [record.getMessage() for record in records] == ["kept"]
    assert quiet_logger.level == logging.ERROR and quiet_logger.handlers == handlers and quiet_logger.propagate
    with captured_logs(quiet_logger.name) as later:
        pass
    assert later == []


def test_does_not_reach_parent_handlers(quiet_logger: logging.Logger, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), captured_logs(quiet_logger.name):
        quiet_logger.warning("not for the root logger")
    assert "not for the root logger" not in caplog.text


@pytest.mark.parametrize("level", [True, "WARNING", 1.5])
def test_rejects_a_bad_level(level: object) -> None:
    with pytest.raises(TypeError, match="level must be"), captured_logs("test_log_records.bad", level=level):  # type: ignore[arg-type]
        pass
