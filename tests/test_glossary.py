"""notebooks/glossary.md: every row filled, each term once, every API name true to the pinned versions, every link a heading.

The Chinese words marked with a seed number are quoted from the seed texts, which are not in this
repository; they were checked against the texts when the page was written, and are not re-checked here.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from helpers.paths import NOTEBOOKS_DIR
from helpers.workbook import anchors
from helpers.workbook.glossary import API_NAME, COLUMNS, COMPAT_V1, GONE, api_names, resolve, rows

API_ITEM = re.compile(API_NAME.pattern + r"$")
#: A Chinese item: a word followed by the seed texts that use it, "(000)" or "(000, 001)", or by † (not in the texts).
CHINESE_ITEM = re.compile(r"(?P<word>\S.*?) (?:\((?P<seeds>\d{3}(?:, \d{3})*)\)|(?P<usual>†))")
SEEDS = {"000", "001", "003"}


def v1_path(name: str) -> str:
    """``tf.train.create_global_step`` -> ``tf.compat.v1.train.create_global_step``."""
    assert name.startswith("tf."), f"{name}: only a tf.* name can be 'tf.compat.v1 only'"
    return "tf.compat.v1." + name.removeprefix("tf.")


ROWS = rows()


def _row_id(row: tuple[int, list[str]]) -> str:
    number, cells = row
    return f"line {number}: {cells[0]}"


@functools.cache
def _anchors(notebook: Path) -> frozenset[str]:
    return frozenset(anchors.heading_anchors(notebook))


def test_the_table_has_rows_from_every_chapter() -> None:
    chapters = {target[:2] for _, cells in ROWS for target in anchors.link_targets(cells[3])}
    assert len(ROWS) >= 30, f"only {len(ROWS)} rows"
    assert chapters >= {f"{n:02d}" for n in range(10)}, f"no row links to chapters {sorted({f'{n:02d}' for n in range(10)} - chapters)}"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_row_has_all_columns_filled(row: tuple[int, list[str]]) -> None:
    _, cells = row
    where = _row_id(row)
    assert len(cells) == len(COLUMNS), f"{where}: {len(cells)} cells, expected {len(COLUMNS)} ({' | '.join(COLUMNS)})"
    for column, cell in zip(COLUMNS, cells, strict=True):
        assert cell and cell not in {"-", "—", "?"}, f"{where}: the {column} column is empty"


def test_each_term_appears_once() -> None:
    seen: dict[str, str] = {}
    for row in ROWS:
        term = row[1][0].lower()
        assert term not in seen, f"{_row_id(row)}: the term {row[1][0]!r} is already in {seen[term]}"
        seen[term] = _row_id(row)


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_chinese_word_says_where_it_comes_from(row: tuple[int, list[str]]) -> None:
    """Each item is "word (seed numbers)" for a word the seed texts use, or "word †" for the usual term."""
    where = _row_id(row)
    for item in row[1][1].split("; "):
        match = CHINESE_ITEM.fullmatch(item)
        assert match, f"{where}: {item!r} names neither the seed texts that use it, '(000)', nor '†' (not from the texts)"
        if match["seeds"]:
            unknown = set(match["seeds"].split(", ")) - SEEDS
            assert not unknown, f"{where}: {item!r} names seed texts that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_api_name_is_true_to_the_pinned_versions(row: tuple[int, list[str]]) -> None:
    where = _row_id(row)
    cell = row[1][2]
    items = cell.split("; ")
    for item in items:
        assert API_ITEM.fullmatch(item), (
            f"{where}: {item!r} is not a `name`, optionally followed by (gone), (tf.compat.v1 only) or (the workbook's own)"
        )
    names = api_names(cell)
    assert names, f"{where}: no API name"
    for name, mark in names:
        if mark is None:
            assert resolve(name), f"{where}: {name} does not resolve in the pinned TensorFlow/Keras; mark it (gone) or fix it"
        elif mark == GONE:
            assert not resolve(name), f"{where}: {name} is marked (gone) but resolves"
            if name.startswith("tf."):
                assert not resolve(v1_path(name)), (
                    f"{where}: {name} is marked (gone) but {v1_path(name)} resolves: mark it (tf.compat.v1 only)"
                )
        elif mark == COMPAT_V1:
            assert not resolve(name), f"{where}: {name} is marked (tf.compat.v1 only) but resolves in TF 2"
            assert resolve(v1_path(name)), f"{where}: {name} is marked (tf.compat.v1 only) but {v1_path(name)} does not resolve"
        else:
            assert name.startswith("helpers.") and resolve(name), (
                f"{where}: {name} is marked (the workbook's own) but is not a helpers function"
            )


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_every_link_lands_on_a_heading(row: tuple[int, list[str]]) -> None:
    where = _row_id(row)
    targets = anchors.link_targets(row[1][3])
    assert targets, f"{where}: no link to a chapter section"
    for target in targets:
        name, _, anchor = target.partition("#")
        notebook = NOTEBOOKS_DIR / name
        assert name.endswith(".ipynb") and anchor, f"{where}: {target} is not a link to a notebook section (NN_name.ipynb#anchor)"
        assert notebook.is_file(), f"{where}: {name} is not a notebook of the workbook"
        assert anchor in _anchors(notebook), f"{where}: #{anchor} is not a heading of {name}"


def test_current_api_status_in_the_pinned_versions() -> None:
    """What make drift compares between the pinned and the newest versions: no current name is missing here."""
    from helpers.workbook.glossary import current_api_status

    status = current_api_status()
    assert status and "missing" not in status.values()
    assert status["tf.function"] == status["keras.optimizers.Optimizer.iterations"] == "ok" and "tf.train.create_global_step" not in status  # marked v1-only
    assert status["tf.compat.v1.test.compute_gradient"] == "deprecated"  # TF 2.21 marks the v1 checker (chapter 07 shows its notice)


def test_resolve() -> None:
    """The resolver itself: attributes, class attributes, private modules, and names that are not there."""
    assert resolve("tf.train.Checkpoint") and resolve("keras.optimizers.Optimizer.iterations")
    assert resolve("tensorflow.python.ops.gradient_checker.compute_gradient") and resolve("helpers.workbook.anchors.link_targets")
    assert not resolve("tf.train.no_such_name") and not resolve("tf.no_such_module.Checkpoint")
    assert not resolve("tensorflow.python.no_such_module.x") and not resolve("no_such_package.x")
