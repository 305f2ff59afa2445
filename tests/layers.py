"""The layers of ``helpers/`` and the rule between them, read from the code's own imports (``tests/test_layers.py`` checks them).

- **plumbing**: what every chapter needs and no chapter teaches (quiet logs, seeds, the notebook parameters, paths, data, the
  model, figures, reading event files, free ports, the exercises' self-check);
- **technique**: one training utility each, as a chapter teaches it (clipping, schedules, checkpoints,
  the TensorBoard server, TensorFlow's log records);
- **trainer**: ``helpers.train``, the capstone that combines the techniques;
- **machinery**: ``helpers.workbook``, the project's own tools (commands, executor, book, lab, drift ...).

The rule: a layer imports only the layers before it in :data:`ORDER` (plumbing < technique < trainer),
and nothing but the machinery imports the machinery or the notebook tools (:data:`NOTEBOOK_TOOLS`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

#: The layer of each top-level module of ``helpers/`` (a package's submodules share its layer).
LAYER_OF = {
    "helpers": "plumbing",  # the package's own names: quiet_tensorflow_logs, run_dir ...
    "helpers.environment": "plumbing",
    "helpers.seeding": "plumbing",
    "helpers.parameters": "plumbing",
    "helpers.paths": "plumbing",
    "helpers.errors": "plumbing",
    "helpers.failures": "plumbing",
    "helpers.data": "plumbing",
    "helpers.models": "plumbing",
    "helpers.plots": "plumbing",
    "helpers.logs": "plumbing",
    "helpers.ports": "plumbing",
    "helpers.processes": "plumbing",
    "helpers.exercises": "plumbing",
    "helpers.clipping": "technique",
    "helpers.schedules": "technique",
    "helpers.checkpoints": "technique",
    "helpers.tensorboard_server": "technique",
    "helpers.log_records": "technique",
    "helpers.tf1_checkpoints": "technique",
    "helpers.resume_lab": "technique",
    "helpers.train": "trainer",
    "helpers.workbook": "machinery",
}
#: Layers in the order they may import each other: each imports only those before it (and itself).
ORDER = ("plumbing", "technique", "trainer")
#: Libraries for running and rendering notebooks: only the machinery uses them.
NOTEBOOK_TOOLS = ("nbformat", "nbconvert", "papermill", "jupyter_client", "nbclient")


@dataclass(frozen=True)
class Import:
    """One import statement: which module of ``helpers/`` it is in, what it imports, and where."""

    importer: str
    imported: str
    line: int


def module_name(path: Path, root: Path) -> str:
    """``helpers/train/cli.py`` -> ``helpers.train.cli`` (``__init__.py`` names its package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import in the file, at any depth (inside functions and ``if TYPE_CHECKING:`` too)."""
    importer = module_name(path, root)
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [Import(importer, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from helpers import data` imports the module helpers.data; `from helpers import run_dir` the package's name
            found += [Import(importer, f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
    return found


def layer(module: str) -> str | None:
    """The layer of a module of ``helpers/`` (its longest listed prefix), None for a module outside it."""
    while module:
        if module in LAYER_OF:
            return LAYER_OF[module]
        module = module.rpartition(".")[0]
    return None


def violations(root: Path) -> list[str]:
    """Every import in ``root/helpers`` that breaks the rule, as ``file:line: what``; empty when the layers hold."""
    broken = []
    for path in sorted((root / "helpers").rglob("*.py")):
        for found in imports_of(path, root):
            problem = _problem(found)
            if problem:
                broken.append(f"{path.relative_to(root)}:{found.line}: {problem}")
    return broken


def _problem(found: Import) -> str | None:
    importer_layer, imported_layer = layer(found.importer), layer(found.imported)
    if importer_layer == "machinery":
        return None
    if found.imported.split(".")[0] in NOTEBOOK_TOOLS:
        return f"{found.importer} ({importer_layer}) imports {found.imported.split('.')[0]}: only helpers.workbook runs notebooks"
    if imported_layer is None or importer_layer is None:
        return None
    if imported_layer == "machinery":
        return f"{found.importer} ({importer_layer}) imports {found.imported} (machinery): only helpers.workbook may"
    if ORDER.index(imported_layer) > ORDER.index(importer_layer):
        return f"{found.importer} ({importer_layer}) imports {found.imported} ({imported_layer}): a layer imports only the ones below it"
    return None
