"""The workbook's editions and the few names the book, JupyterLab and the translations share about them.

Plain data, importing nothing heavy: ``python -m helpers.workbook list``, ``lab`` and ``grade`` read it
without loading Sphinx, docutils or jieba (``tests/test_workbook_editions.py``). The Sphinx extension
(:mod:`helpers.workbook.sphinx_ext`), the book (:mod:`helpers.workbook.book`), ``make lab``
(:mod:`helpers.workbook.lab`) and the translations (:mod:`helpers.workbook.translations`) import it.
"""

from __future__ import annotations

from helpers.paths import NOTEBOOKS_DIR

#: The editions, in the order of the language switch: (Sphinx's language, the switch's label, the HTML lang tag).
LANGUAGES = (("en", "English", "en"), ("zh_CN", "中文", "zh-CN"))
#: The original edition's language; the others are translated from it.
SOURCE_LANGUAGE = LANGUAGES[0][0]
#: The translated edition's language, as Sphinx and gettext name it.
TRANSLATED_LANGUAGE = next(language for language, _, _ in LANGUAGES if language != SOURCE_LANGUAGE)
#: How the command lines name the editions a build wrote.
EDITIONS_LINE = ", ".join(f"{label}: {language}/index.html" for language, label, _ in LANGUAGES)
#: The cell metadata key with which JupyterLab stores a heading folded.
FOLDED = "jp-MarkdownHeadingCollapsed"
#: Where the translations live in the repository, in sphinx-intl's layout: ``<folder>/<language>/LC_MESSAGES/<page>.po``.
TRANSLATIONS_DIR = NOTEBOOKS_DIR / "locales"
#: The folder in the book's staged sources that holds a copy of :data:`TRANSLATIONS_DIR` (Sphinx's ``locale_dirs``).
STAGED_TRANSLATIONS = "_locales"
#: The file in the staged sources that says how each chapter's run went: ``{docname: {"ok": bool | null, "seconds": float | null}}``.
RUN_STATUS = "_run.json"
#: The folder in the staged sources whose files are copied beside the pages (the licence files).
EXTRA = "_extra"
