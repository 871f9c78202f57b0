"""The federated round loop (METHODS section 0) as a generator of typed events.

Round t: sample candidate clients; the aggregator may select among them; the selected
clients train together (batched, :mod:`fedcore.engine.local`); the mechanism clips and
perturbs their updates; the aggregator combines the uploads; the server applies
``W <- W + eta_s * f(...)`` (``sign(f)`` for sign uploads, PLDP-FL non-IID); the test set is
evaluated and one :class:`RoundEvent` is yielded. When the ledger still computes round t's RDP
curves beside the run (:mod:`fedcore.accounting.ledger`), event t keeps the figures round t left
(:meth:`~fedcore.accounting.ledger.Ledger.snapshot`) and the next rounds run meanwhile; the events
come out in order as their curves are composed (the same numbers), at most :data:`AHEAD_ROUNDS`
rounds and about :data:`AHEAD_SECONDS` behind the training. The steps before and after local training
are :mod:`fedcore.engine.rounds`, shared with :mod:`fedcore.engine.lockstep` (several runs
trained together). A round whose ``[m, d]`` parameters would pass the memory budget goes through
training, the mechanism and the aggregator block by block instead (:mod:`fedcore.engine.stream`).
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import numpy as np
import torch

from ..accounting import encode_epsilon
from ..accounting.ledger import Figures
from ..config import RunConfig
from ..events import RoundEvent, RunFinished, RunStarted
from .evaluate import evaluate
from .flat import flatten, flatten_stacked
from .graphs import StepGraphs, enabled as graphs_enabled
from .local import CPU_ROWS_BYTES, Workspace, client_chunk, client_gradient_fn, train_clients
from .memory import keep_freed
from .plan import make_plan
from .reference import train_clients_loop
from .rounds import (apply_round, charge_empty_round, choose_clients, new_ledger, sample_candidates,  # noqa: F401
                     server_round)  # (re-exported)
from .setup import RunSetup, prepare
from .stream import block_rows, stream_budget, stream_round, streams


@dataclass
class _Local:
    """One round up to the server (:func:`iter_run`): the chosen clients and their trained rows."""

    selected: np.ndarray
    events: list
    signals: dict
    sel: Optional[torch.Tensor] = None
    client_flat: Optional[torch.Tensor] = None
    streamed: Optional[tuple] = None
    """A round summed block by block (:mod:`.stream`): its upload's fields and the aggregate."""


AHEAD_ROUNDS = 32
"""At most this many rounds' events wait for their RDP curves while later rounds train
(:func:`iter_run`); past it the loop waits for the oldest."""
AHEAD_SECONDS = 1.0
"""Nor does an event wait longer than this while later rounds train: a live view stays within about a
second of the training, and a Stop takes effect within about as long (the rounds trained meanwhile
still come out)."""


def _fill(event: RoundEvent, figures: Figures, t_start: float) -> RoundEvent:
    """``event`` with the privacy figures of ``figures`` (the ledger, or the snapshot its round left)."""
    headline = figures.headline()
    event.epsilon_spent, event.epsilon_accountant = figures.basic.tolist(), figures.views()
    event.threat_model, event.accountant = figures.threat_model, figures.accountant()
    event.epsilon_headline = [encode_epsilon(e) for e in headline]
    event.epsilon_headline_run = encode_epsilon(float(headline.max()))
    event.elapsed = time.perf_counter() - t_start
    return event


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
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator(device=s.device).manual_seed(cfg.seed)
    grad_fn = client_gradient_fn(s.model, s.mechanism.per_sample_clip)
    chunk = None  # clients per vmap call: all of them, except on CPU
    if s.device.type == "cpu":
        chunk = client_chunk(s.model, tuple(s.x_train.shape[1:]), cfg.local.batch_size)
        keep_freed(2 * CPU_ROWS_BYTES)  # a chunk reuses the blocks the last one freed
    global_flat = flatten(s.params)
    row_bytes, budget = global_flat.numel() * global_flat.element_size(), stream_budget()
    ledger = new_ledger(s)
    workspace = Workspace()  # the clients' training buffer, kept across rounds
    graphs = StepGraphs() if graphs_enabled(s.device) and trainer == "batched" else None  # local steps on CUDA
    watcher = watch(s) if watch is not None else None
    acc = loss = None
    aggregated_rounds = 0

    def train(plan, step_noise=None) -> torch.Tensor:
        """The ``[m, d]`` parameters of the clients of ``plan`` trained from ``s.params``."""
        return flatten_stacked(train_clients(s.model, s.params, s.x_train, s.y_train, plan, cfg.local,
                                             grad_fn=grad_fn, chunk=chunk, noise_std=step_noise, gen=gen,
                                             workspace=workspace, graphs=graphs))

    def local_round(rnd: int) -> _Local:
        """Round ``rnd`` up to the server: choose the clients, plan their batches, train them
        (above the memory budget, through the mechanism and the aggregator too: :mod:`.stream`)."""
        selected, events = choose_clients(s, rnd, rng)
        out = _Local(selected, events, dict(s.aggregator.round_signals()))
        if len(selected):
            out.sel = torch.as_tensor(np.asarray(selected), dtype=torch.long, device=s.device)
            plan = make_plan(s.padded[out.sel], s.counts[out.sel], cfg.local, gen, s.mechanism.poisson_batches)
            if watcher is not None:
                watcher.plan(out.sel, plan)
            step_noise = s.mechanism.step_noise_std(out.sel)
            if trainer == "loop" and step_noise is not None:
                raise ValueError("trainer='loop' does not add per-step DP-SGD noise; use the batched trainer")
            if trainer == "loop":
                out.client_flat = flatten_stacked(train_clients_loop(s.model, s.params, s.x_train, s.y_train, plan,
                                                                     cfg.local, clip=s.mechanism.per_sample_clip))
            elif step_noise is None and watcher is None and streams(s, len(selected), row_bytes, budget):
                out.streamed = stream_round(s, plan, out.sel, global_flat, rnd, gen, train,
                                            block_rows(len(selected), row_bytes, budget, chunk))
            else:  # the buffer becomes the updates (server_round); the next round may reuse it
                out.client_flat = train(plan, step_noise)
        return out

    # Beside: while the ledger still computes round t's curves (accounting.ledger), event t waits with the
    # figures round t left and the next rounds run; events leave in order, each once its curves are composed.
    # Not with an attack watch (it follows each round's plan and close in turn).
    may_go_ahead = watcher is None and trainer == "batched"
    waiting: deque = deque()      # (event, its round's figures, when it was built), oldest first
    held: list[RoundEvent] = []   # with a watch: rounds whose attack records are built together
    consumer_s: list[Optional[float]] = [None]   # how long the consumer kept the last events released

    def settle(wait: bool, keep: int = 0, lag: float = 0.0) -> float:
        """Move the waiting events whose figures are complete to ``held``, in order; with ``wait``, wait for
        all but the newest ``keep`` of those built less than ``lag`` seconds ago. Returns the seconds spent
        waiting (added to each waited event's own)."""
        waited = 0.0
        while waiting:
            event, figures, built = waiting[0]
            must = wait and (len(waiting) > keep or time.perf_counter() - built >= lag)
            t = time.perf_counter()
            if not ledger.settle(figures, wait=must):
                break
            if must:
                event.seconds += time.perf_counter() - t
                waited += time.perf_counter() - t
            held.append(_fill(event, figures, t_start))
            waiting.popleft()
        return waited

    def release() -> Iterator[RoundEvent]:
        """The held events, each with its round's attack record (:meth:`AttackWatch.flush`)."""
        t = time.perf_counter()
        records = watcher.flush() if watcher is not None and held else [{} for _ in held]
        if held:
            held[-1].seconds += time.perf_counter() - t
        events, held[:] = list(held), []
        waited = 0.0
        for event, record in zip(events, records):
            event.attack = record
            t = time.perf_counter()
            yield event
            waited += time.perf_counter() - t
        consumer_s[0] = waited

    try:  # a round that fails still lets the rounds before it out, with their records
        for rnd in range(1, cfg.rounds + 1):
            if should_stop():
                settle(wait=True)
                yield from release()
                yield RunFinished("stopped", rnd - 1, time.perf_counter() - t_start, acc,
                                  aggregated_rounds=aggregated_rounds)
                return
            t0 = time.perf_counter()
            local = local_round(rnd)
            signals, events, selected = local.signals, local.events, local.selected
            uploaded, weights, aggregated = [], [], False
            if local.client_flat is not None or local.streamed is not None:
                res = (apply_round(s, global_flat, ledger, *local.streamed, rnd) if local.streamed is not None else
                       server_round(s, global_flat, ledger, local.client_flat, local.sel, rnd, gen, tap=watcher))
                local.client_flat = local.streamed = None
                global_flat, uploaded, weights, aggregated = res.global_flat, res.uploaded, res.weights, res.aggregated
                signals = {**signals, **res.signals}
                events += res.events
            elif not len(selected):
                charge_empty_round(s, ledger, rnd)
            evaluated = rnd % cfg.eval_every == 0 or rnd == cfg.rounds
            if evaluated:  # the ledger's curves of this round are computed beside it (accounting.ledger)
                acc, loss = evaluate(s.model, s.params, s.x_test, s.y_test, graphs=graphs)
            event = RoundEvent(round=rnd, accuracy=acc, loss=loss, selected=[int(c) for c in selected],
                               uploaded=uploaded, weights=weights, epsilon_spent=[], events=events,
                               signals=signals, aggregated=aggregated, evaluated=evaluated)
            aggregated_rounds += aggregated
            if may_go_ahead and ledger.pending():       # its figures now, its curves when they are back
                waiting.append((event, ledger.snapshot(), time.perf_counter()))
                last = rnd == cfg.rounds
                waited = settle(wait=True, keep=0 if last else AHEAD_ROUNDS, lag=0.0 if last else AHEAD_SECONDS)
                event.seconds += time.perf_counter() - t0 - waited
            else:                                       # every curve is in: the rounds before it too
                settle(wait=True)
                if watcher is not None:
                    watcher.close(ledger)
                event.seconds = time.perf_counter() - t0
                held.append(_fill(event, ledger, t_start))
            if watcher is None or rnd == cfg.rounds or watcher.due(consumer_s[0]):
                yield from release()
    except Exception:
        settle(wait=True)
        yield from release()
        raise
    yield RunFinished("finished", cfg.rounds, time.perf_counter() - t_start, acc,
                      aggregated_rounds=aggregated_rounds, epsilon_pld=encode_epsilon(ledger.pld_run()),
                      epsilon_profile=[list(pair) for pair in ledger.profile()] if profile else None)
