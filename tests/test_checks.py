"""helpers.checks: the one line a folded check cell prints, counted from the cell's own source."""

from __future__ import annotations

import linecache

import pytest

from helpers import checks


def test_asserts_and_expect_error_blocks_are_claims() -> None:
    source = """
x = 3
assert x == 3, "x"
for value in range(4):
    assert value < 4  # one claim about every item
with helpers.expect_error(ValueError, match="^batch"):
    make(batch_size=0)
with expect_error(KeyError), open("f") as handle:
    pass
with exercises.check("Exercise 1", hint="h"):  # not a claim of the chapter
    pass
%timeit x
helpers.checked()
"""
    assert checks.count_claims(source) == 4


def test_the_summary_line() -> None:
    assert checks.summary(1) == "✓ 1 claim checked"
    assert checks.summary(4) == "✓ 4 claims checked"
    with pytest.raises(ValueError, match="at least one claim"):
        checks.summary(0)


def test_checked_counts_the_calling_cell(capsys: pytest.CaptureFixture[str]) -> None:
    source = "assert 1 + 1 == 2\nassert 'a' < 'b'\nhelpers.checked()\n"
    filename = "<ipython-cell-test>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # as IPython keeps a cell
    try:
        code = compile(source, filename, "exec")
        exec(code, {"helpers": __import__("helpers")})
    finally:
        del linecache.cache[filename]
    assert capsys.readouterr().out == "✓ 2 claims checked\n"


def test_checked_without_a_source_says_so() -> None:
    with pytest.raises(ValueError, match="cannot read the source"):
        exec(compile("helpers.checked()", "<nowhere>", "exec"), {"helpers": __import__("helpers")})
