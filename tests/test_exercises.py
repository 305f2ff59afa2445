"""helpers.exercises: the self-check's verdicts."""

from __future__ import annotations

import pytest

from helpers import exercises


def _verdict(capsys: pytest.CaptureFixture[str], body) -> tuple[str, str]:
    with exercises.check("Exercise 1", hint="count the batches"):
        body()
    return exercises.last_outcome(), capsys.readouterr().out


def test_an_untouched_stub_is_unsolved_and_shows_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    outcome, out = _verdict(capsys, lambda: exercises.answered(3, ...))
    assert outcome == "unsolved"
    assert out == "Exercise 1: not solved yet. Hint: count the batches\n"


def test_a_stub_function_raising_not_implemented_is_unsolved(capsys: pytest.CaptureFixture[str]) -> None:
    def stub() -> None:
        raise NotImplementedError("write the train step here")

    assert _verdict(capsys, stub)[0] == "unsolved"


def test_a_failed_assert_is_rejected_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> None:
        exercises.answered(28)
        raise AssertionError("the last, partial batch counts too")  # what a failed assert in a notebook raises

    outcome, out = _verdict(capsys, body)
    assert outcome == "rejected"
    assert out == "Exercise 1: not yet. the last, partial batch counts too\n"


def test_an_error_in_the_learners_code_is_rejected_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    outcome, out = _verdict(capsys, lambda: {}["missing"])
    assert outcome == "rejected" and "Your code raised KeyError: 'missing'" in out


def test_a_right_answer_is_solved(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verdict(capsys, lambda: exercises.answered(0, None, ""))[0] == "solved"  # falsy is not "unanswered"


def test_interrupts_propagate_and_a_check_needs_a_hint() -> None:
    with pytest.raises(KeyboardInterrupt), exercises.check("Exercise 1", hint="h"):
        raise KeyboardInterrupt
    with pytest.raises(ValueError, match="hint"), exercises.check("Exercise 1", hint=""):
        pass
