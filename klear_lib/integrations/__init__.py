"""GPPO for RL frameworks other than the kit's own trainer: ``verl_plugin`` registers it with verl (docs/verl.md).

TRL needs no module here: ``klear_lib.training.GPPOTrainer`` is a TRL trainer (examples/train_gppo_trl.py).
"""
