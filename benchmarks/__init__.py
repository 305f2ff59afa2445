"""Benchmarks of the workbook's claims about speed and cost, as ratios measured side by side in one run.

``python -m benchmarks.run`` (see :mod:`benchmarks.run`) writes ``results.json``, ``results.md`` and
``results.png`` under ``build/benchmarks``. The framework is :mod:`benchmarks.measure`; each section
is a module with a ``run(options)`` function returning a list of :class:`benchmarks.measure.Comparison`.
The README's test command does not run the benchmarks; ``tests/test_benchmarks.py`` runs them with
tiny sizes (``--quick``) so the script keeps working.
"""
