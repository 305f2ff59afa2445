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


def test_a_stub_function_raising_the_marker_is_unsolved(capsys: pytest.CaptureFixture[str]) -> None:
    def stub() -> None:
        raise exercises.NotAnswered("write the train step here")

    assert _verdict(capsys, stub)[0] == "unsolved"


def test_a_not_implemented_error_is_the_learners_code_raising(capsys: pytest.CaptureFixture[str]) -> None:
    # TensorFlow raises it for .numpy() while tracing: only the stub's marker means "not solved yet"
    outcome, out = _verdict(capsys, _raise(NotImplementedError("numpy() is only available when eager execution is enabled.")))
    assert outcome == "rejected"
    assert out == "Exercise 1: not yet. Your code raised NotImplementedError: numpy() is only available when eager execution is enabled.\n"


def test_numpy_inside_a_tf_function_is_named_and_a_traced_stub_stays_unsolved(capsys: pytest.CaptureFixture[str]) -> None:
    import tensorflow as tf

    step = tf.Variable(1.0)

    @tf.function
    def wrong_step() -> tf.Tensor:
        return tf.constant(step.numpy() * 2)  # a variable's .numpy() while tracing raises NotImplementedError

    outcome, out = _verdict(capsys, wrong_step)
    assert outcome == "rejected" and "NotImplementedError" in out and "numpy()" in out, out

    @tf.function
    def stub_step(x: tf.Tensor) -> tf.Tensor:
        raise exercises.NotAnswered("write the train step here")

    assert _verdict(capsys, lambda: stub_step(tf.constant(1.0)))[0] == "unsolved"


def test_a_failed_assert_is_rejected_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> None:
        exercises.answered(28)
        raise AssertionError("the last, partial batch counts too")  # what a failed assert in a notebook raises

    outcome, out = _verdict(capsys, body)
    assert outcome == "rejected"
    assert out == "Exercise 1: not yet. the last, partial batch counts too\n"


def test_an_error_in_the_learners_code_is_rejected_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    outcome, out = _verdict(capsys, lambda: {}["missing"])
    assert outcome == "rejected" and out == "Exercise 1: not yet. Your code raised KeyError: 'missing'\n"


def _raise(error: Exception):
    def body() -> None:
        raise error

    return body


#: How AutoGraph words an error raised inside a tf.function: the frames first, the reason last.
GRAPH_ERROR = """in user code:

    File "/tmp/ipykernel_1/123.py", line 4, in train_and_sync  *
        if loss > 0:

    OperatorNotAllowedInGraphError: Using a symbolic `tf.Tensor` as a Python `bool` is not allowed.
"""


class OperatorNotAllowedInGraphError(TypeError):
    """Stands in for TensorFlow's, which has the same name and message layout."""


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ValueError("shapes differ\nExpected (2,), got (3,)"), "shapes differ"),  # a plain error says it first
        (ValueError("\n\n  the batch is empty  \n"), "the batch is empty"),
        (OperatorNotAllowedInGraphError(GRAPH_ERROR), "Using a symbolic `tf.Tensor` as a Python `bool` is not allowed."),
        (
            ValueError(
                'Graph execution error:\n\nDetected at node add defined at (most recent call last):\n  File "x.py", line 3, in f\n\n'
                "Incompatible shapes: [2] vs. [3]\n\t [[{{node add}}]] [Op:__inference_f_8]"
            ),
            "Incompatible shapes: [2] vs. [3]",
        ),
        (RuntimeError(""), ""),
    ],
    ids=["plain-multiline", "blank-lines", "autograph", "graph-execution", "empty"],
)
def test_error_reason_is_the_line_that_says_what_went_wrong(error: Exception, reason: str) -> None:
    assert exercises.error_reason(error) == reason


def test_a_graph_error_is_shown_by_its_reason_not_its_first_line(capsys: pytest.CaptureFixture[str]) -> None:
    outcome, out = _verdict(capsys, _raise(OperatorNotAllowedInGraphError(GRAPH_ERROR)))
    assert outcome == "rejected"
    assert out == "Exercise 1: not yet. Your code raised OperatorNotAllowedInGraphError: Using a symbolic `tf.Tensor` as a Python `bool` is not allowed.\n"
    assert "in user code" not in exercises.last_feedback()


def test_last_feedback_is_the_line_the_latest_check_printed(capsys: pytest.CaptureFixture[str]) -> None:
    _verdict(capsys, lambda: exercises.answered(...))
    assert exercises.last_feedback() == "Exercise 1: not solved yet. Hint: count the batches"
    _, out = _verdict(capsys, _raise(AssertionError("the last, partial batch counts too")))
    assert exercises.last_feedback() == out.removesuffix("\n") == "Exercise 1: not yet. the last, partial batch counts too"
    _verdict(capsys, lambda: None)
    assert (exercises.last_outcome(), exercises.last_feedback()) == ("solved", "Exercise 1: solved.")


def test_the_latest_verdict_before_any_check_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exercises, "VERDICTS", [])
    for latest in (exercises.last_outcome, exercises.last_feedback):
        with pytest.raises(ValueError, match="no exercise check has run"):
            latest()


def test_a_right_answer_is_solved(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verdict(capsys, lambda: exercises.answered(0, None, ""))[0] == "solved"  # falsy is not "unanswered"


def test_interrupts_propagate_and_a_check_needs_a_hint() -> None:
    with pytest.raises(KeyboardInterrupt), exercises.check("Exercise 1", hint="h"):
        raise KeyboardInterrupt
    with pytest.raises(ValueError, match="hint"), exercises.check("Exercise 1", hint=""):
        pass


def test_a_real_tensorflow_graph_error_is_shown_by_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    import tensorflow as tf

    @tf.function
    def step(x):
        return bool(x > 0)  # a symbolic tensor as a Python bool

    outcome, out = _verdict(capsys, lambda: step(tf.constant(1.0)))
    assert outcome == "rejected"
    assert out.startswith("Exercise 1: not yet. Your code raised OperatorNotAllowedInGraphError: Using a symbolic `tf.Tensor` as a Python `bool`")
    assert "in user code" not in out and out.count("\n") == 1


def test_require_solved_raises_the_not_yet_reason_of_the_latest_check_of_that_name(capsys: pytest.CaptureFixture[str]) -> None:
    """What grading adds after each check (helpers.workbook.course): the verdict that only printed now raises."""
    with exercises.check("Exercise 8", hint="h"):
        raise AssertionError("the step is counted twice")
    with exercises.check("Exercise 9", hint="h"):
        pass
    with pytest.raises(AssertionError, match="^Exercise 8: not yet. the step is counted twice$"):
        exercises.require_solved("Exercise 8")
    exercises.require_solved("Exercise 9")  # solved: nothing raised
    with exercises.check("Exercise 8", hint="h"):
        exercises.answered(...)
    with pytest.raises(AssertionError, match="^Exercise 8: not solved yet. Hint: h$"):
        exercises.require_solved("Exercise 8")
    with pytest.raises(AssertionError, match="Exercise 77: its check did not run"):
        exercises.require_solved("Exercise 77")
    capsys.readouterr()


@pytest.mark.parametrize(
    ("body", "raises"),
    [
        (lambda: exercises.answered(3, ...), "Exercise 1: not solved yet. Hint: count the batches"),
        (_raise(AssertionError("the last, partial batch counts too")), "Exercise 1: not yet. the last, partial batch counts too"),
        (lambda: None, ""),
    ],
)
def test_under_nbgraders_validation_a_check_that_is_not_solved_raises_its_verdict(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, body, raises: str
) -> None:
    """What the Validate button runs: the check fails as grading would, so "passes all the tests" means solved."""
    monkeypatch.setenv(exercises.VALIDATING, "1")
    if raises:
        with pytest.raises(AssertionError) as error:
            _verdict(capsys, body)
        assert str(error.value) == raises and capsys.readouterr().out == raises + "\n"
    else:
        assert _verdict(capsys, body) == ("solved", "Exercise 1: solved.\n")
    monkeypatch.setenv(exercises.VALIDATING, "0")  # set but not "1": a plain run, which never raises
    assert _verdict(capsys, lambda: exercises.answered(3, ...))[0] == "unsolved"
