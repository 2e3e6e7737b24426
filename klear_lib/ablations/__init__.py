"""Ablations in miniature, each over seeds with a verdict per paper claim (docs/paper.md §3).

>>> from klear_lib.ablations import sft
>>> runs = sft.run_experiment("ci", "table2", seeds=1)
>>> pairs = sft.verdicts(sft.aggregate(runs))

Families: ``sft`` (Tables 2-5), ``rl`` (Figures 2-5, Table 6; checkpoints, records and curves in ``rl_runs``),
``stability`` (beyond the paper: losses × learning rates × updates per step), and ``claims`` (one row per paper
claim, from the families' tables). ``common`` holds what they share (the experiment record, the reuse loop over
stored rows, report files); ``stats`` (t-intervals, Welch differences, the verdict rule) and ``verdicts`` (claims
against results) are pure; ``table`` is the long-format results table with reuse by config hash; ``traces``
measures what a student imitates (the style of teachers' SFT rows and of students' evaluation samples).
"""
