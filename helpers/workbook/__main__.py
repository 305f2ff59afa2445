"""``python -m helpers.workbook``: the command line, :func:`helpers.workbook.commands.main` (``--help`` lists the commands and the exit statuses)."""

from __future__ import annotations

from helpers.workbook.commands import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
