"""Exercises a learner does: a stub to fill in, and a check that says "not yet" without failing the run.

Every notebook ends with exercises laid out the same way (``tests/test_notebooks.py`` checks it and ``tests/chapter_runs.py`` answers every exercise):

1. a markdown cell with the task, ``**Exercise N.** ...``;
2. a code cell tagged ``exercise``: the stub. Answers start as ``...`` (Ellipsis); functions the
   learner writes raise :class:`NotAnswered` (``raise exercises.NotAnswered("write ... here")``). The stub runs
   without error as stored;
3. a code cell tagged ``exercise-check``::

       with exercises.check("Exercise 1", hint="a hint that does not give the answer away"):
           exercises.answered(answer)   # while `answer` is still `...`: "not solved yet" + the hint
           assert <property of a right answer>, "what is wrong, in a learner's words"

4. a markdown cell tagged ``solution``: a collapsed ``<details>`` block holding one fenced
   ``python`` block (the code that replaces the stub), and in its metadata, under ``exercise``, the
   classic wrong answers (each with the phrase the check's feedback must contain, naming its
   mistake) and more right answers written differently (:mod:`helpers.workbook.exercise_layout` defines
   the keys and validates them).

:func:`check` never raises for the learner's mistakes: the stored notebook, ``make run``,
papermill and nbval all pass while the stubs are unsolved. It prints one verdict line and records
it with its outcome; :func:`last_outcome` and :func:`last_feedback` return the latest ones, so a test
can fill in the answers and assert what each check decided and said. When a course grades a
returned notebook (``make grade``), a hidden line after each check, which the student's copy does
not hold, calls :func:`require_solved`: the same verdict then raises, with the "not yet" reason as
its message, and nbgrader gives the exercise no points. Reading this layout in a
notebook file (finding the exercises, validating their cells, the copy with every answer filled
in) is the project's machinery, not the chapters': :mod:`helpers.workbook.exercise_layout`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from helpers.errors import first_line

Outcome = Literal["unsolved", "rejected", "solved"]


@dataclass(frozen=True)
class Verdict:
    """What one :func:`check` decided, and the line it printed (without the newline)."""

    name: str
    outcome: Outcome
    feedback: str


#: The words of a verdict line after the exercise's name and ``": "``, as :func:`check` prints them
#: (:mod:`helpers.workbook.feedback` reads them back from a graded notebook): ``solved.``, ``not solved yet. Hint: <hint>``,
#: ``not yet. <reason>``, and for the learner's code raising, ``not yet. Your code raised <Error>: <reason>``.
SOLVED, NOT_SOLVED, HINT, NOT_YET, RAISED = "solved.", "not solved yet.", "Hint:", "not yet.", "Your code raised"

#: The variable nbgrader sets to ``1`` while it validates a notebook (``nbgrader/validator.py``).
VALIDATING = "NBGRADER_VALIDATING"

#: Every verdict so far in this process, oldest first.
VERDICTS: list[Verdict] = []

#: A line of a traceback that an error message carries: a frame (``File "...", line 3, in f``).
_FRAME_LINE = re.compile(r'^\s*File "[^"]*", line \d+')
#: TensorFlow's annotation of the graph node an error came from: ``[[{{node add}}]]``.
_NODE_LINE = re.compile(r"^\s*\[\[\{\{node .*\}\}\]\]")


class NotAnswered(Exception):
    """The stub's own marker: raised by :func:`answered` while an answer is still ``...``, and by a stub's function body.

    Only this exception means "not solved yet". A ``NotImplementedError`` is the learner's code raising:
    TensorFlow raises one for ``.numpy()`` inside a ``tf.function``, and that learner must see it. AutoGraph
    re-raises an error from traced code as a new exception of the same class, so the marker survives a stub
    called inside a ``tf.function``.
    """


def answered(*answers: object) -> None:
    """Stop the check (as "not solved yet") if any answer is still ``...``."""
    if any(answer is Ellipsis for answer in answers):
        raise NotAnswered


def error_reason(error: BaseException) -> str:
    """The line of ``error``'s message that says what went wrong.

    A plain Python error says it on its first line (``KeyError: 'missing'``; a longer message adds
    details after it). An error that carries a traceback in its message does not: TensorFlow's errors
    from inside a ``tf.function`` (``OperatorNotAllowedInGraphError``, ``TypeError`` and the others
    AutoGraph re-raises) start with ``in user code:`` and then the frames (``File "...", line N``, each
    followed by its source line), and the reason is the last line that is neither a frame, a source
    line nor a node annotation (``[[{{node ...}}]]``). A leading ``TypeName:`` that repeats the
    error's own class name is dropped, since the verdict names the class already.
    """
    lines = [line for line in str(error).splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].strip() != "in user code:" and not any(_FRAME_LINE.match(line) for line in lines):
        return first_line(str(error)).removeprefix(f"{type(error).__name__}: ")
    reasons: list[str] = []
    frame_indent: int | None = None
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip())
        if _FRAME_LINE.match(line):
            frame_indent = indent
        elif frame_indent is not None and indent > frame_indent:
            pass  # the source line a frame shows
        elif not _NODE_LINE.match(line):
            reasons.append(line)
            frame_indent = None
    reason = (reasons[-1] if reasons else lines[-1]).strip()
    return reason.removeprefix(f"{type(error).__name__}: ")


@contextmanager
def check(name: str, *, hint: str) -> Iterator[None]:
    """Run a self-check block and print ``name: solved.``, ``not yet. <why>`` or ``not solved yet``.

    - :class:`NotAnswered` (the stub is untouched): "not solved yet" and the hint;
    - an ``AssertionError``: "not yet." and the assertion's message;
    - any other exception raised by the learner's code: "not yet." and the exception's class with
      the line of its message that carries the reason (:func:`error_reason`);
    - no exception: "solved.".

    The printed line is recorded with the outcome (:func:`last_feedback`). ``KeyboardInterrupt`` and
    other non-``Exception`` errors propagate. Under nbgrader's validation (its Validate button, ``nbgrader
    validate``: :data:`VALIDATING` is set) a verdict other than "solved" then raises ``AssertionError`` with
    that line, as grading would: the student sees the exercise fail before handing it in.
    """
    if not name or not hint:
        raise ValueError("an exercise check needs a name and a hint")
    outcome: Outcome
    try:
        yield
    except NotAnswered:
        outcome, feedback = "unsolved", f"{name}: {NOT_SOLVED} {HINT} {hint}"
    except AssertionError as error:
        reason = str(error).strip() or "a check failed"
        outcome, feedback = "rejected", f"{name}: {NOT_YET} {reason}"
    except Exception as error:  # the learner's code raised: say what, do not stop the notebook
        outcome, feedback = "rejected", f"{name}: {NOT_YET} {RAISED} {type(error).__name__}: {error_reason(error)}"
    else:
        outcome, feedback = "solved", f"{name}: {SOLVED}"
    print(feedback)
    VERDICTS.append(Verdict(name, outcome, feedback))
    if outcome != "solved" and os.environ.get(VALIDATING) == "1":
        raise AssertionError(feedback)


def _last() -> Verdict:
    if not VERDICTS:
        raise ValueError("no exercise check has run in this process")
    return VERDICTS[-1]


def last_outcome() -> Outcome:
    """The outcome of the most recent :func:`check` (``ValueError`` if none ran yet)."""
    return _last().outcome


def last_feedback() -> str:
    """The line the most recent :func:`check` printed, without its newline (``ValueError`` if none ran yet)."""
    return _last().feedback


def require_solved(name: str) -> None:
    """Raise ``AssertionError`` unless the latest :func:`check` called ``name`` said "solved"; its feedback is the message.

    What grading adds after each check (:mod:`helpers.workbook.course` puts the call in nbgrader's hidden
    tests): the self-check prints and goes on, the graded one fails with the same reason.
    """
    verdict = next((verdict for verdict in reversed(VERDICTS) if verdict.name == name), None)
    if verdict is None:
        raise AssertionError(f"{name}: its check did not run")
    if verdict.outcome != "solved":
        raise AssertionError(verdict.feedback)
