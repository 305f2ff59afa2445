"""The notebooks' parameters: what each chapter's ``parameters`` cell holds, and the check of their values.

papermill (``papermill in.ipynb out.ipynb -p FAST True``, ``make run ARGS="-p SEED 7"``) injects new values
after the cell tagged ``parameters`` and infers each type from the text it is given: ``-p FAST no`` arrives as
the string ``"no"``, which Python treats as true, and ``-p SEED abc`` as a string that fails only where
TensorFlow is seeded. So every chapter's setup cell calls :func:`check_parameters` right after
``import helpers`` and before TensorFlow is imported: a wrong value stops the run within a second of the
kernel's start, in one line naming the parameter, the value and type received, and what it accepts.

:data:`PARAMETERS` is the one list of the notebook parameters; the chapters and the tests use it.
Importing this module never imports TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from helpers.failures import UsageError
from helpers.seeding import check_seed


class ParameterError(UsageError):
    """A notebook parameter got a value it does not accept; the message names it and what it accepts."""

    meaning = "a notebook parameter (-p) with a value the chapters refuse"


@dataclass(frozen=True)
class Parameter:
    """One notebook parameter: its name, what it accepts (in words), a good value to show, and its test."""

    name: str
    accepts: str
    example: object
    is_valid: Callable[[object], bool]

    def problem(self, value: object) -> str:
        """The one line that says ``value`` is wrong, with its type, and how to pass a good one."""
        return (
            f"notebook parameter {self.name} = {value!r} ({type(value).__name__}) is not {self.accepts}:"
            f" pass e.g. -p {self.name} {self.example}"
        )


def _is_seed(value: object) -> bool:
    """The workbook's one seed rule (:func:`helpers.seeding.check_seed`): an int, not a bool, in ``[0, 2**32)``."""
    try:
        check_seed(value)
    except ValueError:
        return False
    return True


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


#: Every notebook parameter, in the order of a chapter's ``parameters`` cell. The range of SEED is what
#: NumPy's global generator accepts (``np.random.seed(2**32)`` raises), and every seed reaches it.
PARAMETERS: dict[str, Parameter] = {
    parameter.name: parameter
    for parameter in (
        Parameter("SEED", "an int in [0, 2**32)", 7, _is_seed),
        Parameter("FAST", "True or False", True, _is_bool),
    )
}


def check_parameters(**values: object) -> None:
    """Check the notebook parameters a chapter was run with: ``helpers.check_parameters(SEED=SEED, FAST=FAST)``.

    Returns ``None``, printing nothing, when every value is accepted. Otherwise raises one
    :class:`ParameterError` naming each wrong parameter, the value and type received, what it accepts and
    how to pass a good value with papermill. A keyword that is not in :data:`PARAMETERS` is a mistake in
    the chapter, not in the run: ``TypeError``.
    """
    unknown = [name for name in values if name not in PARAMETERS]
    if unknown:
        raise TypeError(f"check_parameters() got {', '.join(unknown)}; the notebook parameters are {', '.join(PARAMETERS)}")
    problems = [PARAMETERS[name].problem(value) for name, value in values.items() if not PARAMETERS[name].is_valid(value)]
    if problems:
        raise ParameterError("; ".join(problems))
