"""helpers.failures: an error class carries its exit status, and a command's table of statuses is derived from its classes."""

from __future__ import annotations

import pytest

from helpers.failures import CommandError, UsageError, report, status_table, status_text
from helpers.parameters import ParameterError


class _Broken(CommandError):
    exit_status = 5
    meaning = "something broke"


class _AlsoFive(CommandError):
    exit_status = 5
    meaning = "something else broke"


def test_the_table_is_derived_from_the_classes_sorted_with_one_row_per_status() -> None:
    rows = status_table([_AlsoFive, UsageError, _Broken, _AlsoFive])
    assert rows == [("0", "done"), ("2", "a bad option or argument"), ("5", "something else broke, or something broke")]
    assert status_text(rows) == "exit statuses: 0 done; 2 a bad option or argument; 5 something else broke, or something broke."


def test_a_usage_error_is_its_own_class_with_argparses_status() -> None:
    assert UsageError.exit_status == 2 and CommandError.exit_status == 1
    assert issubclass(ParameterError, UsageError) and ParameterError.exit_status == 2
    assert isinstance(UsageError("x"), ValueError)  # a bad value of the user's, as callers that catch ValueError expect


def test_report_prints_one_line_and_returns_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(_Broken("the disk is gone"), "prog: error") == 5
    assert capsys.readouterr().err == "prog: error: the disk is gone\n"
    assert report(UsageError("no such chapter")) == 2
    assert capsys.readouterr().err == "error: no such chapter\n"
