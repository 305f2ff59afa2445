"""Exercises a learner does: a stub to fill in, and a check that says "not yet" without failing the run.

Every notebook ends with exercises laid out the same way (``tests/test_notebooks.py`` relies on it):

1. a markdown cell with the task, ``**Exercise N.** ...``;
2. a code cell tagged ``exercise``: the stub. Answers start as ``...`` (Ellipsis); functions the
   learner writes raise ``NotImplementedError``. The stub runs without error as stored;
3. a code cell tagged ``exercise-check``::

       with exercises.check("Exercise 1", hint="a hint that does not give the answer away"):
           exercises.answered(answer)   # while `answer` is still `...`: "not solved yet" + the hint
           assert <property of a right answer>, "what is wrong, in a learner's words"

4. a markdown cell tagged ``solution``: a collapsed ``<details>`` block holding one fenced
   ``python`` block (the code that replaces the stub), and in its metadata ``wrong_answer``: a
   plausible wrong answer that the check must reject.

:func:`check` never raises for the learner's mistakes: the stored notebook, ``make run``,
papermill and nbval all pass while the stubs are unsolved. It prints one verdict line and records
it; :func:`last_outcome` returns the latest one, so a test can fill in the solutions (and the wrong
answers) and assert what each check decided. Reading this layout in a notebook file (finding the
exercises, validating their cells, the copy with every wrong answer and solution filled in) is the
project's machinery, not the chapters': :mod:`helpers.workbook.exercises`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

Outcome = Literal["unsolved", "rejected", "solved"]

#: Every verdict so far in this process, as (exercise name, outcome), oldest first.
OUTCOMES: list[tuple[str, Outcome]] = []


class NotAnswered(Exception):
    """Raised by :func:`answered` while an answer is still the stub's ``...``."""


def answered(*answers: object) -> None:
    """Stop the check (as "not solved yet") if any answer is still ``...``."""
    if any(answer is Ellipsis for answer in answers):
        raise NotAnswered


@contextmanager
def check(name: str, *, hint: str) -> Iterator[None]:
    """Run a self-check block and print ``name: solved.``, ``not yet. <why>`` or ``not solved yet``.

    - :class:`NotAnswered` or ``NotImplementedError`` (the stub is untouched): "not solved yet"
      and the hint;
    - an ``AssertionError``: "not yet." and the assertion's message;
    - any other exception raised by the learner's code: "not yet." and the exception;
    - no exception: "solved.".

    ``KeyboardInterrupt`` and other non-``Exception`` errors propagate.
    """
    if not name or not hint:
        raise ValueError("an exercise check needs a name and a hint")
    outcome: Outcome
    try:
        yield
    except (NotAnswered, NotImplementedError):
        outcome = "unsolved"
        print(f"{name}: not solved yet. Hint: {hint}")
    except AssertionError as error:
        outcome = "rejected"
        reason = str(error).strip() or "a check failed"
        print(f"{name}: not yet. {reason}")
    except Exception as error:  # the learner's code raised: say what, do not stop the notebook
        outcome = "rejected"
        first_line = (str(error).strip().splitlines() or [""])[0]
        print(f"{name}: not yet. Your code raised {type(error).__name__}: {first_line}")
    else:
        outcome = "solved"
        print(f"{name}: solved.")
    OUTCOMES.append((name, outcome))


def last_outcome() -> Outcome:
    """The outcome of the most recent :func:`check` (``ValueError`` if none ran yet)."""
    if not OUTCOMES:
        raise ValueError("no exercise check has run in this process")
    return OUTCOMES[-1][1]
