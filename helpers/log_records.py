"""Capture what TensorFlow's Python logger says during a block, without it reaching stderr.

Why: TensorFlow announces deprecated functions (the v1 ``gradient_checker.compute_gradient``,
for example) with ``logging.warning`` on its ``"tensorflow"`` logger, not with the
:mod:`warnings` module, so ``warnings.catch_warnings`` records nothing.
:func:`helpers.quiet_tensorflow_logs` sets that logger to ``ERROR``, which hides the notice; a
notebook that wants to *show* it needs the record, but not the logger's own stderr handler
(stderr in a stored notebook fails validation). :func:`captured_logs` lowers the level for
the block, swaps the logger's handlers for one that keeps the records, and restores
everything afterwards.

This module does not import TensorFlow: it works on any :mod:`logging` logger by name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _ListHandler(logging.Handler):
    """A handler that appends every record it receives to a list."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(level=logging.NOTSET)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def captured_logs(name: str = "tensorflow", level: int = logging.WARNING) -> Iterator[list[logging.LogRecord]]:
    """Collect the records of logger ``name`` at ``level`` or above during the block.

    Yields the list the records are appended to. While the block runs the logger's own
    handlers are detached and it does not propagate, so nothing is printed; its level,
    handlers and ``propagate`` flag are restored afterwards, even if the block raises.
    Read a record's text with ``record.getMessage()``.
    """
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"level must be a logging level (int), got {level!r}")
    logger = logging.getLogger(name)
    saved = (logger.level, list(logger.handlers), logger.propagate)
    records: list[logging.LogRecord] = []
    handler = _ListHandler(records)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(level)
    try:
        yield records
    finally:
        logger.setLevel(saved[0])
        logger.handlers = saved[1]
        logger.propagate = saved[2]
