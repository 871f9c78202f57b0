"""The server-side aggregation interface (Flower's strategy idea, reduced to two hooks).

``select`` may choose which of the round's candidate clients take part (PLDP-FL's rule C);
``aggregate`` combines the uploads into one global update. Both may keep state across
rounds and emit method events. Privacy is never added here: that is the mechanism's job,
so any mechanism composes with any compatible aggregator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Optional

import numpy as np

from ..events import MethodEvent
from ..mechanisms.base import Upload
from ..options import Configurable

if TYPE_CHECKING:  # annotations only: the interface (and resolving a config) loads no torch
    import torch

    from ..context import RunContext


@dataclass
class Aggregate:
    """The server's result: ``delta`` ``[d]`` (None = keep the model) and the weights used."""

    delta: Optional[torch.Tensor]
    weights: torch.Tensor
    events: list[MethodEvent] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)


class Aggregator(Configurable):
    """Base class. ``needs_linkable``: the rule must tie each upload to its client."""

    needs_linkable: ClassVar[bool] = False   # weights depend on who uploaded what
    accepts_sign: ClassVar[bool] = True      # works on sign uploads (W += eta_s sign(f))

    def __init__(self, options, ctx: RunContext):
        self.options = options
        self.ctx = ctx

    def attach_mechanism(self, mechanism) -> None:
        """Called once before round 1 with the run's mechanism (rule C reads its noise scales)."""

    def select(self, candidates: np.ndarray, round: int,
               rng: np.random.Generator) -> tuple[np.ndarray, list[MethodEvent]]:
        """Return the clients that train this round (default: every candidate)."""
        return candidates, []

    def aggregate(self, upload: Upload, round: int) -> Aggregate:
        raise NotImplementedError

    def round_signals(self) -> dict[str, float]:
        """Signals of the round just selected, emitted whether or not anyone uploaded
        (rule C's empty-round rate); called by the engine after every ``select``."""
        return {}


class WeightedSum(Aggregator):
    """A rule whose result is ``f = sum_i w_i values_i`` with weights ``w`` that :meth:`weights` reads
    from the upload's per-client fields (``clients``, ``noise_std``, the number of rows, their dtype and
    device), never from the values: the engine may then sum the uploads block by block without an
    ``[m, d]`` buffer (:mod:`fedcore.engine.stream`)."""

    def weights(self, upload: Upload) -> tuple[torch.Tensor, list[MethodEvent]]:
        """``(w [m], events)`` of the round whose uploads are ``upload`` (the values unread)."""
        raise NotImplementedError

    def aggregate(self, upload: Upload, round: int) -> Aggregate:
        w, events = self.weights(upload)
        return Aggregate(weighted_sum(upload.values, w), w, events)


def weighted_sum(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``sum_i w_i v_i`` for ``values [m, d]`` and ``weights [m]``."""
    return weights.to(values.dtype) @ values
