"""The project's own machinery: what runs, checks, renders and serves the workbook. The chapters import none of it.

The command line, ``python -m helpers.workbook`` (every ``make`` target that is not a test):

- :mod:`helpers.workbook.commands`: every command (``run``, ``refresh``, ``list``, ``book``, ``lab``, ``course``,
  ``grade``, ``translations``, ``drift``, ``configs``) and their exit statuses (``--help``); ``__main__`` runs it.

Running notebooks:

- :mod:`helpers.workbook.executor`: the notebooks in order, and executing one with papermill (also drift's entry point in its own environment);
- :mod:`helpers.workbook.refresh`: storing a notebook's clean outputs (``make refresh``).

The book and its editions:

- :mod:`helpers.workbook.editions`: the editions and the names the book, JupyterLab and the translations share (it imports nothing heavy);
- :mod:`helpers.workbook.book`: the book's sources staged, Sphinx run once per edition, the new book put in place of the old
  (its Sphinx configuration, index page, template and stylesheet in ``book_sphinx/``);
- :mod:`helpers.workbook.sphinx_ext`: the Sphinx extension (the hooks: chapter table, folded sections, language switch, footer, search);
- :mod:`helpers.workbook.markdown`: headings outside fenced code, the sections stored folded;
- :mod:`helpers.workbook.anchors`: the anchor JupyterLab gives a heading, which the book gives it too;
- :mod:`helpers.workbook.catalogs`: the Chinese edition's ``.po`` files, read and brought up to date with the English;
- :mod:`helpers.workbook.translations`: what in them needs a translator;
- :mod:`helpers.workbook.translated_copies`: the translated notebooks ``make lab ARGS="--lang zh_CN"`` opens;
- :mod:`helpers.workbook.glossary`: ``notebooks/glossary.md`` as data, the status of its API names, and its terms.

Serving and teaching:

- :mod:`helpers.workbook.lab`: ``make lab``'s JupyterLab (its settings in ``lab_config/``);
- :mod:`helpers.workbook.course`: the nbgrader course (``make course``, ``make grade``);
- :mod:`helpers.workbook.release`: the students' copies as handed out (the header, links that work in each release folder);
- :mod:`helpers.workbook.deadlines`: due dates in the gradebook, and the late policy nbgrader applies;
- :mod:`helpers.workbook.sandbox`: the sandbox each graded notebook's kernel runs in (bubblewrap, control groups);
- :mod:`helpers.workbook.feedback`: the page a student reads after grading, one per chapter, the exercises only;
- :mod:`helpers.workbook.class_report`: the class report after grading, the roster, and the gradebook for Canvas;
- :mod:`helpers.workbook.exercise_layout`: the exercises' layout in a notebook file (the self-check is :mod:`helpers.exercises`).

Against other environments:

- :mod:`helpers.workbook.drift`: the workbook against the newest TensorFlow (``make drift``), and the comparison with the
  stored outputs that :mod:`helpers.workbook.configurations` (oneDNN's kernels off and on, ``make configs``) shares.

Importing this package imports none of its modules.
"""
