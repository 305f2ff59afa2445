"""Sphinx configuration of the workbook's book; :func:`helpers.workbook.book.build_book` runs ``sphinx-build -c`` here.

The sources are a staging folder the build writes (the chapters' notebooks, the seed map, the glossary, the
teachers' page and ``index.md``); translations come from ``notebooks/locales/<language>/LC_MESSAGES/*.po``.
What depends on the build (the run status on the index, the language switch, the footer, the search
dictionary) is set by :mod:`helpers.workbook.sphinx_ext`.
"""

project = "TensorFlow 2 training utilities"
html_title = "TensorFlow 2 training utilities: a tested workbook"  # per language: helpers.workbook.editions.TEXT
extensions = ["myst_nb", "sphinx_copybutton", "helpers.workbook.sphinx_ext"]

# The notebooks are executed before the book is built (make run), or their stored outputs are used (make book).
nb_execution_mode = "off"
# Headings get JupyterLab's anchors, so links written for JupyterLab resolve in the book.
myst_heading_anchors = 6
myst_heading_slug_func = "helpers.workbook.anchors.jupyter_anchor"

exclude_patterns = ["_extra", "_locales", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

html_theme = "sphinx_book_theme"
html_theme_options = {
    "use_download_button": True,
    "show_toc_level": 2,
    "footer_content_items": ["extra-footer.html"],  # the licences (helpers.workbook.sphinx_ext); no author or copyright line
}
# The language switch sits in the sidebar, under the search field, on every page.
html_sidebars = {"**": ["navbar-logo.html", "icon-links.html", "search-button-field.html", "language-switch.html", "sbt-sidebar-nav.html"]}
html_static_path = ["_static"]
html_css_files = ["workbook.css"]
html_copy_source = True  # the download button offers each chapter's .ipynb from _sources/
html_show_sourcelink = False
html_show_sphinx = False
html_last_updated_fmt = None

# Translations: one .po file per page in sphinx-intl's layout (notebooks/locales/zh_CN/LC_MESSAGES/04_....po).
# The build reads the copy staged with the sources (locale_dirs is set by sphinx_ext.configure), so the .mo
# files Sphinx compiles stay out of the repository.
gettext_compact = False
gettext_location = False  # no line numbers in the .po files: an edit elsewhere in a chapter does not touch them
gettext_additional_targets = ["raw"]  # the solutions' <summary> text is raw HTML
# The gettext builder prefers an output's text/latex (MyST-NB's render priority), which Sphinx then extracts as a raw
# message: a highlighted file shown with IPython's Code would become a message to translate. Outputs are
# never translated, so the gettext builder skips that form and reads the plain text, a literal block it leaves alone.
# A figure's alt text (its cell's mystnb.image.alt) is a message too: MyST-NB's gettext priority has no image, so the
# gettext builder takes the PNG first and Sphinx extracts the image's alt; the Chinese build translates it like prose.
nb_mime_priority_overrides = [("gettext", "text/latex", None), ("gettext", "image/png", 5)]
