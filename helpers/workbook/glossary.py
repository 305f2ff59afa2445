"""The glossary (``notebooks/glossary.md``) as data: its rows, the API names in them, and whether each name exists.

One home for what ``tests/test_glossary.py`` checks against the pinned versions and what
``python -m helpers.workbook drift`` checks against the newest: ``python -m helpers.workbook.glossary`` prints, as
JSON, the status of every API name the glossary calls current (not marked gone, v1-only or the
workbook's own) in the environment it runs in: ``"ok"``, ``"missing"`` (it does not resolve) or
``"deprecated"`` (it resolves, and its docstring carries the mark TensorFlow's ``@deprecated`` puts on
what it will remove: "(deprecated)" on the first line, "THIS FUNCTION IS DEPRECATED"). ``make drift``
reports every name whose status differs between the pinned and the newest versions.

:func:`terms` reads the term and 中文 columns for the translation: the English forms of each term, the
Chinese words a translation may use for it, and the seed words it may only quote (the notation is
described in the glossary's introduction and in :data:`CHINESE_ITEM`).
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
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
#: What joins synonyms in a cell of the term and 中文 columns (and nothing else does).
SYNONYMS = " / "
#: One item of a 中文 cell: a word, optionally a gloss in full-width parentheses written beside it
#: (``NaN（非数值）``), then the seed texts that use the word, ``(000)`` or ``(000, 001)``, or ``†`` (in none
#: of them: the usual term). A word in corner brackets, ``「梯度截断」 (000)``, is a seed's word kept only as a
#: quotation: a translation quotes it, and does not use it in its own prose.
CHINESE_ITEM = re.compile(
    r"(?P<open>「)?(?P<word>[^「」（）()/;；†\s](?:[^「」（）()/;；†]*[^「」（）()/;；†\s])?)(?:（(?P<gloss>[^（）]+)）)?(?P<close>」)?"
    r" (?:\((?P<seeds>\d{3}(?:, \d{3})*)\)|(?P<usual>†))"
)
_CODE_SPAN = re.compile(r"`[^`]*`")
_PARENTHESISED = re.compile(r"\s*\(([^()]*)\)")


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


@dataclass(frozen=True)
class Term:
    """One glossary row as the translation check reads it.

    ``english``: the forms to look for in English prose (the term column's alternatives); ``chinese``: the
    words a translation may use for the term, main word first; ``quoted``: seed words a translation may
    only quote, never use in its own prose. Forms nest ("op" in "train op"); a check takes the longest form
    first, since one nesting does not carry over into Chinese: an "object graph" is an 对象图, not a 计算图.
    """

    english: tuple[str, ...]
    chinese: tuple[str, ...]
    quoted: tuple[str, ...]


@dataclass(frozen=True)
class ChineseItem:
    """One parsed item of a 中文 cell: the word, its gloss, the seeds that use it (empty: ``†``), quoted only."""

    word: str
    gloss: str | None
    seeds: tuple[str, ...]
    quoted: bool


def chinese_items(cell: str, where: str = "") -> list[ChineseItem]:
    """The items of a 中文 cell, in order; ``ValueError`` (prefixed with ``where``) if one breaks the notation.

    Items are joined by " / "; each is a word with its mark (see :data:`CHINESE_ITEM`). The first item is
    the main word and may not be quoted only; a quoted-only word must name the seed it is quoted from.
    """
    items = []
    for text in cell.split(SYNONYMS):
        match = CHINESE_ITEM.fullmatch(text.strip())
        if not match:
            raise ValueError(
                f"{where}{text.strip()!r} is not a word followed by its seed numbers, '(000)', or by '†' "
                f"(synonyms are joined by '{SYNONYMS.strip()}', a quoted-only word is written 「word」 (000))"
            )
        if bool(match["open"]) != bool(match["close"]):
            raise ValueError(f"{where}{text.strip()!r}: the corner brackets 「」 of a quoted-only word are not closed")
        quoted = bool(match["open"])
        if quoted and not match["seeds"]:
            raise ValueError(f"{where}{text.strip()!r}: a quoted-only word must name the seed text it quotes, '(000)', not '†'")
        items.append(ChineseItem(match["word"], match["gloss"], tuple(match["seeds"].split(", ")) if match["seeds"] else (), quoted))
    if items[0].quoted:
        raise ValueError(f"{where}the main (first) word {items[0].word!r} is quoted only: put a word for prose first")
    return items


def english_forms(term: str, where: str = "") -> tuple[str, ...]:
    """The English forms of a term cell: its text and each parenthesised alternative, minus parenthesised code.

    ``finite differences (numerical gradient)`` -> both; ``initial epoch (`fit(initial_epoch=...)`)`` ->
    ``initial epoch``; " / " also joins alternatives.
    """
    masked = _CODE_SPAN.sub("\0", term)
    alternatives = [group for group in _PARENTHESISED.findall(masked) if "\0" not in group]
    main = _PARENTHESISED.sub("", masked)
    if "\0" in main or "(" in main or ")" in main:
        raise ValueError(f"{where}the term {term!r} has code or parentheses outside a parenthesised alternative")
    forms = [form.strip() for part in [main, *alternatives] for form in part.split(SYNONYMS)]
    if not all(forms):
        raise ValueError(f"{where}the term {term!r} has an empty alternative")
    return tuple(dict.fromkeys(forms))


def terms(path: Path = GLOSSARY) -> list[Term]:
    """Every row of the glossary as a :class:`Term`; ``ValueError`` naming the line of a row that breaks the notation."""
    found = []
    for number, cells in rows(path):
        where = f"{path.name}, line {number}: "
        if len(cells) != len(COLUMNS):
            raise ValueError(f"{where}{len(cells)} cells, expected {len(COLUMNS)} ({' | '.join(COLUMNS)})")
        items = chinese_items(cells[1], where)
        found.append(
            Term(
                english=english_forms(cells[0], where),
                chinese=tuple(item.word for item in items if not item.quoted),
                quoted=tuple(item.word for item in items if item.quoted),
            )
        )
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
