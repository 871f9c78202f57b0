"""The training engine: batched local training, the round loop, evaluation."""
from .loop import iter_run, sample_candidates

__all__ = ["iter_run", "sample_candidates"]
