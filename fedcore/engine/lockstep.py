"""Several runs of one architecture trained together: runs x clients in one vmap.

An ε sweep trains the same model on the same data many times with different budgets and
seeds. Run alone, each round of a small model is mostly fixed overhead (Python, small
kernels). :func:`run_lockstep` advances R runs round by round in lockstep: every run keeps
its own global parameters, mechanism, aggregator, ledger and random generators (exactly
those :func:`fedcore.engine.loop.iter_run` would use), but the local training of all
runs' selected clients is ONE :func:`~fedcore.engine.local.train_clients` call over the
concatenated clients (runs x clients stacked into one dimension), each client starting
from its own run's global model. The updates are then split back per run for the
mechanism and the aggregator (:func:`fedcore.engine.rounds.server_round`): a Python loop
over runs, never over clients.

Per run, the random draws happen in the same order as alone (client sampling and
selection from the run's ``numpy`` generator, then its batch plan and its noise from its
``torch`` generator), so a run trained in a batch gives the result it gives alone, up to
float rounding in the batched kernels (``tests/test_sweep.py`` checks this).

Runs can share a batch when :func:`batch_key` agrees: same dataset, model, local
training settings, device and mechanism with its options (hence the same per-sample
clipping). Budgets, seeds, client counts, rounds and aggregators may differ.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
import torch

from .evaluate import evaluate
from .flat import flatten, flatten_stacked
from .local import CPU_ROWS_BYTES, client_chunk, client_gradient_fn, train_clients
from .memory import keep_freed
from .plan import BatchPlan, make_plan
from .rounds import charge_empty_round, choose_clients, new_ledger, server_round
from .setup import prepare


def batch_key(cfg) -> tuple:
    """Runs with the same key can train in one lockstep batch: same data, model and local
    training, where the mechanism's part of local training is
    :meth:`~fedcore.mechanisms.base.Mechanism.local_training_for` (so a no-privacy row and the
    upload-noising rows of one paper table share a batch)."""
    from ..mechanisms import MECHANISMS

    mech = MECHANISMS.get(cfg.privacy.mechanism)
    options = mech.parse_options(cfg.privacy.mechanism_options, "privacy.mechanism_options")
    return (cfg.dataset, cfg.model, cfg.train_size, cfg.device, json.dumps(cfg.to_dict()["local"], sort_keys=True),
            mech.local_training_for(options))


def lockstep_batches(items: Sequence, max_batch: int, config: Callable = lambda item: item) -> list[list]:
    """``items`` cut into lockstep batches: groups of one :func:`batch_key` (of ``config(item)``)
    in the order first seen, ``max_batch`` items at a time (the sweep's, Ray's and a reproduction's)."""
    groups: dict = {}
    for item in items:
        groups.setdefault(batch_key(config(item)), []).append(item)
    return [group[i:i + max_batch] for group in groups.values() for i in range(0, len(group), max_batch)]


@dataclass
class LockstepResult:
    """The end of one run of the batch: final accuracy, headline ε (inf = no guarantee)."""

    final_accuracy: Optional[float]
    final_loss: Optional[float]
    headline: float
    headline_per_client: list
    threat_model: str
    params: dict
    caveat: str = ""
    accuracy: list = field(default_factory=list)
    """With ``curves``: the accuracy after every round (None where ``eval_every`` skips it)."""
    signals: dict = field(default_factory=dict)
    """With ``curves``: each method signal's mean over the rounds that reported it."""
    aggregated_rounds: int = 0
    """Rounds in which at least one update was aggregated (``RunFinished.aggregated_rounds``)."""
    epsilon_pld: Optional[float] = None
    """The run's ε under the PLD accountant (``RunFinished.epsilon_pld``; inf = no guarantee, None = not computed)."""
    accountant: str = ""
    """The headline's accountant (:meth:`fedcore.accounting.Ledger.accountant`)."""
    profile: list = field(default_factory=list)
    """With ``profile``: ``[(ε, δ)]``, the run's headline at several δ (``RunFinished.epsilon_profile``)."""
    bound: Optional[object] = None
    """With ``game``: what the run proves for that game (:meth:`fedcore.accounting.Ledger.run_bound`)."""


class _Run:
    """One run's own state: what ``iter_run`` keeps in local variables."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.s = prepare(cfg)
        self.rng = np.random.default_rng(cfg.seed)
        self.gen = torch.Generator(device=self.s.device).manual_seed(cfg.seed)
        self.global_flat = flatten(self.s.params)
        self.ledger = new_ledger(self.s)
        self.offset = 0  # first row of this run's training data in the shared tensor
        self.accuracy: list = []
        self.signals: dict = {}  # name -> (sum, count)
        self.aggregated_rounds = 0

    def note(self, signals: dict) -> None:
        for name, value in signals.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total, count = self.signals.get(name, (0.0, 0))
                self.signals[name] = (total + float(value), count + 1)


def _shared_data(runs: list[_Run]) -> tuple[torch.Tensor, torch.Tensor]:
    """One training tensor for all runs: the same one when every run uses the whole
    training set (``train_size = 0``), else the runs' subsets concatenated (with offsets)."""
    if all(r.cfg.train_size == 0 for r in runs):
        x, y = runs[0].s.x_train, runs[0].s.y_train
        for r in runs[1:]:
            r.s.x_train, r.s.y_train = x, y  # drop the duplicate copies
        return x, y
    offset = 0
    for r in runs:
        r.offset = offset
        offset += len(r.s.y_train)
    return torch.cat([r.s.x_train for r in runs]), torch.cat([r.s.y_train for r in runs])


def concat_plans(plans: Sequence[BatchPlan], offsets: Sequence[int]) -> BatchPlan:
    """Stack the plans of several runs into one (clients of run ``i`` after those of
    ``i - 1``); shorter plans are padded with inactive steps, indices shifted by ``offsets``."""
    steps = max(p.steps for p in plans)
    width = max(p.index.shape[2] for p in plans)      # Poisson plans draw batches of different sizes
    index, mask, active = [], [], []
    for p, off in zip(plans, offsets):
        pad = (0, width - p.index.shape[2], 0, steps - p.steps)
        index.append(torch.nn.functional.pad(p.index + off, pad))
        mask.append(torch.nn.functional.pad(p.mask, pad))
        active.append(torch.nn.functional.pad(p.active, (0, steps - p.steps)))
    if any((p.expected is None) != (plans[0].expected is None) for p in plans):
        raise ValueError("runs of one lockstep batch disagree on Poisson batch sampling")
    expected = None if plans[0].expected is None else torch.cat([p.expected for p in plans])
    return BatchPlan(torch.cat(index), torch.cat(mask), torch.cat(active), expected)


def _per_run_noise(parts):
    """``draw(shape, step)`` for :func:`train_clients`: each run's rows of per-step noise from
    that run's own generator, in the order it would draw them alone (nothing drawn for the
    padding steps of a run whose plan is shorter)."""
    def draw(shape, step):
        out = []
        for r, sel, plan in parts:
            rows = (len(sel), *shape[1:])
            out.append(torch.randn(rows, generator=r.gen, device=r.s.device) if step < plan.steps
                       else torch.zeros(rows, device=r.s.device))
        return torch.cat(out)
    return draw


def run_lockstep(configs: Sequence, should_stop: Callable[[], bool] = lambda: False, *,
                 curves: bool = False, profile: bool = False, game=None) -> Optional[list[LockstepResult]]:
    """Train ``configs`` together; one :class:`LockstepResult` per config, in order
    (None if ``should_stop`` returned True before the end). All configs must share
    :func:`batch_key`. ``curves``: also evaluate every ``eval_every`` rounds and keep the
    accuracy curve and the method signals' means, as :func:`~fedcore.engine.loop.iter_run`'s
    round events carry them (a reproduction's record needs them; a sweep point does not).
    ``profile``: also each run's privacy profile (``LockstepResult.profile``); ``game``
    (:class:`~fedcore.accounting.games.Game`): also each run's bound for it (``LockstepResult.bound``;
    membership inference's caps)."""
    keys = {batch_key(c) for c in configs}
    if len(keys) != 1:
        raise ValueError(f"run_lockstep needs runs of one batch_key; got {len(keys)} different ones")
    runs = [_Run(c) for c in configs]
    first = runs[0].s
    x_all, y_all = _shared_data(runs)
    local = first.cfg.local
    model = first.model
    grad_fn = client_gradient_fn(model, first.mechanism.per_sample_clip)
    chunk = None
    if first.device.type == "cpu":
        chunk = client_chunk(model, tuple(x_all.shape[1:]), local.batch_size)
        keep_freed(2 * CPU_ROWS_BYTES)  # a chunk reuses the blocks the last one freed
    results: list[Optional[LockstepResult]] = [None] * len(runs)
    for rnd in range(1, max(r.cfg.rounds for r in runs) + 1):
        if should_stop():
            return None
        parts, signals = [], {}
        for r in runs:
            if rnd > r.cfg.rounds:
                continue
            selected, _events = choose_clients(r.s, rnd, r.rng)
            signals[id(r)] = dict(r.s.aggregator.round_signals())
            if not len(selected):
                charge_empty_round(r.s, r.ledger, rnd)
            else:
                sel = torch.as_tensor(np.asarray(selected), dtype=torch.long, device=r.s.device)
                parts.append((r, sel, make_plan(r.s.padded[sel], r.s.counts[sel], local, r.gen,
                                                r.s.mechanism.poisson_batches)))
        if parts:
            plan = concat_plans([p for _, _, p in parts], [r.offset for r, _, _ in parts])
            start = {k: torch.cat([r.s.params[k].unsqueeze(0).expand(len(sel), *r.s.params[k].shape)
                                   for r, sel, _ in parts]) for k in first.params}
            noise = [r.s.mechanism.step_noise_std(sel) for r, sel, _ in parts]
            if any(n is None for n in noise) and not all(n is None for n in noise):
                raise ValueError("runs of one lockstep batch disagree on per-step DP-SGD noise")
            noise_std = None if noise[0] is None else torch.cat([n.to(first.device) for n in noise])
            stacked = train_clients(model, start, x_all, y_all, plan, local, grad_fn=grad_fn, chunk=chunk,
                                    stacked_start=True, noise_std=noise_std, gen=_per_run_noise(parts))
            flat = flatten_stacked(stacked)
            row = 0
            for r, sel, _ in parts:
                res = server_round(r.s, r.global_flat, r.ledger, flat[row:row + len(sel)], sel, rnd, r.gen)
                r.global_flat = res.global_flat
                r.aggregated_rounds += res.aggregated
                signals[id(r)].update(res.signals)
                row += len(sel)
        for i, r in enumerate(runs):
            if rnd > r.cfg.rounds:
                continue
            r.note(signals[id(r)])
            acc = loss = None
            if rnd == r.cfg.rounds or (curves and rnd % r.cfg.eval_every == 0):
                acc, loss = evaluate(model, r.s.params, r.s.x_test, r.s.y_test)
            r.accuracy.append(acc)
            if rnd == r.cfg.rounds:
                per_client = r.ledger.headline()
                results[i] = LockstepResult(acc, loss, float(per_client.max()) if len(per_client) else math.inf,
                                            per_client.tolist(), r.ledger.threat_model, r.s.params,
                                            r.s.mechanism.caveat,
                                            accuracy=r.accuracy if curves else [],
                                            signals={k: t / n for k, (t, n) in r.signals.items()} if curves else {},
                                            aggregated_rounds=r.aggregated_rounds,
                                            epsilon_pld=r.ledger.pld_run(), accountant=r.ledger.accountant(),
                                            profile=r.ledger.profile() if profile else [],
                                            bound=r.ledger.run_bound(game) if game is not None else None)
    return results
