"""HW-DPFL: aggregation weighted by label-distribution similarity (seed 002, Sec. 3).

Client k's label histogram G_k over C classes is normalised to g_k and compared with the
balanced distribution S = (1/C, ..., 1/C) by the Hellinger distance

    H_k = (1 / sqrt 2) * || sqrt(g_k) - sqrt(S) ||_2        in [0, 1)

(0 for a perfectly balanced client, sqrt(1 - 1/sqrt C) for a client holding one class).
The server aggregates W^(t) = sum_k tau_k (G_k + Z_k) over the round's uploaders, i.e.
in update units f = sum_k tau_k Delta~_k, with

- ``reading="similarity"`` (adopted, METHODS section 3): tau_k proportional to 1 - H_k, so
  balanced clients count more;
- ``reading="literal"``: tau_k proportional to H_k, the paper's formula tau_k = h_k / sum h_j
  taken at its word (balanced clients then get weight ~0).

tau is normalised over the clients that uploaded this round; if every score is 0 (e.g. the
literal reading on perfectly IID clients) the weights fall back to uniform with a
``uniform_fallback`` event. Each round emits a ``hellinger_weights`` event (clients,
distances, weights) and the signal ``hellinger_distance_mean``.

Privacy note: the server must know every client's label histogram. The paper assumes it
does; the histogram is itself information about the client's data that no DP mechanism
here protects (it leaks, e.g., which classes a hospital or phone user has). See ``note``.

>>> hellinger_distances(np.array([[5, 5], [10, 0]])).round(4).tolist()
[0.0, 0.5412]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constraints import Choice, setting
from ..events import MethodEvent
from .base import Aggregate, Aggregator, weighted_sum
from .registry import AGGREGATORS

READINGS = ("similarity", "literal")


def hellinger_distances(label_counts: np.ndarray) -> np.ndarray:
    """Hellinger distance ``[N]`` of each row of ``label_counts [N, C]`` to the uniform law.

    A client without any sample has no label distribution; it gets distance 1 (the
    maximum), so the similarity reading gives it no weight.
    """
    counts = np.asarray(label_counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[1] == 0:
        raise ValueError(f"label_counts must be [clients, classes], got shape {counts.shape}")
    if (counts < 0).any():
        raise ValueError("label counts must be >= 0")
    totals = counts.sum(axis=1, keepdims=True)
    g = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    uniform = 1.0 / counts.shape[1]
    h = np.sqrt(0.5 * ((np.sqrt(g) - np.sqrt(uniform)) ** 2).sum(axis=1))
    return np.where(totals[:, 0] > 0, np.minimum(h, 1.0), 1.0)


def hellinger_weights(distances: np.ndarray, reading: str = "similarity") -> np.ndarray:
    """tau ``[m]``: normalised 1 - H (``similarity``) or H (``literal``); uniform if all 0.

    >>> hellinger_weights(np.array([0.0, 0.5])).tolist()
    [0.6666666666666666, 0.3333333333333333]
    """
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    d = np.asarray(distances, dtype=np.float64)
    scores = 1.0 - d if reading == "similarity" else d
    total = scores.sum()
    return scores / total if total > 0 else np.full(len(d), 1.0 / len(d))


@AGGREGATORS.register("hellinger", summary="Weights from the label histogram's Hellinger distance to uniform.",
                      paper="HW-DPFL (seed 002), Sec. 3")
class HellingerAggregator(Aggregator):
    """tau_k from H_k (fixed per client, computed once from ``ctx.label_counts``)."""

    needs_linkable = True
    note = ("HW-DPFL's server knows every client's label histogram; that histogram is itself "
            "a leak about the client's data, and no privacy mechanism here protects it.")

    @dataclass(frozen=True)
    class Options:
        """``reading``: "similarity" (tau ~ 1 - H, adopted) or "literal" (tau ~ H, the paper's text)."""

        reading: str = setting("similarity", Choice(READINGS), "similarity: tau ~ 1 - H; literal: tau ~ H")

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.distances_ = hellinger_distances(ctx.label_counts)

    def aggregate(self, upload, round) -> Aggregate:
        import torch  # here, not at the top: resolving a config that names this loads no torch

        ids = upload.clients.cpu().numpy()
        dist = self.distances_[ids]
        tau = hellinger_weights(dist, self.options.reading)
        w = torch.as_tensor(tau, dtype=upload.values.dtype, device=upload.values.device)
        events = [MethodEvent("hellinger_weights", None, {
            "clients": ids.tolist(), "distances": dist.tolist(), "weights": tau.tolist()})]
        scores = 1.0 - dist if self.options.reading == "similarity" else dist
        if scores.sum() <= 0:
            events.append(MethodEvent("uniform_fallback", None, {
                "reason": f"every uploader has zero {self.options.reading} score; uniform weights"}))
        return Aggregate(weighted_sum(upload.values, w), w, events,
                         {"hellinger_distance_mean": float(dist.mean())})
