"""Ablations in miniature, each over seeds with a verdict per paper claim (PAPER.md §3).

>>> from klear_lib.ablations import sft
>>> runs = sft.run_experiment("ci", "table2", seeds=1)
>>> pairs = sft.verdicts(sft.aggregate(runs))

``stats`` (t-intervals, Welch differences, the verdict rule) and ``verdicts`` (claims against results) are pure
and shared by every ablation family; ``table`` is the long-format results table with reuse by config hash.
"""
