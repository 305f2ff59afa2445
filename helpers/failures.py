"""How the project's command lines fail: an error class carries its exit status, and the table of statuses is derived from the classes.

A command raises a :class:`CommandError` subclass for each way it can fail as expected; its handler prints
the error as one line on stderr and exits with the class's :attr:`~CommandError.exit_status`
(:func:`report`). Anything else, a bug, propagates with its traceback (status 1, Python's own). The
statuses a command documents (``--help``'s epilog, its docstring) come from the same classes
(:func:`status_table`), so the table cannot disagree with the code.

Plumbing: :mod:`helpers.train` and :mod:`helpers.workbook` both build on it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import ClassVar


class CommandError(Exception):
    """An expected failure of a command: its message is the one line the command prints, its class says the exit status."""

    #: The exit status of a command that stopped on this error.
    exit_status: ClassVar[int] = 1
    #: What the status means, in the words of the command's table of statuses (:func:`status_table`).
    meaning: ClassVar[str] = "the command failed"

    @classmethod
    def status_label(cls) -> str:
        """How the table of statuses names this class's status (a class whose status varies names them all)."""
        return str(cls.exit_status)

    def status(self) -> int:
        """This error's exit status (a subclass whose status depends on the error overrides this)."""
        return self.exit_status

    def line(self) -> str:
        """The line the command prints for this error: its message (a subclass may add what it means)."""
        return str(self)


class UsageError(CommandError, ValueError):
    """A bad option or argument, refused before anything is done: argparse's own status for its refusals."""

    exit_status = 2
    meaning = "a bad option or argument"


def status_table(errors: Iterable[type[CommandError]], *, done: str = "done") -> list[tuple[str, str]]:
    """``(status, meaning)`` rows, by status: 0 ``done``, then one row per status of ``errors``, the meanings of its classes joined in order."""
    labels: dict[int, str] = {}
    meanings: dict[int, list[str]] = {}
    for kind in errors:
        labels.setdefault(kind.exit_status, kind.status_label())
        found = meanings.setdefault(kind.exit_status, [])
        if kind.meaning not in found:
            found.append(kind.meaning)
    return [("0", done)] + [(labels[status], ", or ".join(meanings[status])) for status in sorted(meanings)]


def status_text(rows: Iterable[tuple[str, str]]) -> str:
    """The table as ``--help`` shows it, in one paragraph: ``exit statuses: 0 done; 1 ...; 2 ...``."""
    return "exit statuses: " + "; ".join(f"{status} {meaning}" for status, meaning in rows) + "."


def report(error: CommandError, prefix: str = "error") -> int:
    """Print ``error`` as ``<prefix>: <message>`` on stderr, one line; return its exit status."""
    print(f"{prefix}: {error.line()}", file=sys.stderr, flush=True)
    return error.status()
