"""Heading anchors and link targets of the notebooks and Markdown pages, as nbconvert's HTML renders them (and JupyterLab resolves them).

The seed map's and the glossary's tests check with these that every link lands on a heading.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import nbformat

_HEADING_ID = re.compile(r'<h[1-6] id="([^"]+)"')
_HREF = re.compile(r'<a href="([^"]+)"')


def _markdown_to_html(text: str) -> str:
    """Render Markdown as nbconvert does for a notebook's markdown cells (so ids and links match)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def heading_anchors(notebook: Path) -> set[str]:
    """The anchors of a notebook's headings (``#Heading-text``), as JupyterLab and nbconvert's HTML make them."""
    cells = nbformat.read(notebook, as_version=4).cells
    return markdown_heading_anchors(*(cell.source for cell in cells if cell.cell_type == "markdown"))


def markdown_heading_anchors(*markdown: str) -> set[str]:
    """The anchors of the headings in Markdown texts (a notebook's cells, or a page), as nbconvert's HTML makes them."""
    html = "\n".join(_markdown_to_html(text) for text in markdown)
    return {unquote(anchor) for anchor in _HEADING_ID.findall(html)}


def rendered_link_targets(markdown: str) -> list[str]:
    """Every link target of a Markdown text, in order (as rendered, so code spans hold no links)."""
    return [unquote(target) for target in _HREF.findall(_markdown_to_html(markdown))]
