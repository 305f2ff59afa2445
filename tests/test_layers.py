"""The layers of helpers/ (tests/layers.py): plumbing < technique < trainer, the machinery apart, checked on
the code's own imports; and the check itself, on small trees that break each rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.paths import repo_root
from tests import layers


def test_the_layers_hold_in_this_repository() -> None:
    assert layers.violations(repo_root()) == []


def test_every_module_of_helpers_has_a_layer() -> None:
    modules = [layers.module_name(path, repo_root()) for path in (repo_root() / "helpers").rglob("*.py")]
    assert modules and [module for module in modules if layers.layer(module) is None] == []


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ({"helpers/paths.py": "from helpers import clipping\n"}, "helpers.paths (plumbing) imports helpers.clipping (technique)"),
        ({"helpers/data.py": "def f():\n    from helpers.train.cli import main\n"}, "helpers.data (plumbing) imports helpers.train.cli.main (trainer)"),
        ({"helpers/checkpoints.py": "import helpers.train\n"}, "helpers.checkpoints (technique) imports helpers.train (trainer)"),
        ({"helpers/train/run.py": "from helpers.workbook import executor\n"}, "helpers.train.run (trainer) imports helpers.workbook.executor (machinery)"),
        ({"helpers/logs.py": "import nbformat\n"}, "helpers.logs (plumbing) imports nbformat"),
        ({"helpers/train/cli.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from papermill import execute_notebook\n"}, "imports papermill"),
    ],
)
def test_a_broken_rule_is_named_with_its_file_and_line(tmp_path: Path, files: dict[str, str], says: str) -> None:
    root = write_tree(tmp_path, files)
    [problem] = layers.violations(root)
    assert says in problem and problem.startswith(next(iter(files)) + ":"), problem


def test_what_the_rule_allows(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {
        "helpers/schedules.py": "from helpers.plots import plot_curves\n",  # technique -> plumbing
        "helpers/train/parts.py": "from helpers.checkpoints import TrainingCheckpoint\nfrom helpers import data\n",  # trainer -> below
        "helpers/workbook/executor.py": "import papermill\nfrom helpers import train\n",  # the machinery may use anything
        "helpers/train/cli.py": "from helpers.train.run import train\nimport tensorflow\n",  # within a layer, and outside helpers/
    })
    assert layers.violations(root) == []
