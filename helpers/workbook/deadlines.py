"""The course's due dates and late policy: parsing them, keeping them in nbgrader's gradebook, and the penalty nbgrader applies.

A due date is the teacher's ``--due "2026-12-10 23:59"`` (:func:`parse_due`): ISO 8601, to the minute, in the
build machine's local time zone (what ``date`` shows, ``TZ`` if set) unless it carries its own offset
(``2026-12-10 23:59+08:00``, ``...Z``). It is stored per chapter in nbgrader's gradebook as the assignment's
due date, in UTC as nbgrader keeps it (:func:`set_due_dates`); ``nbgrader autograde`` compares it with each
submission's ``timestamp.txt`` (written by nbgrader's exchange when a student submits) and records how
late it was.

The late policy is one number for the course, ``--late-penalty PERCENT``: a late notebook loses that share
of its score for each started day past the due date (:func:`late_penalty`), never more than its score;
0 (the default) marks late work and keeps its points, 100 gives it none. nbgrader applies it while
autograding, through :data:`LatePenalty`, the course's ``AssignLatePenalties.plugin_class``. The gradebook
then holds the penalty beside the score: nbgrader's ``export`` writes ``raw_score``,
``late_submission_penalty`` and ``score`` (the raw score minus the penalty) to ``grades.csv``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helpers.failures import UsageError

#: A day, in seconds: the unit of the late policy.
DAY_SECONDS = 24 * 60 * 60
#: How ``--due`` is written (the error for anything else names it).
DUE_FORMAT = "YYYY-MM-DD HH:MM (ISO 8601, the build machine's local time unless followed by an offset such as +08:00 or Z)"
#: The word that clears a due date (``--due none``).
NO_DUE_DATE = "none"
_DUE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?")


def parse_due(text: str) -> datetime | None:
    """``--due``'s value as an aware datetime in UTC; None for ``none`` (clear it); :class:`UsageError` naming the format otherwise.

    Without an offset the time is the build machine's local time (``TZ``, else the system's zone), on that date
    (so summer time is applied when it holds then).
    """
    text = text.strip()
    if text.lower() == NO_DUE_DATE:
        return None
    when = None
    if _DUE.fullmatch(text):
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            when = None
    if when is None:
        raise UsageError(f"--due {text!r} is not a date and time: write {DUE_FORMAT}, or {NO_DUE_DATE} to clear it")
    return when.astimezone(UTC)  # a naive datetime is taken as local time here


def parse_late_penalty(text: str) -> float:
    """``--late-penalty``'s value: a percentage from 0 to 100; :class:`UsageError` otherwise."""
    try:
        percent = float(text.strip().removesuffix("%"))
    except ValueError:
        percent = math.nan
    if not 0 <= percent <= 100:  # NaN fails it too
        raise UsageError(f"--late-penalty {text!r} is not a percentage from 0 to 100 (of a late notebook's score, per started day late)")
    return percent


def days_late(seconds_late: float) -> int:
    """The days a submission counts as late: every started day, so 1 s late is one day, exactly a day is one, 2.5 days are three."""
    return math.ceil(seconds_late / DAY_SECONDS) if seconds_late > 0 else 0


def late_penalty(score: float, seconds_late: float, percent_per_day: float) -> float:
    """The points a notebook loses: ``percent_per_day`` of ``score`` per started day late (:func:`days_late`), at most ``score``."""
    if score <= 0:
        return 0.0
    return min(score, score * percent_per_day * days_late(seconds_late) / 100)


def days_to_nothing(percent_per_day: float) -> int | None:
    """After how many started days late a notebook keeps no points (None when the policy takes none)."""
    return math.ceil(100 / percent_per_day) if percent_per_day > 0 else None


def _gradebook(root: Path) -> Any:
    from nbgrader.api import Gradebook

    from helpers.workbook.course import COURSE_ID

    return Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id=COURSE_ID)


def set_due_dates(root: Path, chapters: Iterable[str], due: datetime | None) -> None:
    """Record ``due`` (None: no due date) as each chapter's due date in the gradebook of the course in ``root``, creating the assignment if new.

    A gradebook nbgrader has not made yet is made here, and nbgrader then runs ``alembic`` by name (on ``PATH``) for its schema's version:
    :func:`helpers.workbook.course.build_course` calls this after ``nbgrader generate_assignment``, which made it.
    """
    naive_utc = None if due is None else due.astimezone(UTC).replace(tzinfo=None)  # what nbgrader stores
    with _gradebook(root) as gradebook:
        for chapter in chapters:
            gradebook.update_or_create_assignment(chapter, duedate=naive_utc)


def due_dates(root: Path) -> dict[str, datetime]:
    """Every chapter of the course in ``root`` that has a due date, with it (aware, UTC); none without a gradebook."""
    if not (root / "gradebook.db").is_file():
        return {}
    with _gradebook(root) as gradebook:
        return {assignment.name: assignment.duedate.replace(tzinfo=UTC) for assignment in gradebook.assignments if assignment.duedate is not None}


def local_time(when: datetime) -> str:
    """A due date as the header and the command line show it: local time with its offset, and in UTC when that differs.

    ``2026-12-10 23:59 UTC+08:00 (2026-12-10 15:59 UTC)``; ``2026-12-10 23:59 UTC`` where local time is UTC.
    """
    local = when.astimezone()
    offset = local.strftime("%z")
    if offset in ("+0000", "-0000"):
        return f"{local:%Y-%m-%d %H:%M} UTC"
    return f"{local:%Y-%m-%d %H:%M} UTC{offset[:3]}:{offset[3:]} ({when.astimezone(UTC):%Y-%m-%d %H:%M} UTC)"


# --- nbgrader's side: the late-submission plugin ------------------------------------------------------------


def plugin_class() -> type:
    """nbgrader's ``LateSubmissionPlugin`` with this course's policy: :func:`late_penalty` at ``LatePenalty.percent_per_day``."""
    from nbgrader.plugins import LateSubmissionPlugin
    from traitlets import Float

    class LatePenalty(LateSubmissionPlugin):
        """A late notebook loses ``percent_per_day`` of its score per started day late, at most its score."""

        percent_per_day = Float(0.0, min=0.0, max=100.0, help="Share of a late notebook's score it loses per started day late, in percent").tag(config=True)

        def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
            penalty = late_penalty(score, total_seconds_late, self.percent_per_day)
            days = days_late(total_seconds_late)
            self.log.info("%s: %d day(s) late at %g%% a day: %g of %g points off", student_id, days, self.percent_per_day, penalty, score)
            return penalty

    return LatePenalty


def __getattr__(name: str) -> Any:
    """``LatePenalty``, made on first use (importing nbgrader costs a second or more), for ``nbgrader_config.py``."""
    if name == "LatePenalty":
        value = plugin_class()
        globals()[name] = value
        return value
    raise AttributeError(name)
