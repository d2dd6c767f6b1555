"""elfkit/vmrt benchmark suite: ``python -m bench [--quick] [--json F] [--plot F.png]``.

Every measure times our code and a peer on the same input in the same run and
prints one table (measure, ours, peer, ratio, goal, met).  Absolute times are
reported, but only ratios are judged: the machines this runs on are shared
and noisy.  See ``bench/run.py`` for the measures (each in a ``bench/m_*.py``),
``bench/texts.py`` for what the results page says about them,
``bench/report.py`` for the table and the page, and docs/benchmarks.md for
the latest results.
"""
