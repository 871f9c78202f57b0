"""A round without its ``[m, d]`` buffer (issue 41, Build 4: bounded memory at scale).

A round normally keeps every trained client's parameters in one ``[m, d]`` buffer for the
mechanism and the aggregator (:func:`fedcore.engine.rounds.server_round`): 3.2 GB at 5,000
clients of the MNIST MLP. When that buffer would pass the budget (:data:`STREAM_BYTES`, 1 GiB;
``$FEDCORE_STREAM_BYTES`` in bytes overrides it, ``0`` streams every round that can), and the
round allows it (:func:`streams`), :func:`stream_round` trains the clients a block at a time
(:func:`block_rows`: an eighth of the budget; on CPU whole training chunks) and, a few rows at a
time (:data:`SLICE_BYTES`, while they sit in the cache), takes their updates ``rows - global``,
passes them through the mechanism and adds them to the aggregator's weighted sum. Only a
``[block, d]`` buffer exists.

It needs a mechanism that may see the rows in blocks (``Mechanism.streams``: the identity of
``none``; every noisy mechanism draws its noise for all ``m`` rows at once, and draws cut in
blocks are other numbers) and an aggregator whose result is a weighted sum with weights known
from the uploads' per-client fields (:class:`~fedcore.aggregators.base.WeightedSum`: ``mean``,
``fedavg``, ``weighted`` themselves, not a subclass that may do more). Per-step DP-SGD noise, an
attack watch and the lockstep trainer keep the dense round. The event's fields are the dense
round's (uploaded clients, weights, events, ledger spend); only the sum's rounding differs, so a
run below the budget never streams and keeps its numbers bitwise.
"""
from __future__ import annotations

import os
from typing import Callable

import torch

from ..aggregators.base import Aggregate
from ..aggregators.mean import FedAvgAggregator, MeanAggregator
from ..aggregators.weighted import WeightedAggregator
from ..mechanisms.base import Upload
from .plan import BatchPlan

STREAM_BYTES = 2**30
"""The ``[m, d]`` buffer a round may keep; above it the round is streamed (:func:`streams`)."""
STREAM_ENV = "FEDCORE_STREAM_BYTES"
"""Environment variable overriding :data:`STREAM_BYTES` (bytes, an integer >= 0)."""
BLOCK_SHARE = 8
"""A streamed round trains blocks of clients whose rows take at most budget / ``BLOCK_SHARE``."""
SLICE_BYTES = 4 * 2**20
"""On CPU, rows differenced (in place), privatized and summed at a time: they stay in the cache between
the three (6 MLP clients). On a GPU a block is one slice."""
SUMMED = (MeanAggregator, FedAvgAggregator, WeightedAggregator)
"""Aggregators whose rounds may stream (these classes only: a subclass may add to ``aggregate``)."""


def stream_budget() -> int:
    """The run's budget in bytes: ``$FEDCORE_STREAM_BYTES`` when set, else :data:`STREAM_BYTES`."""
    raw = os.environ.get(STREAM_ENV, "").strip()
    if not raw:
        return STREAM_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{STREAM_ENV}={raw!r}: expected a number of bytes (an integer >= 0)")
    return value


def streams(s, m: int, row_bytes: int, budget: int) -> bool:
    """Whether a round of ``m`` clients of setup ``s`` goes block by block: its ``[m, d]`` buffer
    (``row_bytes`` a client) passes ``budget`` and its mechanism and aggregator allow it. The
    caller rules out what else needs the whole buffer (step noise, an attack watch)."""
    return m * row_bytes > budget and s.mechanism.streams and type(s.aggregator) in SUMMED


def block_rows(m: int, row_bytes: int, budget: int, chunk) -> int:
    """Clients trained per block: rows within ``budget / BLOCK_SHARE``, at least one; on CPU
    (``chunk``: clients per training call) a whole number of chunks when one fits, so the
    blocks cut the clients where the dense round's training does."""
    rows = max(1, budget // (BLOCK_SHARE * row_bytes))
    if chunk and rows >= chunk:
        rows -= rows % chunk
    return min(m, rows)


def stream_round(s, plan: BatchPlan, sel: torch.Tensor, global_flat: torch.Tensor, rnd: int,
                 gen: torch.Generator, train: Callable[[BatchPlan], torch.Tensor],
                 rows: int) -> tuple[Upload, Aggregate]:
    """Round ``rnd`` of clients ``sel`` (planned by ``plan``) from training to the aggregate, ``rows``
    clients at a time: ``train(sub_plan) -> [rows, d]`` trains a block from ``global_flat``; the
    mechanism privatizes its updates and the aggregator's weights (computed once, for all ``m``)
    sum them. Returns what :func:`~fedcore.engine.rounds.apply_round` takes: the upload's
    per-client fields (values not kept) and the aggregate."""
    m = len(sel)
    preview = _fields_only(s, sel, global_flat)
    weights, events = s.aggregator.weights(preview)
    w = weights.to(global_flat.dtype)
    total = torch.zeros_like(global_flat)
    step = rows if global_flat.device.type != "cpu" else max(1, SLICE_BYTES // (
        global_flat.numel() * global_flat.element_size()))   # a GPU gains nothing from slices, pays launches
    gathered = _Gathered(m)
    for i in range(0, m, rows):
        trained = train(plan.rows(slice(i, i + rows)))
        for j in range(0, trained.shape[0], step):
            n = min(step, trained.shape[0] - j)
            at = slice(i + j, i + j + n)
            upload = s.mechanism.privatize(trained[j:j + n].sub_(global_flat), sel[at], rnd, gen)
            total.addmv_(upload.values.t(), w[at])
            upload.values = None
            gathered.add(at, upload)
        del trained   # the training buffer is the next block's
    return gathered.upload(preview), Aggregate(total, weights, events)


def _fields_only(s, sel: torch.Tensor, global_flat: torch.Tensor) -> Upload:
    """The round's upload as the aggregator's weights see it before any block: its clients and
    noise scales (``noise_scale()[sel]``, the streaming mechanism's promise), ``[m, 0]`` values."""
    scale = s.mechanism.noise_scale()
    return Upload(values=global_flat.new_empty(len(sel), 0), clients=sel,
                  noise_std=None if scale is None else scale[sel].to(global_flat.dtype))


REFUSED = ("a mechanism that streams (Mechanism.streams) returned signals, a Gaussian record, other fields "
           "block to block or noise scales other than noise_scale(): it cannot be summed block by block")


class _Gathered:
    """The per-client fields of a round's uploads (clients, noise scales, spend, claims), written block by
    block into ``[m]`` tensors made at the first block, and the blocks' events. (Small tensors kept from
    every block split the heap's freed blocks: 65 MB more RSS a block at 5,000 MLP clients.) Refuses a
    block that breaks the promise of ``Mechanism.streams`` (:data:`REFUSED`)."""

    FIELDS = ("clients", "noise_std", "spent", "pure_epsilon", "pure_count")

    def __init__(self, m: int):
        self.m, self.first, self.columns, self.events = m, None, {}, []

    def add(self, at: slice, upload: Upload) -> None:
        """Client rows ``at`` of the round: ``upload``'s fields."""
        if upload.signals or upload.gaussian is not None:
            raise RuntimeError(REFUSED)
        fields = {f: getattr(upload, f) for f in self.FIELDS if getattr(upload, f) is not None}
        fields.update({("claims", k): v for k, v in upload.claims.items()})
        if self.first is None:
            self.first = upload
            self.columns = {k: v.new_empty(self.m, *v.shape[1:]) for k, v in fields.items()}
        if fields.keys() != self.columns.keys():
            raise RuntimeError(REFUSED)
        for k, v in fields.items():
            self.columns[k][at] = v
        self.events += upload.events

    def upload(self, preview: Upload) -> Upload:
        """The round's upload: the gathered fields, ``preview``'s ``[m, 0]`` values."""
        c, first = self.columns, self.first
        out = Upload(values=preview.values, clients=c["clients"], is_sign=first.is_sign, noise_std=c.get("noise_std"),
                     spent=c.get("spent"), claims={k[1]: v for k, v in c.items() if isinstance(k, tuple)},
                     pure_epsilon=c.get("pure_epsilon"), pure_count=c.get("pure_count"), linkable=first.linkable,
                     events=self.events)
        if (out.noise_std is None) != (preview.noise_std is None) or (
                out.noise_std is not None and not torch.equal(out.noise_std.to(preview.noise_std), preview.noise_std)):
            raise RuntimeError(REFUSED)
        return out
