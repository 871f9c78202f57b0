"""Equal privacy: solve each method's own knob so that its *headline* ε equals a target.

One ``privacy.epsilon`` means something different to every mechanism: ε per weight per
round (LDP-FL's two-point), ε over the run from the paper's own formula (PLDP-FL, HW-DPFL),
the noise calibration of a user-level or record-level Gaussian. What a run really spends is
its headline ε (:mod:`fedcore.accounting.headline`). :func:`match_headline` scales the
configured budgets (every client's ``privacy.epsilon`` by one factor, so personalized tiers
keep their ratios) until the run's headline, the largest over clients, lands in
``[(1 - tol) target, target]``: never above the target. The headline of a candidate comes
from :func:`fedcore.engine.replay.replay_headline` (the run's accounting without its
training), so a calibration costs a few replays, not a few runs.

The search is a bisection on ``log(scale)``: the headline grows with every mechanism's
budget. A mechanism whose headline is infinite (nothing noised) cannot be matched and
raises :class:`~fedcore.errors.FedcoreError` naming the method. One that spends less than the
target even at the largest budget ``privacy.epsilon`` accepts (a floor on its noise) runs at
that budget, ``reached=False``: its headline, below the target, is what it can spend. One that
releases nothing at any budget (PLDP-FL rule C selecting nobody in every round of a short run)
has no budget to solve: it keeps its configured budgets, ``released=False`` and ``knob=None``.

>>> from fedcore.layering import build_config
>>> cfg = build_config("demo", None, ["method=pldp_b"])
>>> matched = match_headline(cfg, 10.0)
>>> 9.9 <= matched.headline <= 10.0, matched.knob < 10.0
(True, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from .errors import FedcoreError

TOLERANCE = 0.01
"""A matched run spends between (1 - TOLERANCE) x target and target."""
EPSILON_RANGE = (1e-9, 1e6)
"""The budgets a calibration may set (``privacy.epsilon`` accepts (0, 1e6])."""
MAX_STEPS = 80


@dataclass(frozen=True)
class Matched:
    """A configuration whose replayed headline ε is within tolerance of the target."""

    config: object       # RunConfig with the solved privacy.epsilon
    target: float
    headline: float      # replayed headline ε of ``config``
    knob: Optional[float]  # the largest solved per-client privacy.epsilon (None: nothing released)
    scale: float         # solved budgets / configured budgets
    reached: bool = True  # False: even its largest budget spends less than the target (it runs at that)
    released: bool = True  # False: the replay released nothing at any budget; no budget was solved


def match_headline(cfg, target: float, tol: float = TOLERANCE, base=None, guess: float = 1 - TOLERANCE / 2) -> Matched:
    """``cfg`` with its budgets scaled so its headline ε is in ``[(1 - tol) target, target]``.

    ``base``: a prepared :class:`~fedcore.engine.setup.RunSetup` of ``cfg``'s data and model
    (saves loading and splitting the data again); built here when None. ``guess``: the scale
    tried first (a sweep passes the scale another seed or target needed; by default just below
    1, where a mechanism calibrated to its own headline, e.g. DP-SGD's, already lands).
    """
    from .engine.replay import replay_headline
    from .engine.setup import prepare

    if not (math.isfinite(target) and target > 0):
        raise FedcoreError(f"equal privacy: the target ε must be a finite number > 0, got {target}")
    eps = list(cfg.privacy.epsilons(cfg.num_clients))
    base = base if base is not None else prepare(cfg.replace(device="cpu"))
    label = cfg.method or cfg.privacy.mechanism

    def scaled(log_s: float):
        values = [min(EPSILON_RANGE[1], max(EPSILON_RANGE[0], e * math.exp(log_s))) for e in eps]
        return cfg.with_overrides({"privacy.epsilon": values if len(set(values)) > 1 else values[:1]})

    def headline(log_s: float) -> float:
        return replay_headline(scaled(log_s), base)

    lo_limit = math.log(EPSILON_RANGE[0] / min(eps))
    hi_limit = math.log(EPSILON_RANGE[1] / max(eps))
    aim = math.log((1 - tol / 2) * target)
    lo = hi = None                      # (log scale, log headline) below / above the target
    log_s = min(hi_limit, max(lo_limit, math.log(guess)))
    for _ in range(MAX_STEPS):
        h = headline(log_s)
        if (1 - tol) * target <= h <= target:
            return _matched(scaled(log_s), target, h, log_s, eps)
        if math.isinf(h) and lo is None and hi is None and math.isinf(headline(hi_limit / 2)):
            raise FedcoreError(f"equal privacy: {label} has no finite headline ε (nothing is noised), "
                               "so it cannot be matched to a target")
        if h > target:
            hi = (log_s, math.log(h) if h > 0 and math.isfinite(h) else math.inf)
        else:
            lo = (log_s, math.log(h) if h > 0 else -math.inf)
        log_s = _next_guess(lo, hi, aim, lo_limit, hi_limit)
        if log_s is None:
            break
    if lo is not None and lo[0] >= hi_limit - 1e-9 and lo[1] == -math.inf:
        # headline 0 at the largest budget: no round released anything, so no budget is "solved"
        return Matched(cfg, target, 0.0, None, 1.0, reached=False, released=False)
    if lo is not None and lo[0] >= hi_limit - 1e-9:
        # the largest budget it accepts still spends less (e.g. DP-SGD's smallest noise
        # multiplier): it cannot spend more, so it runs at its most and says so in its headline
        return _matched(scaled(lo[0]), target, math.exp(lo[1]), lo[0], eps, reached=False)
    if lo is not None:
        raise FedcoreError(f"equal privacy: {label} cannot spend ε = {target:g} within {tol:.0%} "
                           f"(closest from below {math.exp(lo[1]):.4g}; budgets within {EPSILON_RANGE})")
    raise FedcoreError(f"equal privacy: {label} spends more than ε = {target:g} even at the smallest budget "
                       f"it accepts ({EPSILON_RANGE[0]:g}); raise the target or privacy.delta")


def _next_guess(lo, hi, aim: float, lo_limit: float, hi_limit: float):
    """Next log scale: the secant through the bracket in log-log space (headlines grow
    roughly as a power of the budget), bisection when the secant leaves the bracket,
    steps of x10 until the target is bracketed; None when nothing is left to try."""
    step = math.log(10.0)
    if lo is None:
        return None if hi[0] <= lo_limit else max(lo_limit, hi[0] - step)
    if hi is None:
        return None if lo[0] >= hi_limit else min(hi_limit, lo[0] + step)
    if hi[0] - lo[0] < 1e-9:
        return None
    mid = (lo[0] + hi[0]) / 2
    if math.isfinite(lo[1]) and math.isfinite(hi[1]) and hi[1] > lo[1]:
        guess = lo[0] + (aim - lo[1]) * (hi[0] - lo[0]) / (hi[1] - lo[1])
        margin = 0.01 * (hi[0] - lo[0])
        if lo[0] + margin < guess < hi[0] - margin:
            return guess
    return mid


def _matched(cfg, target: float, headline: float, log_s: float, eps: list, reached: bool = True) -> Matched:
    scale = math.exp(log_s)
    return Matched(cfg, target, headline, max(cfg.privacy.epsilon), scale, reached)
