"""The anchor JupyterLab gives a heading, which the book gives it too (``book_sphinx/conf.py``'s ``myst_heading_slug_func``)."""

from __future__ import annotations


def jupyter_anchor(heading: str) -> str:
    """The anchor JupyterLab gives a heading: its text with every space made a dash, case and punctuation kept.

    The book's Sphinx configuration makes MyST slug headings with this function
    (``myst_heading_slug_func``), so a link written as JupyterLab resolves it
    (``05_checkpoints.ipynb#Exact-resume-in-a-new-process``) resolves in the book too.
    """
    return heading.replace(" ", "-")
