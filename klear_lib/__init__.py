"""Klear-Reasoner reproduction kit: the tested library behind the notebooks."""
__version__ = "0.1.0"
