"""The glossary (``notebooks/glossary.md``) as data: its rows, the API names in them, and whether each name exists.

One home for what ``tests/test_glossary.py`` checks against the pinned versions and what
``python -m helpers.workbook.drift`` checks against the newest: ``python -m helpers.workbook.glossary`` prints, as
JSON, the status of every API name the glossary calls current (not marked gone, v1-only or the
workbook's own) in the environment it runs in: ``"ok"``, ``"missing"`` (it does not resolve) or
``"deprecated"`` (it resolves, and its docstring carries the mark TensorFlow's ``@deprecated`` puts on
what it will remove: "(deprecated)" on the first line, "THIS FUNCTION IS DEPRECATED"). ``make drift``
reports every name whose status differs between the pinned and the newest versions.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

from helpers.paths import NOTEBOOKS_DIR

GLOSSARY: Path = NOTEBOOKS_DIR / "glossary.md"
COLUMNS = ("term", "中文", "API", "taught in")
#: The marks an API name may carry, written right after it: ``name`` (gone).
GONE, COMPAT_V1, OWN = "gone", "tf.compat.v1 only", "the workbook's own"
API_NAME = re.compile(r"`(?P<name>[^`]+)`(?: \((?P<mark>gone|tf\.compat\.v1 only|the workbook's own)\))?")
#: The top-level names a glossary API name may start with, and the module each stands for.
ROOTS = {"tf": "tensorflow", "keras": "keras"}
#: How TensorFlow's ``@deprecated`` marks a docstring: "(deprecated)" ending its first line, and a warning paragraph.
_DEPRECATED = re.compile(r"\A[^\n]*\(deprecated\)|THIS (FUNCTION|CLASS) IS DEPRECATED")


def rows(path: Path = GLOSSARY) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every table row after the header and its separator line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = next(number for number, line in enumerate(lines) if line.startswith("| term |"))
    if [cell.strip() for cell in lines[header].strip("|").split("|")] != list(COLUMNS):
        raise ValueError(f"{path.name}: the header must name the columns {' | '.join(COLUMNS)}")
    if not set(lines[header + 1]) <= {"|", "-"}:
        raise ValueError(f"{path.name}: the header must be followed by the separator line")
    found = []
    for number, line in enumerate(lines[header + 2 :], start=header + 3):
        if not line.startswith("|"):
            break
        found.append((number, [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split(" | ")]))
    return found


def api_names(cell: str) -> list[tuple[str, str | None]]:
    """The ``name`` items of an API cell with their mark (``None``: the name is current)."""
    return [(match["name"], match["mark"]) for match in API_NAME.finditer(cell)]


def lookup(name: str) -> object | None:
    """The object a dotted API name stands for, or ``None`` when it does not resolve.

    ``tf.x.y`` / ``keras.x.y`` are walked attribute by attribute from ``tensorflow`` / ``keras``; any
    other name (``tensorflow.python.ops.gradient_checker.X``, ``helpers.exercises.check``) from its
    longest importable module prefix. A method or property is looked up on its class
    (``keras.optimizers.Optimizer.iterations``).
    """
    parts = name.split(".")
    if parts[0] in ROOTS:
        target, rest = importlib.import_module(ROOTS[parts[0]]), parts[1:]
    else:
        for cut in range(len(parts), 0, -1):
            try:
                target, rest = importlib.import_module(".".join(parts[:cut])), parts[cut:]
                break
            except ImportError:
                continue
        else:
            return None
    for attribute in rest:
        if not hasattr(target, attribute):
            return None
        target = getattr(target, attribute)
    return target


def resolve(name: str) -> bool:
    """Whether a dotted API name exists (see :func:`lookup`)."""
    return lookup(name) is not None


def current_api_status(path: Path = GLOSSARY) -> dict[str, str]:
    """``{name: "ok" | "missing" | "deprecated"}`` for every API name the glossary calls current."""
    status = {}
    for _, cells in rows(path):
        for name, mark in api_names(cells[2]):
            if mark is not None or name in status:
                continue
            target = lookup(name)
            if target is None:
                status[name] = "missing"
            else:
                status[name] = "deprecated" if _DEPRECATED.search(getattr(target, "__doc__", None) or "") else "ok"
    return status


if __name__ == "__main__":
    from helpers.environment import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    print(json.dumps(current_api_status(), sort_keys=True))
