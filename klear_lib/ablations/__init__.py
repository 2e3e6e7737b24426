"""Ablations in miniature, each over seeds with a verdict per paper claim (docs/paper.md §3).

>>> from klear_lib.ablations.sft import SFT
>>> from klear_lib.configs import recipe
>>> runs = SFT.run_experiment(recipe("ci"), "table2", seeds=1)  # doctest: +SKIP
>>> pairs = SFT.pairs(SFT.aggregate(runs))  # doctest: +SKIP

Families: ``sft`` (Tables 2-5), ``rl`` (Figures 2-5, Table 6; checkpoints, records and curves in ``rl_runs``),
``stability`` (beyond the paper: losses × learning rates × updates per step), and ``claims`` (one row per paper
claim, from the families' tables). Each family is an instance of ``family.Family``, which holds what they share
(the experiment record, seeds, run names, the reuse loop over stored rows, verdicts, report files);
``klear_lib.stats`` (t-intervals, Welch differences, the verdict rule) and ``verdicts`` (claims against results) are
pure; ``table`` is the schema of the ablation results table (read and written by ``klear_lib.tables``); ``traces``
measures what a student imitates (the style of teachers' SFT rows and of students' evaluation samples).
"""
