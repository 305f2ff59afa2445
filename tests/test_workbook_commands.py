"""helpers.workbook.commands: one command line, its exit statuses derived from the error classes, a bug left a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.workbook import commands, course
from helpers.workbook.book import BookError
from helpers.workbook.commands import main


def test_help_lists_the_statuses_of_the_error_classes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    epilog = " ".join(capsys.readouterr().out.split()).split("exit statuses: ")[1]
    statuses = [int(status) for status in re.findall(r"(?:^|; )(\d+) ", epilog)]
    assert sorted(set(statuses)) == [0, 1, 2, 3, 4, 5] == sorted({0, *(kind.exit_status for kind in commands.ERRORS)})
    for kind in commands.ERRORS:
        assert kind.meaning in epilog, kind.__name__


def test_every_command_is_one_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = re.search(r"\{([\w,]+)\}", capsys.readouterr().out)
    assert listed is not None
    assert set(listed.group(1).split(",")) == {"run", "refresh", "list", "book", "lab", "course", "grade", "translations", "drift", "configs", "screenshots"}


@pytest.mark.parametrize(
    ("error", "status", "line"),
    [
        (BookError("notebooks/03_x.ipynb: NotJSONError: cut short"), 3, "the book could not be built, the previous one is kept: notebooks/03_x.ipynb"),
        (course.CourseError("nbgrader export failed"), 4, "nbgrader export failed"),
        (commands.NotebooksFailed("1 of 2 notebook(s) failed: 01_bad"), 1, "1 of 2 notebook(s) failed: 01_bad"),
    ],
)
def test_an_expected_failure_is_one_line_with_its_class_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: Exception, status: int, line: str
) -> None:
    def fail(*_: object) -> None:
        raise error

    monkeypatch.setattr(commands, "list_command", fail)
    assert main(["list"]) == status
    [printed] = capsys.readouterr().err.splitlines()
    assert printed.startswith(f"python -m helpers.workbook: error: {line}")


def test_a_bug_is_a_traceback_not_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A plain ValueError deep in course.build_course is a bug: it propagates (Python exits 1 with its traceback)."""

    def broken(*_: object, **__: object) -> Path:
        raise ValueError("a bug in the course builder")

    monkeypatch.setattr(course, "build_course", broken)
    with pytest.raises(ValueError, match="a bug in the course builder"):
        main(["course", "03"])


def test_a_selector_that_matches_nothing_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["course", "77"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("python -m helpers.workbook: error: no notebook matches '77'; the notebooks are: 00_start_here, ")


def test_translations_check_fails_while_a_message_needs_a_translator(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers.workbook import translations

    problem = translations.Problem(Path("notebooks/locales/zh_CN/LC_MESSAGES/01_global_step.po"), "The global step", "untranslated")
    monkeypatch.setattr(translations, "problems", lambda files, check_terms: [problem])
    assert main(["translations", "check", "--no-terms"]) == commands.TranslationsNeeded.exit_status == 1
    out, err = capsys.readouterr()
    assert 'untranslated: "The global step"' in out and err == "python -m helpers.workbook: error: 1 message(s) need a translator\n"
    monkeypatch.setattr(translations, "problems", lambda files, check_terms: [])
    assert main(["translations", "check"]) == 0
