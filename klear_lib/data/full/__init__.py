"""The full recipe's data as files a run can train on: the released RL sets and SFT prompts (``build``), and teacher
traces for SFT (``traces``).

A package of its own rather than modules beside ``klear_lib/data/*.py``: ``klear_lib.data.store.code_version``
hashes those files to key the miniature world's cache, and nothing here changes the miniature world, so adding or
editing these modules leaves every cached ci/tiny world in place.
"""
