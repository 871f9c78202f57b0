"""The two halves of a federated round around local training (METHODS section 0).

Shared by :func:`fedcore.engine.loop.iter_run` (one run) and
:func:`fedcore.engine.lockstep.run_lockstep` (several runs whose clients train in one
vmap), so that a run gives the same result either way:

- :func:`choose_clients`: sample the round's candidates, let the aggregator select
  (PLDP-FL rule C may select nobody);
- :func:`server_round`: from the selected clients' trained parameters, the mechanism
  clips and perturbs the updates, the aggregator combines the uploads, the server applies
  ``W <- W + eta_s * f(...)`` (``sign(f)`` for sign uploads, :func:`apply_round`), the ledger
  records the spend.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Optional

import numpy as np
import torch

from ..events import MethodEvent
from .flat import unflatten


def new_ledger(s):
    """The run's per-client privacy ledger (each client's own accounting delta, its threat model)."""
    from ..accounting import Ledger

    return Ledger(s.cfg.num_clients, s.mechanism.accounting_delta().double().cpu().numpy(),
                  s.mechanism.threat_model)


def sample_candidates(cfg, rng: np.random.Generator) -> np.ndarray:
    """Clients offered to the aggregator this round: fixed-size or Poisson sampling."""
    n = cfg.num_clients
    if cfg.sampling == "poisson":
        return np.flatnonzero(rng.random(n) < cfg.participation)
    m = max(1, int(round(cfg.participation * n)))
    return np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)


def choose_clients(s, rnd: int, rng: np.random.Generator) -> tuple[np.ndarray, list[MethodEvent]]:
    """The clients that train in round ``rnd`` of setup ``s``, and the selection's events."""
    candidates = sample_candidates(s.cfg, rng)
    allowed = s.mechanism.may_take_part(candidates)
    spent = [MethodEvent("dropout", int(c), {"reason": "budget"}) for c in candidates[~allowed]]
    selected, events = s.aggregator.select(candidates[allowed], rnd, rng)
    events = spent + list(events)
    if len(selected) == 0:
        events.append(MethodEvent("no_selection", None, {"candidates": len(candidates)}))
    return selected, events


def charge_empty_round(s, ledger, rnd: int) -> None:
    """Record what a round that sampled nobody costs (:meth:`~fedcore.mechanisms.base.Mechanism.empty_round`)."""
    record = s.mechanism.empty_round(rnd)
    if record is not None:
        ledger.record(np.zeros(0, dtype=np.int64), None, record)


@dataclass
class ServerResult:
    """What one round changed: the new global vector and the round's event fields."""

    global_flat: torch.Tensor
    events: list = field(default_factory=list)
    signals: dict = field(default_factory=dict)
    uploaded: list = field(default_factory=list)
    weights: list = field(default_factory=list)
    aggregated: bool = False
    """Whether the aggregator combined at least one update and the server stepped."""
    record: Optional[Callable[[], None]] = None
    """The round's ledger entry, where the caller records it itself (``record=False``)."""


def server_round(s, global_flat: torch.Tensor, ledger, client_flat: torch.Tensor, sel: torch.Tensor,
                 rnd: int, gen: torch.Generator, tap=None, record: bool = True) -> ServerResult:
    """Privatize, aggregate and apply the updates ``client_flat [m, d] - global_flat``
    of clients ``sel``; updates ``s.params`` and ``s.mechanism``'s state, records in ``ledger``.

    ``client_flat`` is consumed: the updates are computed in its place (at thousands of
    clients a fresh ``[m, d]`` tensor costs more in page faults than the subtraction),
    so the callers pass the trained parameters they no longer need.

    ``tap`` (an :class:`~fedcore.attacks.watch.AttackWatch`, optional) is shown the raw updates
    before the mechanism (``tap.before``) and the uploads and the global change after the
    server's step (``tap.after``): what each attacker of the threat model receives."""
    updates = client_flat.sub_(global_flat)
    if tap is not None:
        tap.before(updates, sel)
    upload = s.mechanism.privatize(updates, sel, rnd, gen)
    return apply_round(s, global_flat, ledger, upload, s.aggregator.aggregate(upload, rnd), rnd, tap, record)


def apply_round(s, global_flat: torch.Tensor, ledger, upload, result, rnd: int, tap=None,
                record: bool = True) -> ServerResult:
    """The server's step from a round's ``upload`` and the aggregator's ``result`` (an
    :class:`~fedcore.aggregators.base.Aggregate`): ``W <- W + eta_s f`` (``sign(f)`` for sign uploads);
    updates ``s.params``, the mechanism's state and ``ledger``. The second half of :func:`server_round`;
    a round summed block by block (:mod:`fedcore.engine.stream`) comes here with its upload's per-client
    fields, the values not kept. ``record=False``: the ledger entry is left to the caller
    (``ServerResult.record``), who makes it while the device evaluates (:func:`~fedcore.engine.loop.iter_run`)."""
    cfg = s.cfg
    step = None
    if result.delta is not None:
        step = cfg.privacy.server_lr * (torch.sign(result.delta) if upload.is_sign else result.delta)
        global_flat = global_flat + step
        s.params = unflatten(global_flat, s.params)
    if tap is not None:
        tap.after(upload, step)
    s.mechanism.after_round(step, rnd)
    fields = (upload.clients, upload.spent, upload.gaussian, upload.claims, upload.pure_epsilon, upload.pure_count)
    if record:
        ledger.record(*fields)
    entry = None if record else partial(ledger.record, *on_host(fields))
    return ServerResult(global_flat, upload.events + result.events, {**upload.signals, **result.signals},
                        upload.clients.tolist(), result.weights.tolist(), result.delta is not None, entry)


def on_host(value):
    """``value`` with every tensor in it (in tuples, lists, dicts and dataclasses such as a ``GaussianRecord``)
    copied to the host now: a ledger entry made later reads no device memory, so it waits for nothing the
    device does meanwhile (the same values: a float32 tensor turns float64 exactly on either side)."""
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, (tuple, list)):
        return type(value)(on_host(v) for v in value)
    if isinstance(value, dict):
        return {k: on_host(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: on_host(getattr(value, f.name)) for f in dataclasses.fields(value)
                                             if f.init})
    return value
