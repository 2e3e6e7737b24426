"""Klear-Reasoner reproduction kit: the tested library behind the notebooks."""
from klear_lib import numerics

numerics.apply()  # first, before torch, MKL, oneDNN, NumPy or vLLM load (klear_lib.numerics says which and why)

from klear_lib.versions import quiet_known_warnings  # noqa: E402

__version__ = "0.1.0"

quiet_known_warnings()  # before any module imports TRL, vLLM or tqdm (klear_lib.versions says which and why)
