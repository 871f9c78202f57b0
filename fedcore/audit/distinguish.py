"""Distinguishing audit of one report of a local mechanism (an empirical eps lower bound).

Under local DP each upload must be eps-DP against the server for *any* two inputs of the
client. The audit plays the server: it feeds the registered mechanism two neighbouring
inputs many times, through its public ``privatize`` on the run's own context, and tries to
tell from each output which input it was (the best threshold test of
:func:`fedcore.audit.stats.threshold_audit`). The test's error rates give a lower bound on
the eps of one report, with a Clopper-Pearson confidence (Jagielski et al. 2020; Nasr et
al. 2021, "Adversary instantiation").

Inputs (a *probe* per mechanism family, :data:`PROBES`). The worst case for a clipping
mechanism is the two opposite corners of its clip range. The probe feeds points
``OVERSHOOT`` times *beyond* those corners: a correct mechanism clips them to the corners,
so the audit is as strong as at the corners, while a mechanism that forgets to clip
releases them as they are and is caught. Mechanisms that bound the update through training
rather than by clipping it (HW-DPFL) get two updates exactly the sensitivity apart.

Test statistic: the projection of the output onto the difference of the two clipped
inputs (the likelihood ratio of Gaussian noise, of independent signs and of two-point
draws), or the Laplace log-likelihood ratio ``sum |y - b| - |y - a|`` for Laplace noise.

Scope: ONE report (one client, one round), compared with what the mechanism's own ledger
record says that report costs (its ``gaussian`` record through dp-accounting's RDP, or its
pure-eps ``spent``) and with the paper's labelled figures for it. Decisions:

- LDP-FL's shuffling mixes the uploads of *different* clients; it cannot hide one client's
  report from a server that sees that report, so the audit draws with ``shuffle=False``.
- ``dim`` audits the same mechanism on a model of ``dim`` parameters (default: the run's).
  ``dim = 1`` audits a single weight: LDP-FL's "per-weight eps" claim.
- Round 1, the client with the largest budget (the least private) unless told otherwise.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

from ..accounting.rdp import gaussian_rdp, rdp_epsilon
from ..errors import ConfigError
from .stats import CONFIDENCE, ThresholdAudit, max_auditable_epsilon, threshold_audit

OVERSHOOT = 4.0        # probe inputs lie this many clip widths out; a correct mechanism clips them
CHUNK_ELEMENTS = 4_000_000   # draws x dim per privatize call (memory)
MAX_ELEMENTS = 2_000_000_000   # draws x dim of one audit (time)


@dataclass(frozen=True)
class Pair:
    """Neighbouring inputs ``a``, ``b`` fed to the mechanism ``[dim]`` and the points a
    correct mechanism turns them into (``a_clipped``, ``b_clipped``), which the test uses."""

    a: torch.Tensor
    b: torch.Tensor
    a_clipped: torch.Tensor
    b_clipped: torch.Tensor
    words: str


@dataclass(frozen=True)
class Probe:
    """How to audit one mechanism family: its neighbouring inputs and test statistic."""

    pair: Callable[[object, int, int], Pair]     # (mechanism, client, dim) -> Pair
    statistic: str = "linear"                     # "linear" | "laplace"


def _box(mech, client: int, dim: int) -> Pair:
    c = float(mech.options.clip)
    one = torch.ones(dim)
    return Pair(OVERSHOOT * c * one, -OVERSHOOT * c * one, c * one, -c * one,
                f"every coordinate at +{OVERSHOOT:g}c vs -{OVERSHOOT:g}c (c = {c:g}; clipped to the box corners)")


def _two_point(mech, client: int, dim: int) -> Pair:
    o = mech.options
    one = torch.ones(dim)
    return Pair((o.center + OVERSHOOT * o.radius) * one, (o.center - OVERSHOOT * o.radius) * one,
                (o.center + o.radius) * one, (o.center - o.radius) * one,
                f"every weight at c +- {OVERSHOOT:g}r (c = {o.center:g}, r = {o.radius:g}; clipped to c +- r)")


def _l2_ball(mech, client: int, dim: int) -> Pair:
    o = mech.options
    clip = o.clip0 * math.exp(-o.beta) if o.decay else o.clip0       # C_1, the first participation
    u = torch.full((dim,), 1.0 / math.sqrt(dim))
    return Pair(OVERSHOOT * clip * u, -OVERSHOOT * clip * u, clip * u, -clip * u,
                f"+-{OVERSHOOT:g} C_1 along one direction (C_1 = {clip:.4g}; clipped to opposite points of the L2 ball)")


def _sensitivity_apart(mech, client: int, dim: int) -> Pair:
    half = float(mech.sensitivity_[client]) / 2
    u = torch.full((dim,), 1.0 / math.sqrt(dim))
    return Pair(half * u, -half * u, half * u, -half * u,
                f"two updates the sensitivity Delta_f = {2 * half:.4g} apart (Lemma 2; nothing to clip)")


PROBES: dict[str, Probe] = {
    "gaussian": Probe(_box),
    "ldp_sign": Probe(_box),
    "laplace": Probe(_box, statistic="laplace"),
    "two_point": Probe(_two_point),
    "uldp_gaussian": Probe(_l2_ball),
    "hw_gaussian": Probe(_sensitivity_apart),
}
"""Mechanisms the distinguishing audit knows how to probe (the local ones)."""


@dataclass(frozen=True)
class ReportAudit:
    """The figures of one report: the bound, the ledger's eps for it, the paper's claims."""

    mechanism: str
    client: int
    dim: int
    delta: float
    epsilon_lower: float
    epsilon_estimate: float
    accountant_epsilon: float
    accountant_basis: str
    claims: dict
    test: ThresholdAudit
    ceiling: float
    inputs: str
    seconds: float


def replicate_context(ctx, client: int, copies: int, dim: Optional[int] = None):
    """The run's context with ``copies`` clones of ``client`` (one per draw), on the CPU,
    optionally for a model of ``dim`` parameters."""
    idx = torch.full((copies,), client, dtype=torch.long)
    dev = torch.device("cpu")
    changes = dict(num_clients=copies, device=dev,
                   client_sizes=ctx.client_sizes.cpu()[idx], epsilon=ctx.epsilon.cpu()[idx],
                   delta=ctx.delta.cpu()[idx], label_counts=np.asarray(ctx.label_counts)[idx.numpy()])
    if dim is not None and dim != ctx.num_params:
        changes.update(num_params=dim, layer_slices={"audit": slice(0, dim)})
    return dataclasses.replace(ctx, **changes)


def audit_options(name: str, options):
    """The options the audit draws with: LDP-FL's shuffle off (it mixes other clients' reports)."""
    if name == "two_point" and options.shuffle:
        return dataclasses.replace(options, shuffle=False)
    return options


def _statistic(kind: str, pair: Pair) -> Callable[[torch.Tensor], torch.Tensor]:
    a, b = pair.a_clipped.double(), pair.b_clipped.double()
    if kind == "laplace":
        return lambda y: ((y.double() - b).abs() - (y.double() - a).abs()).sum(dim=1)
    direction = a - b
    centre = (a + b) / 2
    return lambda y: (y.double() - centre) @ direction


def upload_releases(upload, row: int) -> tuple[dict, dict]:
    """What the mechanism's ledger record says row ``row`` of ``upload`` released: its Gaussian steps
    ``{(z, q): steps}`` and its pure releases ``{ε: count}`` (the ledger's own forms)."""
    gaussian, pure = {}, {}
    g = upload.gaussian
    if g is not None:
        z = float(torch.as_tensor(g.noise_multiplier).reshape(-1)[row])
        steps = torch.as_tensor(g.steps, dtype=torch.float64).reshape(-1)
        q = torch.as_tensor(g.sample_rate, dtype=torch.float64).reshape(-1)
        gaussian[(z, float(q[row] if len(q) > 1 else q[0]))] = float(steps[row] if len(steps) > 1 else steps[0])
    if getattr(upload, "pure_epsilon", None) is not None:
        total = float(torch.as_tensor(upload.pure_epsilon).reshape(-1)[row])
        count = getattr(upload, "pure_count", None)
        k = 1.0 if count is None else float(torch.as_tensor(count).reshape(-1)[row])
        if total > 0:
            pure[total / k] = k
    return gaussian, pure


def report_epsilon(upload, row: int, delta: float) -> tuple[float, str]:
    """What the mechanism's own ledger record says one report costs (row ``row``): the
    tightest of its Gaussian record (dp-accounting RDP at ``delta``) and its rigorous pure
    eps (its ``pure_count`` equal releases composed as the ledger composes them,
    :mod:`fedcore.accounting.pure`); else the eps it spends under basic composition; infinity if nothing is noised."""
    options = []
    gaussian, pure = upload_releases(upload, row)
    for (z, q), steps in gaussian.items():
        options.append((rdp_epsilon(steps * gaussian_rdp(z, q), delta),
                        f"RDP (dp-accounting) of its Gaussian record, noise multiplier {z:.4g}"))
    if getattr(upload, "pure_epsilon", None) is not None:
        from ..accounting.pure import compose_pure

        ((unit, k),) = pure.items() if pure else ((0.0, 1.0),)
        options.append((compose_pure(pure, delta),
                        "its rigorous pure eps" + (f", {k:.0f} releases composed by their PLD" if k > 1 else "")))
    if options:
        return min(options)
    if upload.spent is not None and float(upload.spent[row]) > 0:
        return float(upload.spent[row]), "pure eps it records (basic composition)"
    return math.inf, "nothing noised: no finite eps"


def draw_scores(mech_cls, options, ctx, probe: Probe, *, name: str, client: int, trials: int,
                seed: int = 0, dim: Optional[int] = None) -> tuple[list, object, Pair, float]:
    """``trials`` uploads of ``client`` from each of the probe's two inputs, through a fresh
    ``mech_cls(options, ...)`` per batch, scored by the probe's statistic: ``([scores of input b,
    scores of input a], the first upload, the pair, the mechanism's δ)``. Refuses central and
    record-level mechanisms (one upload is not meant to be private on its own) and audits whose
    draws x dim would take minutes."""
    dim = dim or ctx.num_params
    if trials < 8:
        raise ConfigError("trials", trials, "must be >= 8 (draws per input)")
    if 2 * trials * dim > MAX_ELEMENTS:
        raise ConfigError("trials", trials, f"x {dim} parameters is more than this audit draws "
                          f"({MAX_ELEMENTS:.0e} numbers, minutes on a CPU); lower --trials or audit the mechanism on a smaller "
                          "model with --dim")
    per_call = max(1, min(trials, CHUNK_ELEMENTS // dim))
    gen = torch.Generator().manual_seed(seed)
    first = mech_cls(options, replicate_context(ctx, client, 1, dim))
    threat = getattr(first, "threat_model", "local")
    if threat in ("central", "record"):
        raise ConfigError("privacy.mechanism", name, f"is read under the {threat} threat model here: one upload "
                          "is not meant to be private on its own, so a one-report distinguishing audit does not "
                          "apply; use the canary audit (--kind canary)")
    pair = probe.pair(first, 0, dim)
    stat = _statistic(probe.statistic, pair)
    delta = float(first.accounting_delta()[0]) if hasattr(first, "accounting_delta") else float(ctx.delta[client])
    scores, upload0 = [], None
    for x in (pair.b, pair.a):                     # world 0: input b; world 1: input a
        out = []
        done = 0
        while done < trials:
            m = min(per_call, trials - done)
            mech = mech_cls(options, replicate_context(ctx, client, m, dim))
            upload = mech.privatize(x.expand(m, dim).clone(), torch.arange(m), 1, gen)
            upload0 = upload0 or upload
            out.append(stat(upload.values).numpy())
            done += m
        scores.append(np.concatenate(out))
    return scores, upload0, pair, delta


def distinguish(mech_cls, options, ctx, probe: Probe, *, name: str, client: int, trials: int,
                seed: int = 0, dim: Optional[int] = None, confidence: float = CONFIDENCE) -> ReportAudit:
    """Audit one report of ``mech_cls(options, ctx)`` for ``client`` with ``trials`` draws per input.

    ``mech_cls`` may be any :class:`~fedcore.mechanisms.Mechanism` subclass (the tests pass
    deliberately broken ones); a fresh instance is built for every batch of draws, each
    draw a clone of ``client`` in round 1, so stateful mechanisms start clean.
    """
    import time

    t0 = time.perf_counter()
    scores, upload0, pair, delta = draw_scores(mech_cls, options, ctx, probe, name=name, client=client,
                                               trials=trials, seed=seed, dim=dim)
    dim = dim or ctx.num_params
    test = threshold_audit(scores[0], scores[1], delta, confidence)
    acc, basis = report_epsilon(upload0, 0, delta)
    claims = {label: float(v.reshape(-1)[0]) for label, v in upload0.claims.items()}
    return ReportAudit(mechanism=name, client=client, dim=dim, delta=delta, epsilon_lower=test.epsilon_lower,
                       epsilon_estimate=test.epsilon_estimate, accountant_epsilon=acc, accountant_basis=basis,
                       claims=claims, test=test, ceiling=max_auditable_epsilon(trials, delta, confidence),
                       inputs=pair.words, seconds=time.perf_counter() - t0)
