"""Klear-Reasoner reproduction kit: the tested library behind the notebooks."""
__version__ = "0.1.0"

from klear_lib.versions import quiet_known_warnings

quiet_known_warnings()  # before any module imports TRL, vLLM or tqdm (klear_lib.versions says which and why)
