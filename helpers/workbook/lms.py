"""Returned notebooks from a learning platform's download (a zip of every student's file): ``make grade ARGS="--zip FILE --chapter 03"``.

nbgrader's ``zip_collect`` does the work in the course folder: it extracts the archives put in
``downloaded/<chapter>/archive/`` into ``downloaded/<chapter>/extracted/``, finds each file's student in its name
with a regular expression, and copies it to ``submitted/<student>/<chapter>/`` with its submission time in
``timestamp.txt``. Two plugins here keep that time on every download:

- :class:`TimedCollector` reads the time from the file name when the pattern has a ``timestamp`` group, in the
  ``2026-12-10-23-59-00`` form of nbgrader's own example (nbgrader 0.9.6 reads that form as 2026-12-11 09:00, the
  last three numbers taken for a time zone, so it is converted here first), and otherwise takes the time the
  archive records for the file;
- :class:`TimedExtractor` extracts each archive keeping those recorded times (Python's ``zipfile``, which nbgrader's
  extractor uses, gives every extracted file the time of the extraction). A zip records local times without a
  zone; they are read as UTC.

The pattern is matched against each file's name (not its folder), from its start: :data:`NAME_PATTERN` by default.
"""

from __future__ import annotations

import os
import re
import shutil
import zipfile
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from helpers.failures import UsageError

#: The file names a download holds by default: ``<anything>_<student>_attempt_<YYYY-MM-DD-HH-MM-SS>_<chapter>.ipynb``, the form
#: of nbgrader's example in ``FileNameCollectorPlugin.named_regexp``'s help (a platform that writes other names needs ``--name-pattern``).
NAME_PATTERN = r".*_(?P<student_id>[A-Za-z0-9.-]+)_attempt_(?P<timestamp>\d{4}(?:-\d\d){5})_(?P<file_id>\d\d_\w+\.ipynb)$"
#: The groups a name pattern must have (nbgrader's ``zip_collect`` needs them); ``timestamp`` is optional.
REQUIRED_GROUPS = ("student_id", "file_id")
#: The time form of nbgrader's example, six numbers joined by dashes.
_DASHED_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)$")


def check_pattern(pattern: str) -> str:
    """``pattern`` if it is a regular expression with the groups nbgrader needs; :class:`~helpers.failures.UsageError` otherwise."""
    try:
        groups = re.compile(pattern).groupindex
    except re.error as error:
        raise UsageError(f"--name-pattern {pattern!r} is not a regular expression: {error}") from None
    missing = [name for name in REQUIRED_GROUPS if name not in groups]
    if missing:
        raise UsageError(f"--name-pattern needs the named groups {', '.join(f'(?P<{name}>...)' for name in missing)}: they say whose file it is and which")
    return pattern


def submission_time(text: str | None, file: Path) -> str:
    """The time a returned file was submitted, as nbgrader reads it: from the name's ``timestamp`` group (``text``) if any, else the file's own time."""
    dashed = _DASHED_TIME.match(text or "")
    if dashed:
        year, month, day, hour, minute, second = (int(number) for number in dashed.groups())
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    elif text:
        return text
    else:
        moment = datetime.fromtimestamp(file.stat().st_mtime, tz=UTC)
    return moment.isoformat(" ")


@cache
def _plugins() -> tuple[type, type]:
    from nbgrader.plugins.zipcollect import ExtractorPlugin, FileNameCollectorPlugin

    class TimedExtractor(ExtractorPlugin):
        """nbgrader's extractor, but each extracted file keeps the time its archive records for it."""

        def extract(self, archive_path: str, extracted_path: str) -> None:
            super().extract(archive_path, extracted_path)
            for folder, _, names in os.walk(archive_path):
                for name in names:
                    archive = Path(folder, name)
                    if not zipfile.is_zipfile(archive):
                        continue
                    target = Path(extracted_path, os.path.relpath(folder, archive_path), archive.stem)
                    with zipfile.ZipFile(archive) as opened:
                        for entry in opened.infolist():
                            extracted = target / entry.filename
                            if extracted.is_file():
                                year, month, day, hour, minute, second = entry.date_time
                                when = datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()
                                os.utime(extracted, (when, when))

    class TimedCollector(FileNameCollectorPlugin):
        """nbgrader's collector, matched against each file's name, always giving a submission time (:func:`submission_time`)."""

        def collect(self, submitted_file: str) -> dict[str, Any] | None:
            path = Path(submitted_file)
            if path.suffix not in self.valid_ext:
                return None
            match = re.match(self.named_regexp, path.name)
            if match is None:
                self.log.warning("not a returned notebook by its name (--name-pattern): %s", path.name)
                return None
            found = {key: value for key, value in match.groupdict().items() if value is not None}
            found["timestamp"] = submission_time(found.get("timestamp"), path)
            return found

    return TimedExtractor, TimedCollector


def __getattr__(name: str) -> Any:
    """The plugins, made on first use (nbgrader is imported only then): ``TimedExtractor``, ``TimedCollector``."""
    if name in ("TimedExtractor", "TimedCollector"):
        return dict(zip(("TimedExtractor", "TimedCollector"), _plugins(), strict=True))[name]
    raise AttributeError(name)


def zip_collect(root: Path, chapter: str, archives: list[Path], pattern: str = NAME_PATTERN) -> list[str]:
    """Put ``archives`` in the course's ``downloaded/<chapter>/archive/`` and collect them with nbgrader's ``zip_collect``; the students collected.

    A student returned again replaces the copy there. :class:`~helpers.failures.UsageError` for an archive that is
    missing or not a zip, a chapter not in the course, or a download in which no name matches ``pattern``.
    """
    from helpers.workbook.course import run_nbgrader, submissions

    check_pattern(pattern)
    if not (root / "source" / chapter).is_dir():
        raise UsageError(f"no chapter {chapter!r} in the course: --zip needs one --chapter, its full name or number")
    for archive in archives:
        if not archive.is_file():
            raise UsageError(f"{archive}: no such file")
        if not zipfile.is_zipfile(archive):
            raise UsageError(f"{archive}: not a zip file")
    folder = root / "downloaded" / chapter / "archive"
    shutil.rmtree(folder.parent, ignore_errors=True)  # the download of an earlier collection
    folder.mkdir(parents=True)
    for archive in archives:
        shutil.copyfile(archive, folder / archive.name)
    def changed() -> dict[str, int]:  # zip_collect empties and refills the folder of each student it collects
        return {student: (root / "submitted" / student / chapter).stat().st_mtime_ns for student, name in submissions(root) if name == chapter}

    before = changed()
    run_nbgrader(
        root, "zip_collect", chapter, "--force",
        "--ZipCollectApp.extractor_plugin=helpers.workbook.lms.TimedExtractor",
        "--ZipCollectApp.collector_plugin=helpers.workbook.lms.TimedCollector",
        f"--FileNameCollectorPlugin.named_regexp={pattern}",
    )  # fmt: skip
    collected = [student for student, when in changed().items() if when != before.get(student)]
    if not collected:
        raise UsageError(f"no file in {', '.join(archive.name for archive in archives)} has a name that --name-pattern matches ({pattern})")
    return collected
