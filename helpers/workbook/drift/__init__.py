"""Drift guard: run the workbook against the newest TensorFlow and Keras and report which claims changed.

``python -m helpers.workbook drift`` (``make drift``) builds a virtual environment of its own,
``build/drift/venv-latest`` (or ``venv-nightly``), with the newest TensorFlow, Keras and TensorBoard on the package index (the
latest releases; ``--nightly``: ``tf-nightly``, ``keras-nightly`` and ``tb-nightly``) and everything
else ``requirements.txt`` pins; executes every notebook there with papermill, as ``make run`` does (:func:`helpers.workbook.executor.execute_all`, through
``python -m helpers.workbook.executor`` in that environment),
into ``build/drift/executed`` (the notebooks' own build folders under ``build/drift/work/build``); runs
the glossary's and the seed map's tests there (an API they call current that the new version
removed fails them) and compares each current API name's status, pinned and newest (removed or
deprecated, :mod:`helpers.workbook.glossary`); and compares each executed notebook with the stored one: the comparison nbval
makes, with the same sanitizer (``tests/nbval_sanitize.cfg``), cell by cell. The report,
``build/drift/report.md`` and ``report.json``, says per notebook whether it ran, which cell failed
and why (a failed ``assert`` is a claim that changed), which cells' outputs changed (a short diff),
and what new warnings or deprecations it wrote to stderr.

The pinned environment (``.venv``) is never touched: the drift venv is separate, and only it
installs anything. The command exits non-zero when a notebook failed or changed, printed a new warning,
or a glossary or seed-map check failed, and when the environment could not be built or run, so a scheduled
job can alert on it (the statuses: :mod:`helpers.workbook.commands`). Nothing here runs in ``make test``;
``tests/test_workbook_drift.py`` checks the comparison on small notebooks without building an environment.

The modules, by job: :mod:`~helpers.workbook.drift.environment` builds the drift environment,
:mod:`~helpers.workbook.drift.run` runs the notebooks and checks there, :mod:`~helpers.workbook.drift.compare`
compares them with the stored ones (the comparison ``make configs`` uses too), :mod:`~helpers.workbook.drift.report` writes
the report; the command is ``drift`` in :mod:`helpers.workbook.commands`. Importing this package imports none of them.
"""
