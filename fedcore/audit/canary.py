"""One-run canary audit of a whole training run (central / user-level and record-level).

After Andrew, Kairouz, Oh, Oprea, McMahan & Suriyakumar, "One-shot empirical privacy
estimation for federated learning" (ICLR 2024): canaries with random, independent
directions take part in ONE ordinary training run, and the adversary looks only at the
final model. A canary's score is the cosine between its direction u_j and the final
model's change ``theta_T - theta_0``: a canary that took part leaves a trace along its
direction, one that did not scores like a random direction (about N(0, 1/d)).

Two figures come out of the same run:

- **a rigorous lower bound** (Steinke, Nasr & Jagielski, NeurIPS 2023, one-run auditing):
  each of the ``canaries`` is inserted independently with probability 1/2; the auditor
  guesses "in" for the k highest scores and "out" for the k lowest; the number of correct
  guesses gives eps >= ... at confidence 1 - alpha (:func:`fedcore.audit.stats.one_run_epsilon`).
  k is taken from a fixed grid with a Bonferroni split of alpha, so picking the best k
  does not spend the confidence.
- **Andrew et al.'s estimate**: fit Gaussians to the inserted canaries' cosines and to
  the others' (the null), and report the eps at the run's delta of that pair
  (:func:`gaussian_pair_epsilon`). It is an estimate, exact for the Gaussian mechanism in
  high dimension, not a bound. Decision: one pooled spread for both (they are equal under
  the Gaussian mechanism); two separately fitted spreads make the tail ratio, hence eps at
  a small delta, swing with the sampling noise of a few hundred canaries.

How canaries enter (decisions where the papers leave it to the system):

- ``unit="client"`` (central / user-level): each inserted canary is an extra *client*.
  It is sampled like every other client (the config's ``sampling`` and
  ``participation``), holds a copy of a real client's data so the aggregator weighs it as
  a typical client, trains like one, and then its update is replaced by its canary
  direction with ``OVERSHOOT`` times the mechanism's clip norm: a correct mechanism clips
  it to the largest update any client may send, one that forgets to clip is caught.
- ``unit="record"`` (DP-SGD): each inserted canary is a *record* of a random host client
  whose gradient is ``-M u_j`` (norm M = the per-sample clip) at every local step that
  samples it (Binomial(steps, B / n_host) times per round, B / n being each record's
  inclusion rate). Its effect, ``lr M / B`` per inclusion, is added to the host's update
  before the mechanism perturbs it: the record's own gradient is exact, its effect on the
  host's later steps within the round is ignored (the usual "gradient canary").

The canaries are not part of the accuracy anyone reports; the audited run is a copy.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ..errors import ConfigError
from .distinguish import OVERSHOOT
from .stats import CONFIDENCE, one_run_epsilon

UNITS = ("client", "record")


# --- Andrew et al.'s estimate --------------------------------------------------------------------

def gaussian_pair_epsilon(mu0: float, sd0: float, mu1: float, sd1: float, delta: float) -> float:
    """Smallest eps with both hockey-stick divergences of N(mu0, sd0^2), N(mu1, sd1^2) <= delta.

    Computed on a fine grid (1-D integrals), by bisection on eps.

    >>> round(gaussian_pair_epsilon(0, 1, 1, 1, 1e-5), 2)   # Gaussian mechanism, multiplier 1
    4.38
    """
    if sd0 <= 0 or sd1 <= 0:
        return math.inf
    lo_x = min(mu0 - 12 * sd0, mu1 - 12 * sd1)
    hi_x = max(mu0 + 12 * sd0, mu1 + 12 * sd1)
    x = np.linspace(lo_x, hi_x, 40_001)
    dx = x[1] - x[0]
    def logpdf(mu, sd):
        return -0.5 * ((x - mu) / sd) ** 2 - math.log(sd * math.sqrt(2 * math.pi))

    lp, lq = logpdf(mu0, sd0), logpdf(mu1, sd1)

    def excess(eps: float) -> float:
        a = np.exp(lp) - np.exp(np.minimum(lq + eps, 700))
        b = np.exp(lq) - np.exp(np.minimum(lp + eps, 700))
        return max(np.clip(a, 0, None).sum(), np.clip(b, 0, None).sum()) * dx

    if excess(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) > delta:
        lo, hi = hi, hi * 2
        if hi > 1e3:
            return math.inf
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if excess(mid) <= delta else (mid, hi)
    return hi


GUESS_DIVISORS = (40, 20, 10, 5, 4)
"""k = m // divisor: the fixed grid of guess counts of :func:`steinke_lower_bound`."""


def guess_counts(m: int) -> list[int]:
    """The guess counts k tried on ``m`` canaries (k top "in", k bottom "out"), fixed before
    the scores are seen.

    >>> guess_counts(200)
    [5, 10, 20, 40, 50]
    """
    return sorted({k for k in (m // div for div in GUESS_DIVISORS) if k >= 1})


def steinke_lower_bound(scores: np.ndarray, inserted: np.ndarray, delta: float,
                        confidence: float = CONFIDENCE) -> tuple[float, dict]:
    """Best one-run bound over a fixed grid of guess counts k (k top "in", k bottom "out").

    Each k is tested at significance ``(1 - confidence) / len(grid)`` (Bonferroni), so the
    best of them still holds with ``confidence``.
    """
    m = len(scores)
    order = np.argsort(scores)
    grid = guess_counts(m)
    alpha = (1 - confidence) / len(grid)
    best, detail = 0.0, {}
    for k in grid:
        v = int(inserted[order[-k:]].sum() + (~inserted[order[:k]]).sum())
        eps = one_run_epsilon(m, 2 * k, v, delta, alpha)
        if eps >= best:
            best, detail = eps, {"guesses": 2 * k, "correct": v}
    return best, detail


# --- inserting canaries --------------------------------------------------------------------------

def clip_scale(mechanism, ctx) -> float:
    """The largest L2 norm one client's update may have after the mechanism's clipping
    (or the sensitivity bound the mechanism relies on), used to size client canaries.
    A mechanism with no such bound (``none``) gets canaries of norm 1."""
    o = mechanism.options
    d = ctx.num_params
    if hasattr(o, "clip0"):
        return float(o.clip0)
    if hasattr(o, "clip"):
        return float(o.clip) * math.sqrt(d)
    if hasattr(o, "radius"):
        return float(o.radius) * math.sqrt(d)
    if hasattr(mechanism, "sensitivity_"):
        return float(torch.as_tensor(mechanism.sensitivity_).max()) / 2
    if hasattr(o, "clip_norm"):      # DP-SGD: lr * M per step bounds a client's movement
        steps = ctx.local.steps or ctx.local.epochs * math.ceil(float(ctx.client_sizes.max()) / ctx.local.batch_size)
        return ctx.local.lr * float(o.clip_norm) * steps
    return 1.0 / OVERSHOOT      # nothing bounds the update (no privacy): a unit-norm canary


class CanaryMechanism:
    """Wraps the run's mechanism: puts the canaries into the updates, then privatizes."""

    def __init__(self, inner, canary_clients: dict, record_hosts: dict, directions: torch.Tensor,
                 client_norm: float, record_step: float, gen: torch.Generator):
        self.inner = inner
        self.canary_clients = canary_clients        # client id -> canary index
        self.record_hosts = record_hosts            # client id -> [canary indices]
        self.directions = directions                # [canaries, d], unit rows
        self.client_norm = client_norm
        self.record_step = record_step              # lr M / B: one inclusion of a canary record
        self.gen = gen

    def __getattr__(self, name):                    # per_sample_clip, upload_kind, noise_scale, ...
        return getattr(self.inner, name)

    def privatize(self, updates, clients, round, gen):
        updates = updates.clone()
        ctx = self.inner.ctx
        for row, cid in enumerate(clients.tolist()):
            if cid in self.canary_clients:
                updates[row] = self.client_norm * self.directions[self.canary_clients[cid]].to(updates)
            for j in self.record_hosts.get(cid, ()):
                steps = ctx.local.steps or ctx.local.epochs * math.ceil(float(ctx.client_sizes[cid]) / ctx.local.batch_size)
                rate = min(1.0, ctx.local.batch_size / float(ctx.client_sizes[cid]))
                hits = int(torch.binomial(torch.tensor(float(steps)), torch.tensor(rate), generator=self.gen))
                updates[row] += hits * self.record_step * self.directions[j].to(updates)
        return self.inner.privatize(updates, clients, round, gen)

    def after_round(self, global_update, round):
        self.inner.after_round(global_update, round)


@dataclass(frozen=True)
class CanaryAudit:
    """The figures of a one-run canary audit (scope: the whole run, the final model)."""

    unit: str
    canaries: int
    inserted: int
    delta: float
    epsilon_lower: float
    epsilon_estimate: float
    guesses: int
    correct: int
    mean_cosine_in: float
    mean_cosine_out: float
    accountant_epsilon: float
    accountant_basis: str
    claims: dict
    final_accuracy: Optional[float]
    confidence: float
    seconds: float


def _extend(values: list, copies: list) -> list:
    return values + [values[i] for i in copies] if len(values) > 1 else values


def canary_run(cfg, *, unit: str = "client", canaries: int = 200, seed: int = 0,
               confidence: float = CONFIDENCE, client: Optional[int] = None) -> CanaryAudit:
    """Train ``cfg`` once with ``canaries`` random-direction canaries (half inserted) and audit it."""
    from ..aggregators import AGGREGATORS
    from ..engine import iter_run
    from ..engine.flat import flatten
    from ..engine.setup import prepare
    from ..events import RoundEvent
    from ..mechanisms import MECHANISMS

    if unit not in UNITS:
        raise ConfigError("unit", unit, "must be one of: " + ", ".join(UNITS))
    if canaries < 20:
        raise ConfigError("canaries", canaries, "must be >= 20 (the one-run bound needs many canaries)")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    inserted = rng.random(canaries) < 0.5
    n = cfg.num_clients
    eps_list = cfg.privacy.epsilons(n)
    host = int(np.argmax(eps_list)) if client is None else client
    s = prepare(cfg)
    d = s.ctx.num_params
    gen = torch.Generator().manual_seed(seed + 1)
    directions = torch.randn(canaries, d, generator=gen, dtype=torch.float64)
    directions = (directions / directions.norm(dim=1, keepdim=True)).to(torch.float32)

    in_ids = np.flatnonzero(inserted)
    extra = len(in_ids) if unit == "client" else 0
    copies = [host] * extra                        # canary clients: the audited client's budget and data
    run_cfg = cfg
    if extra:
        pc = cfg.privacy
        privacy = dataclasses.replace(pc, epsilon=tuple(_extend(list(pc.epsilon), copies)),
                                      delta=tuple(_extend(list(pc.delta), copies)))
        run_cfg = cfg.replace(num_clients=n + extra, privacy=privacy)
        idx = torch.as_tensor(list(range(n)) + copies, device=s.device)
        s.padded, s.counts = s.padded[idx], s.counts[idx]
        s.ctx = dataclasses.replace(s.ctx, num_clients=n + extra, client_sizes=s.ctx.client_sizes[idx],
                                    epsilon=s.ctx.epsilon[idx], delta=s.ctx.delta[idx],
                                    label_counts=np.asarray(s.ctx.label_counts)[idx.cpu().numpy()])
    pc = run_cfg.privacy
    mech_cls, agg_cls = MECHANISMS.get(pc.mechanism), AGGREGATORS.get(pc.aggregator)
    inner = mech_cls(mech_cls.parse_options(pc.mechanism_options, "privacy.mechanism_options"), s.ctx)
    aggregator = agg_cls(agg_cls.parse_options(pc.aggregator_options, "privacy.aggregator_options"), s.ctx)
    aggregator.attach_mechanism(inner)
    canary_clients = {n + i: int(j) for i, j in enumerate(in_ids)} if unit == "client" else {}
    hosts: dict = {}
    record_step = 0.0
    if unit == "record":
        clip = inner.per_sample_clip
        if clip is None:
            raise ConfigError("privacy.mechanism", pc.mechanism,
                              "does not clip per-sample gradients, so a record-level canary has no defined size; "
                              "use the client-level canary audit (--unit client)")
        record_step = run_cfg.local.lr * float(clip) / run_cfg.local.batch_size
        owners = rng.integers(0, n, size=len(in_ids))
        for j, owner in zip(in_ids, owners):
            hosts.setdefault(int(owner), []).append(int(j))
    norm = OVERSHOOT * clip_scale(inner, s.ctx) if unit == "client" else 0.0
    s.mechanism = CanaryMechanism(inner, canary_clients, hosts, directions.to(s.device), norm, record_step, gen)
    s.aggregator = aggregator
    s.cfg = run_cfg

    start = flatten(s.params).detach().clone()
    last = None
    for event in iter_run(run_cfg, setup=s):
        if isinstance(event, RoundEvent):
            last = event
    change = (flatten(s.params) - start).double().cpu()
    cos = (directions.double() @ change / max(float(change.norm()), 1e-300)).numpy()

    audited = [int(c) for c in canary_clients] if unit == "client" else sorted(hosts) or [host]
    delta = float(s.ctx.delta[audited[0]])
    lower, detail = steinke_lower_bound(cos, inserted, delta, confidence)
    mu1, sd1 = float(cos[inserted].mean()), float(cos[inserted].std(ddof=1))
    mu0, sd0 = float(cos[~inserted].mean()), float(cos[~inserted].std(ddof=1))
    pooled = math.sqrt(((inserted.sum() - 1) * sd1 ** 2 + ((~inserted).sum() - 1) * sd0 ** 2) / (canaries - 2))
    estimate = gaussian_pair_epsilon(0.0, 1.0, (mu1 - mu0) / pooled, 1.0, delta)
    acc, basis, claims = _ledger_figures(last, audited, unit)
    return CanaryAudit(unit=unit, canaries=canaries, inserted=int(inserted.sum()), delta=delta,
                       epsilon_lower=lower, epsilon_estimate=estimate, guesses=detail.get("guesses", 0),
                       correct=detail.get("correct", 0), mean_cosine_in=mu1, mean_cosine_out=mu0,
                       accountant_epsilon=acc, accountant_basis=basis, claims=claims,
                       final_accuracy=None if last is None else last.accuracy, confidence=confidence,
                       seconds=time.perf_counter() - t0)


def _ledger_figures(last, audited: list, unit: str) -> tuple[float, str, dict]:
    """The run's ledger for the audited clients (the canary clients, or the record hosts):
    the headline eps where the run reports one, else the RDP view, else basic composition."""
    who = "canary clients" if unit == "client" else "clients hosting canary records"
    if last is None:
        return math.inf, "no round ran", {}
    views = dict(last.epsilon_accountant or {})
    rdp = views.pop("rdp", None)
    claims = {label: max(float(values[c]) for c in audited) for label, values in views.items()
              if isinstance(values, list) and all(values[c] is not None for c in audited)}
    headline = getattr(last, "epsilon_headline", None)
    if headline:
        values = [math.inf if headline[c] is None else float(headline[c]) for c in audited]
        return max(values), f"headline eps of the run's ledger, largest over the {who}", claims
    if rdp is not None and all(rdp[c] is not None for c in audited):
        return max(float(rdp[c]) for c in audited), f"RDP ledger (dp-accounting), largest over the {who}", claims
    spent = max(float(last.epsilon_spent[c]) for c in audited)
    if spent > 0:
        return spent, f"basic composition ledger, largest over the {who}", claims
    return math.inf, "nothing noised: no finite eps", claims
