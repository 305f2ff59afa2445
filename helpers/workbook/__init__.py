"""The project's own machinery: what runs, checks, renders and serves the workbook. The chapters import none of it.

- :mod:`helpers.workbook.runner`: the notebooks in order, executing one with papermill, ``make run``;
- :mod:`helpers.workbook.refresh`: storing a notebook's clean outputs, ``make refresh``;
- :mod:`helpers.workbook.anchors`: heading anchors and link targets, as nbconvert and JupyterLab make them;
- :mod:`helpers.workbook.lab`: ``make lab``'s JupyterLab (its settings in ``lab_config/``);
- :mod:`helpers.workbook.book`: the offline HTML book (its nbconvert template in ``book_template/``);
- :mod:`helpers.workbook.glossary`: ``notebooks/glossary.md`` as data, the status of its API names, and its terms
  (English forms, Chinese words, seed words quoted only) for the translation check;
- :mod:`helpers.workbook.exercise_layout`: the exercises' layout in a notebook file (the self-check is :mod:`helpers.exercises`);
- :mod:`helpers.workbook.drift`: the workbook against the newest TensorFlow, ``make drift`` (``python -m helpers.workbook.drift``).

``python -m helpers.workbook run|refresh|book|lab|list`` is the command line (:mod:`helpers.workbook.__main__`).
Importing this package imports none of its modules.
"""
