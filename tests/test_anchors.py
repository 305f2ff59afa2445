"""tests/anchors.py: heading anchors and link targets as nbconvert renders them; helpers.workbook.anchors, the book's anchors as JupyterLab's."""

from __future__ import annotations

from pathlib import Path

import nbformat

from helpers.workbook.anchors import jupyter_anchor
from tests import anchors


def test_heading_anchors_and_link_targets_follow_nbconvert(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# 01 · Title\n\ntext with a `# not a heading` span"),
        nbformat.v4.new_markdown_cell("## The v1 `tf.train` step (and **Keras**)"),
        nbformat.v4.new_code_cell("# a comment, not a heading"),
    ]
    path = tmp_path / "01_x.ipynb"
    nbformat.write(notebook, path)
    assert anchors.heading_anchors(path) == {"01-·-Title", "The-v1-tf.train-step-(and-Keras)"}
    links = "[a](01_x.ipynb#The-v1-tf.train-step-(and-Keras)), `[not](a-link)`, [b](https://example.org)"
    assert anchors.rendered_link_targets(links) == ["01_x.ipynb#The-v1-tf.train-step-(and-Keras)", "https://example.org"]


def test_the_books_anchor_is_jupyterlabs() -> None:
    heading = "The v1 `tf.train` step (and **Keras**)"
    assert jupyter_anchor("01 · Title") == "01-·-Title" and jupyter_anchor(heading) == "The-v1-`tf.train`-step-(and-**Keras**)"
