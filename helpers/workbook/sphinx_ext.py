"""The small Sphinx extension the book needs beyond MyST-NB and the theme (see ``book_sphinx/conf.py``).

- ``{workbook-chapters}``: the index's table of chapters, each with its title and first paragraph (both
  translated in a translated edition) and how its run went, read from ``_run.json`` in the sources;
- the sections JupyterLab opens folded (``jp-MarkdownHeadingCollapsed``) are folded in the book too;
- a hidden check cell's toggle is named by the words it shows (MyST-NB names it "Toggle hidden content", which
  WCAG 2.1's "label in name" refuses: axe-core's label-content-name-mismatch);
- every page links to the same page in the other edition (:data:`helpers.workbook.editions.LANGUAGES`), ends with the licences,
  and a Chinese edition's search splits words with a dictionary of the glossary's Chinese terms.

The few strings it writes itself are :data:`helpers.workbook.editions.TEXT`, one entry per edition; everything
else on a page comes from the sources and their ``.po`` files. This module is the wiring: Sphinx's hooks and nodes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.search.zh import SearchChinese

from helpers.workbook.editions import EXTRA, FOLDED, LANGUAGES, RUN_STATUS, STAGED_TRANSLATIONS, run_status, text
from helpers.workbook.markdown import folded_sections, heading_levels


class fold(nodes.General, nodes.Element):
    """A section's body that the reader opens: ``<details><summary>label</summary>...</details>``."""


def _visit_fold(translator: Any, node: fold) -> None:
    translator.body.append(f'<details class="workbook-fold"><summary>{translator.encode(node["label"])}</summary>\n')


def _depart_fold(translator: Any, node: fold) -> None:
    translator.body.append("</details>\n")


def _visit_hidden_input(translator: Any, node: nodes.Element) -> None:
    """MyST-NB's toggle of a hidden input (``myst_nb.sphinx_.visit_HideCellInput``) without its ``aria-label``: a
    ``<summary>`` is named by its text, here the prompt in sight ("Show the check" or "Hide the check")."""
    translator.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n<summary>\n')
    translator.body.append(f'<p class="collapsed admonition-title">{translator.encode(node["prompt_show"])}</p>\n')
    translator.body.append(f'<p class="expanded admonition-title">{translator.encode(node["prompt_hide"])}</p>\n')
    translator.body.append("</summary>\n")


class chapter_table(nodes.General, nodes.Element):
    """Where the index's table of chapters goes; filled once every chapter has been read."""


class ChaptersDirective(Directive):
    """``{workbook-chapters}``: the table of chapters, built when every chapter has been read."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return [chapter_table()]


def fold_sections(app: Sphinx, doctree: nodes.document) -> None:
    """Fold the body of each section whose heading cell JupyterLab stores folded, under a "show" summary."""
    source = Path(app.srcdir) / f"{app.env.docname}.ipynb"
    if not source.is_file():
        return
    notebook = nbformat.read(source, as_version=4)
    headings = []  # (cell index, folded) for every heading, in order
    for index, cell in enumerate(notebook.cells):
        headings += [(index, bool(cell.metadata.get(FOLDED)))] * len(heading_levels(cell))
    sections = list(doctree.findall(nodes.section))
    if len(sections) != len(headings):
        raise ValueError(f"{source.name}: {len(headings)} headings in the notebook but {len(sections)} sections in the page")
    counts = {first - 1: last - first + 1 for first, last in folded_sections(notebook)}
    language = app.config.language or "en"
    for section, (index, folded) in zip(sections, headings, strict=True):
        if not folded or index not in counts:
            continue
        count = counts[index]
        label = text(language, "fold", count=count) if count > 1 else text(language, "fold_one")
        body = fold(label=label)
        body.extend(section.children[1:])
        section.children = section.children[:1]
        section.append(body)


def collect_summary(app: Sphinx, doctree: nodes.document) -> None:
    """Keep each chapter's first paragraph (translated in a translated edition) for the index's table."""
    summaries: dict[str, nodes.paragraph] = getattr(app.env, "workbook_summaries", {})
    if (Path(app.srcdir) / f"{app.env.docname}.ipynb").is_file():
        paragraph = next(iter(doctree.findall(nodes.paragraph)), None)
        if paragraph is not None:
            summaries[app.env.docname] = paragraph.deepcopy()
    app.env.workbook_summaries = summaries  # type: ignore[attr-defined]


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    getattr(env, "workbook_summaries", {}).pop(docname, None)


def fill_chapter_table(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Replace ``{workbook-chapters}`` with the table: title (linked), first paragraph, run status."""
    language = app.config.language or "en"
    status_file = Path(app.srcdir) / RUN_STATUS
    statuses = json.loads(status_file.read_text(encoding="utf-8")) if status_file.is_file() else {}
    summaries: dict[str, nodes.paragraph] = getattr(app.env, "workbook_summaries", {})
    for placeholder in list(doctree.findall(chapter_table)):
        table = nodes.table(classes=["workbook-chapters"])
        group = nodes.tgroup(cols=3)
        table += group
        group += [nodes.colspec(colwidth=width) for width in (25, 55, 20)]
        head = nodes.thead()
        head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=text(language, key))) for key in ("chapter", "teaches", "run")))
        group += head
        body = nodes.tbody()
        for chapter in sorted(summaries):
            link = nodes.reference("", "", internal=True, refuri=app.builder.get_relative_uri(docname, chapter))
            link.extend(_title(app, chapter))
            summary = summaries[chapter].deepcopy()
            for reference in summary.findall(nodes.reference):  # links in a chapter's paragraph are relative to it: keep their text only
                reference.replace_self(nodes.inline("", "", *reference.children))
            body += nodes.row(
                "",
                nodes.entry("", nodes.paragraph("", "", link)),
                nodes.entry("", summary),
                nodes.entry("", nodes.paragraph(text=run_status(language, statuses.get(chapter)))),
            )
        group += body
        others = nodes.bullet_list(classes=["workbook-other-pages"])
        for page in app.env.found_docs - set(summaries) - {docname}:
            link = nodes.reference("", "", internal=True, refuri=app.builder.get_relative_uri(docname, page))
            link.extend(_title(app, page))
            others += nodes.list_item("", nodes.paragraph("", "", link))
        others.children.sort(key=lambda item: _order(app, item))
        placeholder.replace_self([table, others] if others.children else [table])


def _title(app: Sphinx, docname: str) -> list[nodes.Node]:
    """A page's title as inline nodes, code spans included (``02 · From `train_op` to a train step``)."""
    title = app.env.titles[docname]
    return [child.deepcopy() for child in title.children] or [nodes.Text(docname)]


def _order(app: Sphinx, item: nodes.Element) -> int:
    """The position of a linked page in the index's table of contents (the order :func:`helpers.workbook.book.stage` wrote)."""
    uri = next(iter(item.findall(nodes.reference)))["refuri"]
    names = [str(entry) for entry in app.env.toctree_includes.get(app.config.root_doc, [])]
    stem = uri.split("#")[0].removesuffix(".html")
    return names.index(stem) if stem in names else len(names)


def page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: nodes.document | None) -> None:
    """The language switch: the same page in the other edition, a sibling folder of this one."""
    language = app.config.language or "en"
    others = [entry for entry in LANGUAGES if entry[0] != language]
    if not others:
        return
    other, label, tag = others[0]
    depth = pagename.count("/")
    context.update(
        workbook_other_language=other,
        workbook_other_language_label=label,
        workbook_other_language_tag=tag,
        workbook_other_language_url="../" * (depth + 1) + f"{other}/{pagename}.html",
    )


def configure(app: Sphinx, config: Any) -> None:
    """Settings that depend on the build: footer, licence files, the Chinese search dictionary."""
    language = config.language or "en"
    config.html_theme_options = {**config.html_theme_options, "extra_footer": text(language, "footer")}
    config.html_title = text(language, "title")
    config.nb_code_prompt_show = text(language, "show_check")  # the toggle of a check cell (editions.BOOK_TOGGLE)
    config.nb_code_prompt_hide = text(language, "hide_check")
    extra = Path(app.srcdir) / EXTRA
    if extra.is_dir():
        config.html_extra_path = [str(extra)]
    # the translations staged with the sources (Sphinx writes a .mo file beside each .po file it reads); none staged, none read
    staged = Path(app.srcdir) / STAGED_TRANSLATIONS
    config.locale_dirs = [str(staged)] if staged.is_dir() else []
    if language.startswith("zh"):
        dictionary = Path(app.doctreedir) / "jieba-glossary.txt"
        dictionary.parent.mkdir(parents=True, exist_ok=True)
        dictionary.write_text(search_dictionary(), encoding="utf-8")
        config.html_search_options = {"dict": str(dictionary)}


def search_dictionary() -> str:
    """A jieba user dictionary of the glossary's Chinese terms, so a search for 学习率 finds the pages that use it."""
    from helpers.workbook import glossary

    words = sorted({word for term in glossary.terms() for word in (*term.chinese, *term.quoted) if " " not in word})
    return "".join(f"{word} 100000 n\n" for word in words)


def raw_html_by_ourselves(app: Sphinx) -> None:
    """Sphinx translates a raw node by parsing ``::`` plus the translation as reStructuredText, which MyST cannot do.

    The gettext builder still extracts raw HTML (``gettext_additional_targets``); every other builder leaves
    it to :func:`translate_raw_html`.
    """
    if app.builder.name != "gettext":
        app.config.gettext_additional_targets = [target for target in app.config.gettext_additional_targets if target != "raw"]


def translate_raw_html(app: Sphinx, doctree: nodes.document) -> None:
    """Swap each raw HTML block (a solution's ``<details><summary>...``) for its translation in the page's catalog."""
    language = app.config.language or "en"
    if language == "en" or not app.config.locale_dirs:
        return
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    folders = [str(Path(app.srcdir) / folder) for folder in app.config.locale_dirs]
    catalog, found = init_locale(folders, language, docname_to_domain(app.env.docname, app.config.gettext_compact))
    if not found:
        return
    for node in list(doctree.findall(nodes.raw)):
        source = node.rawsource or node.astext()
        translated = catalog.gettext(source)
        if translated and translated != source:
            node.replace_self(nodes.raw(translated, translated, format=node.get("format", "html")))


class ChineseSearch(SearchChinese):
    """Sphinx's Chinese search, with a page script that runs.

    Sphinx 9.0 ships English's stemmer script for Chinese (Latin words are stemmed as English) but ends
    ``language_data.js`` with ``window.Stemmer = ChineseStemmer``, a name nothing defines, so every search
    page of a Chinese book stops with a ReferenceError. The script's last line names the stemmer after
    ``language_name``: English, the stemmer Chinese uses for Latin words on both sides.
    """

    language_name = "English"


def setup(app: Sphinx) -> dict[str, Any]:
    # Sphinx's translation step copies each link's attributes from the English link with the same document,
    # so several links into one notebook (a glossary row, a seed-map entry) all took the last one's anchor;
    # a translation keeps its own anchors (translations.message_problems checks they are the English's).
    import sphinx.transforms.i18n

    excluded: tuple[str, ...] = sphinx.transforms.i18n.EXCLUDED_PENDING_XREF_ATTRIBUTES
    if "reftargetid" not in excluded:
        sphinx.transforms.i18n.EXCLUDED_PENDING_XREF_ATTRIBUTES = (*excluded, "reftargetid")  # type: ignore[assignment]
    app.add_search_language(ChineseSearch)
    app.add_node(fold, html=(_visit_fold, _depart_fold))
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput  # registered by myst_nb, listed before this extension

    app.add_node(HideCodeCellNode, override=True, html=(_visit_hidden_input, depart_HideCellInput))
    app.add_node(chapter_table)
    app.add_directive("workbook-chapters", ChaptersDirective)
    app.connect("config-inited", configure)
    app.connect("builder-inited", raw_html_by_ourselves)
    app.connect("doctree-read", translate_raw_html)
    app.connect("doctree-read", fold_sections)
    app.connect("doctree-read", collect_summary)
    app.connect("env-purge-doc", _purge)
    app.connect("doctree-resolved", fill_chapter_table)
    app.connect("html-page-context", page_context)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
