"""The workbook's editions and the few names the book, JupyterLab and the translations share about them.

Plain data, importing nothing heavy: ``python -m helpers.workbook list``, ``lab`` and ``grade`` read it
without loading Sphinx, docutils or jieba (``tests/test_workbook_editions.py``). The Sphinx extension
(:mod:`helpers.workbook.sphinx_ext`), the book (:mod:`helpers.workbook.book`), ``make lab``
(:mod:`helpers.workbook.lab`) and the translations (:mod:`helpers.workbook.translations`) import it.
"""

from __future__ import annotations

from typing import Any

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
#: The tag of a check cell: the asserts right after the cell that demonstrates, ending with
#: :func:`helpers.checked`. It is stored folded in both editions: JupyterLab's ``metadata.jupyter.source_hidden``
#: and the book's :data:`BOOK_TOGGLE` tag; exercise checks (``exercise-check``) fold the same way.
CHECK = "check"
#: MyST-NB's tag for a cell whose code the book shows behind a toggle (its label: ``TEXT``'s ``show_check``).
BOOK_TOGGLE = "hide-input"
#: Where the translations live in the repository, in sphinx-intl's layout: ``<folder>/<language>/LC_MESSAGES/<page>.po``.
TRANSLATIONS_DIR = NOTEBOOKS_DIR / "locales"
#: The folder in the book's staged sources that holds a copy of :data:`TRANSLATIONS_DIR` (Sphinx's ``locale_dirs``).
STAGED_TRANSLATIONS = "_locales"
#: The file in the staged sources that says how each chapter's run went: ``{docname: {"ok": bool | null, "seconds": float | null}}``.
RUN_STATUS = "_run.json"
#: The folder in the staged sources whose files are copied beside the pages (the licence files).
EXTRA = "_extra"
#: What the book writes itself (:mod:`helpers.workbook.sphinx_ext`), per edition.
TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "TensorFlow 2 training utilities: a tested workbook",
        "chapter": "chapter",
        "teaches": "what it teaches",
        "run": "run",
        "stored": "stored outputs",
        "ok": "ran ok in {seconds:.1f} s",
        "failed": "FAILED after {seconds:.1f} s",
        "fold": "Show this part ({count} cells)",
        "fold_one": "Show this part (1 cell)",
        "show_check": "Show the check",
        "hide_check": "Hide the check",
        "footer": 'Code under the Apache License 2.0 (<a href="LICENSE.txt">LICENSE</a>); '
        'prose and figures under CC BY 4.0 (<a href="LICENSE-docs.txt">LICENSE-docs</a>).',
    },
    "zh_CN": {
        "title": "TensorFlow 2 训练工具：一本经过测试的练习册",
        "chapter": "章节",
        "teaches": "内容",
        "run": "运行",
        "stored": "存储的输出",
        "ok": "运行成功，用时 {seconds:.1f} 秒",
        "failed": "运行失败，{seconds:.1f} 秒后出错",
        "fold": "展开这一部分（{count} 个单元格）",
        "fold_one": "展开这一部分（1 个单元格）",
        "show_check": "显示检查代码",
        "hide_check": "隐藏检查代码",
        "footer": '代码采用 Apache License 2.0 许可（<a href="LICENSE.txt">LICENSE</a>）；'
        '文字与图片采用 CC BY 4.0 许可（<a href="LICENSE-docs.txt">LICENSE-docs</a>）。',
    },
}
def text(language: str, key: str, **values: object) -> str:
    """One of :data:`TEXT`'s strings in ``language`` (English for a language it lacks), filled in."""
    return TEXT.get(language, TEXT["en"])[key].format(**values)


def run_status(language: str, status: dict[str, Any] | None) -> str:
    """How a chapter's run went, in words: stored outputs, ran ok in N s, or FAILED after N s."""
    if not status or status.get("ok") is None:
        return text(language, "stored")
    return text(language, "ok" if status["ok"] else "failed", seconds=float(status["seconds"]))
