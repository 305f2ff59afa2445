"""notebooks/seed_map.md: every entry has a verdict and a link, and every link lands on a real heading."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from helpers.paths import NOTEBOOKS_DIR
from tests import anchors

SEED_MAP = NOTEBOOKS_DIR / "seed_map.md"
#: The verdicts an entry may give, as the first words of its verdict column.
VERDICTS = ("true", "tf.compat.v1 only", "does not exist", "bug in the text's code", "misleading")
SEEDS = ("000", "001", "003")
ROW = re.compile(r"^\| (?P<seed>\d{3})\.(?P<number>\d+) \| (?P<claim>[^|]+) \| (?P<verdict>[^|]+) \| (?P<where>.+) \|$")


def _rows() -> list[re.Match[str]]:
    return [match for line in SEED_MAP.read_text(encoding="utf-8").splitlines() if (match := ROW.match(line))]


def test_every_seed_has_entries_numbered_in_order() -> None:
    by_seed: dict[str, list[int]] = {}
    for row in _rows():
        by_seed.setdefault(row["seed"], []).append(int(row["number"]))
    assert tuple(by_seed) == SEEDS
    for seed, numbers in by_seed.items():
        assert numbers == list(range(1, len(numbers) + 1)), f"seed {seed}: entries numbered {numbers}"


def test_every_entry_has_a_verdict_and_a_link_to_a_notebook() -> None:
    for row in _rows():
        entry = f"{row['seed']}.{row['number']}"
        assert row["verdict"].strip().startswith(VERDICTS), f"{entry}: verdict {row['verdict']!r}"
        targets = anchors.rendered_link_targets(row["where"])
        assert targets and all(".ipynb#" in target for target in targets), f"{entry}: no link to a notebook section"


@pytest.mark.parametrize("target", sorted(set(anchors.rendered_link_targets(SEED_MAP.read_text(encoding="utf-8")))))
def test_every_link_resolves_to_a_heading(target: str) -> None:
    name, _, anchor = target.partition("#")
    notebook = NOTEBOOKS_DIR / name
    assert notebook.is_file(), f"{name} is not a notebook of the workbook"
    if anchor:
        headings = anchors.heading_anchors(notebook)
        assert anchor in headings, f"#{anchor} is not a heading of {name}; its headings: {sorted(headings)}"


def test_the_verdict_counts_are_printed_in_the_map() -> None:
    """The map's summary table states per seed how many entries have each verdict; keep it true."""
    counts = Counter((row["seed"], next(v for v in VERDICTS if row["verdict"].strip().startswith(v))) for row in _rows())
    text = SEED_MAP.read_text(encoding="utf-8")
    for seed in SEEDS:
        cells = " | ".join(str(counts[(seed, verdict)]) for verdict in VERDICTS)
        total = sum(counts[(seed, verdict)] for verdict in VERDICTS)
        assert f"| {seed} | {cells} | {total} |" in text, f"the summary row for seed {seed} should read: | {seed} | {cells} | {total} |"
