"""The federated round loop (METHODS section 0) as a generator of typed events.

Round t: sample candidate clients; the aggregator may select among them; the selected
clients train together (batched, :mod:`fedcore.engine.local_round`); the mechanism clips and
perturbs their updates; the aggregator combines the uploads; the server applies
``W <- W + eta_s * f(...)`` (``sign(f)`` for sign uploads, PLDP-FL non-IID); the test set is
evaluated and one :class:`RoundEvent` is yielded, in order (:mod:`fedcore.engine.outbox`: when the
ledger still computes round t's RDP curves beside the run, the next rounds train meanwhile). The steps
before and after local training are :mod:`fedcore.engine.rounds`, shared with
:mod:`fedcore.engine.lockstep` (several runs trained together). A round whose ``[m, d]`` parameters
would pass the memory budget goes through training, the mechanism and the aggregator block by block
instead (:mod:`fedcore.engine.stream`).
"""
from __future__ import annotations

import time
from typing import Callable, Iterator, Optional

import numpy as np
import torch

from ..accounting import encode_epsilon
from ..config import RunConfig
from ..events import RoundEvent, RunFinished, RunStarted
from .evaluate import evaluate
from .flat import flatten
from .local_round import LocalRounds
from .outbox import AHEAD_ROUNDS, AHEAD_SECONDS, Outbox, fill as _fill  # noqa: F401 (re-exported)
from .rounds import (apply_round, charge_empty_round, choose_clients, new_ledger, sample_candidates,  # noqa: F401
                     server_round)  # (re-exported)
from .setup import RunSetup, prepare


def pipelined(device: torch.device, outbox: Outbox) -> bool:
    """Whether round t's ledger entry and event wait until round t + 1's training is queued (issue 55 §5): on a
    GPU, which trains meanwhile, the host's accounting and the event's figures (and the consumer, which reads
    the event) then overlap the device's training. Not on a CPU, where training is the host's own work (the
    event would come a round later), nor with an attack watch, whose records follow the rounds in order."""
    return device.type == "cuda" and outbox.may_go_ahead


def iter_run(cfg: RunConfig, should_stop: Callable[[], bool] = lambda: False,
             setup: Optional[RunSetup] = None, trainer: str = "batched", watch=None,
             profile: bool = False) -> Iterator:
    """Run ``cfg`` and yield ``RunStarted``, one ``RoundEvent`` per round, ``RunFinished``.

    Raises :class:`~fedcore.errors.FedcoreError` for settings that turn out impossible
    once the data is known (before any event); other exceptions propagate.
    ``should_stop`` is polled before every round; if it returns True the run ends with
    status ``stopped``. ``trainer="loop"`` swaps the batched local training for the
    plain per-client loop (tests and benchmarks only). ``watch``: a callable
    ``setup -> AttackWatch | None`` (:mod:`fedcore.attacks.watch`); each round's event then carries
    what the attackers of the run's threat model recover (``RoundEvent.attack``; the events of rounds
    that close in quick succession come out together once their records are built, at most
    :data:`~fedcore.attacks.watch.BATCH_ROUNDS` rounds or :data:`~fedcore.attacks.watch.BATCH_SECONDS`
    after the first of them, and before a stop, the end or a failure). ``profile``: the
    ``RunFinished`` event also carries the run's privacy profile (its headline at several δ, for the
    attacks' caps; one composition per client and δ, so only when asked).
    """
    t_start = time.perf_counter()
    s = setup or prepare(cfg)
    yield RunStarted(config=s.cfg.to_dict(), config_hash=s.cfg.config_hash(), device=str(s.device),
                     num_params=s.ctx.num_params, client_sizes=s.counts.tolist(),
                     label_counts=s.partition.label_counts.tolist(), num_classes=s.ctx.num_classes,
                     epsilon=s.cfg.privacy.epsilons(s.cfg.num_clients),  # as configured: float64, not
                     delta=s.cfg.privacy.deltas(s.cfg.num_clients),      # the tensors' float32 round trip
                     threat_model=s.mechanism.threat_model, caveat=s.mechanism.caveat)
    rng, gen = np.random.default_rng(cfg.seed), torch.Generator(device=s.device).manual_seed(cfg.seed)
    global_flat, ledger = flatten(s.params), new_ledger(s)
    watcher = watch(s) if watch is not None else None
    local_round = LocalRounds(s, gen, watcher, trainer, global_flat.numel() * global_flat.element_size())
    outbox = Outbox(ledger, watcher, t_start, may_go_ahead=watcher is None and trainer == "batched")
    acc = loss = None
    aggregated_rounds = 0
    ahead = pipelined(s.device, outbox)
    pending: list = []   # the last round's (ledger entry, event, start, end), settled once the next round trains

    def settle() -> Iterator:
        """The pending round's ledger entry and its event's post (and release, when due)."""
        while pending:
            entry, event, t0, t1, last = pending.pop()
            c = time.perf_counter()
            if entry is not None:
                entry()
            outbox.post(event, t0 - (time.perf_counter() - c), last=last, done=t1)   # its seconds count the entry
            if outbox.due(last=last):
                yield from outbox.release()

    try:  # a round that fails still lets the rounds before it out, with their records
        for rnd in range(1, cfg.rounds + 1):
            if should_stop():
                yield from settle()
                yield from outbox.flush()
                yield RunFinished("stopped", rnd - 1, time.perf_counter() - t_start, acc,
                                  aggregated_rounds=aggregated_rounds)
                return
            t0 = time.perf_counter()
            local = local_round(rnd, rng, global_flat)
            c = time.perf_counter()
            yield from settle()   # round rnd - 1's entry and event while the device trains round rnd
            t0 += time.perf_counter() - c   # not this round's time
            signals, events, selected = local.signals, local.events, local.selected
            uploaded, weights, aggregated, entry = [], [], False, None
            if local.client_flat is not None or local.streamed is not None:
                res = (apply_round(s, global_flat, ledger, *local.streamed, rnd, record=False)
                       if local.streamed is not None else
                       server_round(s, global_flat, ledger, local.client_flat, local.sel, rnd, gen, tap=watcher,
                                    record=False))
                local.client_flat = local.streamed = None
                global_flat, uploaded, weights, aggregated = res.global_flat, res.uploaded, res.weights, res.aggregated
                signals, events, entry = {**signals, **res.signals}, events + res.events, res.record
            elif not len(selected):
                charge_empty_round(s, ledger, rnd)
            evaluated = rnd % cfg.eval_every == 0 or rnd == cfg.rounds
            if evaluated:  # without a next round to overlap, the round's ledger entry is made while it evaluates
                acc, loss = evaluate(s.model, s.params, s.x_test, s.y_test, graphs=local_round.graphs,
                                     meanwhile=None if ahead else entry)
                entry = entry if ahead else None
            aggregated_rounds += aggregated
            pending.append((entry, RoundEvent(round=rnd, accuracy=acc, loss=loss, selected=[int(c) for c in selected],
                                              uploaded=uploaded, weights=weights, epsilon_spent=[], events=events,
                                              signals=signals, aggregated=aggregated, evaluated=evaluated),
                            t0, time.perf_counter(), rnd == cfg.rounds))
            if not ahead or rnd == cfg.rounds:
                yield from settle()
    except Exception:
        yield from settle()
        yield from outbox.flush()
        raise
    yield RunFinished("finished", cfg.rounds, time.perf_counter() - t_start, acc,
                      aggregated_rounds=aggregated_rounds, epsilon_pld=encode_epsilon(ledger.pld_run()),
                      epsilon_profile=[list(pair) for pair in ledger.profile()] if profile else None)
