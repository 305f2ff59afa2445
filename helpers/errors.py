"""Show an expected error in a notebook without stopping the notebook.

papermill fails a run on any raising cell, tags or not, so a notebook that teaches an
error catches it, prints its type and the first line of its message, and fails loudly if
the error did not happen (the claim it demonstrates would then be false).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Noise a reader does not need, removed from messages: terminal colour codes (Keras highlights
#: parts of some messages) and the internal name TensorFlow puts before an error raised inside a
#: graph function (``{{function_node __wrapped__CheckNumerics_device_/job:localhost/...}}``).
_NOISE = re.compile(r"\x1b\[[0-9;]*m|\{\{function_node [^}]*\}\}\s*")
#: ``<module.Class object at 0x7f...>``: the address changes every run; the class name is kept.
_OBJECT_ADDRESS = re.compile(r"<([\w.]+) object at 0x[0-9a-fA-F]+>")


@dataclass
class CaughtError:
    """What :func:`expect_error` caught; ``value`` is ``None`` until the block has run."""

    value: BaseException | None = None

    @property
    def type_name(self) -> str:
        return type(self.value).__name__ if self.value is not None else ""

    @property
    def message(self) -> str:
        """The whole message as a reader should see it.

        ``str(exception)`` without terminal colour codes or TensorFlow's internal
        ``{{function_node ...}}`` prefix, and with object addresses reduced to the class name
        (``<module.Class>``), so that a stored notebook output is the same in every run.
        """
        if self.value is None:
            return ""
        return _OBJECT_ADDRESS.sub(r"<\1>", _NOISE.sub("", str(self.value)))

    @property
    def first_line(self) -> str:
        return first_line(self.message)


def first_line(text: str) -> str:
    """The first line of ``text`` that is not blank, stripped (``""`` if none): where a message says what went wrong.

    :func:`helpers.exercises.error_reason` finds the line of an error that carries a traceback in its message.
    """
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


@contextmanager
def expect_error(
    *expected: type[BaseException],
    match: str | None = None,
    max_chars: int = 240,
    quiet: bool = False,
) -> Iterator[CaughtError]:
    """Run a block that must raise one of ``expected``; print ``Type: first line`` (nothing when ``quiet``).

    - The block raises an expected type: it is caught and printed, and the returned
      :class:`CaughtError` holds it for further asserts.
    - ``match`` (a regex) must be found in the full message, else ``AssertionError``; the line
      printed is then the first line that matches (some messages start with a generic line
      such as ``in user code:``).
    - The block raises nothing: ``AssertionError``, so a claim that stopped being true fails.
    - Any other exception propagates unchanged.

    ``quiet=True`` is for a folded check cell, whose one line is :func:`helpers.checked`'s: the error is
    checked the same way and printed nowhere.
    """
    if not expected:
        raise TypeError("expect_error() needs at least one exception type")
    caught = CaughtError()
    try:
        yield caught
    except expected as exc:
        caught.value = exc
        if match is not None and not re.search(match, caught.message):
            raise AssertionError(
                f"{caught.type_name} was raised but its message does not match {match!r}: {caught.first_line}"
            ) from exc
        line = caught.first_line
        if match is not None:
            line = next((text.strip() for text in caught.message.splitlines() if re.search(match, text)), line)
            line = line.removeprefix(f"{caught.type_name}: ")  # some messages repeat their type
        if len(line) > max_chars:
            line = line[: max_chars - 3] + "..."
        if not quiet:
            print(f"{caught.type_name}: {line}")
        return
    names = " or ".join(kind.__name__ for kind in expected)
    raise AssertionError(f"expected {names}, but the block raised nothing")


#: The ``errno`` values of a write that failed for lack of space: a full disk, an exceeded quota.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def errno_of(error: BaseException) -> int:
    """The ``errno`` behind ``error``: its own for an ``OSError``, else the code whose text its message holds (``EIO`` if none).

    TensorFlow reports a failed file write as an ``OpError`` whose message holds the C library's
    words for the code ("No space left on device"); the longest such text found wins.
    """
    if isinstance(error, OSError) and error.errno is not None:
        return int(error.errno)
    text = str(error)
    found = [code for code in errno.errorcode if len(os.strerror(code)) > 8 and os.strerror(code) in text]
    return max(found, key=lambda code: len(os.strerror(code))) if found else errno.EIO
