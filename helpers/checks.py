"""The one line a folded check cell prints: ``✓ 4 claims checked``.

A chapter's cell that demonstrates something prints or draws what the reader should see. The cell right after
it, tagged ``check`` and stored folded (the layout is :mod:`helpers.workbook.exercise_layout`'s ``CHECK``),
holds the ``assert`` statements that would fail if the claim were false, and ends with :func:`checked`::

    assert restored.numpy() == 3.0, "the restore did not bring the value back"
    with helpers.expect_error(ValueError, match="^batch_size", quiet=True):
        data.make_datasets(batch_size=0)
    helpers.checked()  # prints: ✓ 2 claims checked

Every ``assert`` statement and every ``with ...expect_error(...)`` block in the cell counts as one claim (an
assert inside a loop is one claim about every item). The count is read from the cell's own source, so it
cannot drift from what the cell checks; a cell that reaches :func:`checked` has passed all of them.
"""

from __future__ import annotations

import ast
import linecache
import re
import sys

#: A ``with`` item that counts as a claim: the expected error shown by :func:`helpers.expect_error`.
_EXPECT_ERROR = re.compile(r"(^|\.)expect_error$")


def count_claims(source: str) -> int:
    """How many ``assert`` statements and ``expect_error`` blocks ``source`` holds (IPython's ``%`` lines skipped)."""
    python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    count = 0
    for node in ast.walk(ast.parse(python)):
        if isinstance(node, ast.Assert):
            count += 1
        elif isinstance(node, ast.With | ast.AsyncWith):
            count += sum(isinstance(item.context_expr, ast.Call) and bool(_EXPECT_ERROR.search(ast.unparse(item.context_expr.func))) for item in node.items)
    return count


def summary(count: int) -> str:
    """``✓ 1 claim checked`` or ``✓ N claims checked``."""
    if count < 1:
        raise ValueError("a check cell checks at least one claim: it holds no assert and no expect_error block")
    return f"✓ {count} claim{'s' if count > 1 else ''} checked"


def checked() -> None:
    """Print how many claims the calling cell checked (its asserts and ``expect_error`` blocks), in one line.

    Call it last in a check cell: reaching it means every claim above it held. The calling cell's source is read
    from where IPython keeps it (``linecache``); called from a file, the whole file is counted.
    """
    filename = sys._getframe(1).f_code.co_filename
    source = "".join(linecache.getlines(filename))
    if not source:
        raise ValueError(f"checked(): cannot read the source of {filename}")
    print(summary(count_claims(source)))
