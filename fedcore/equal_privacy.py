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

Personalized budgets (clients set at different ε) are solved each on its own
(:func:`_match_each`): the clients of one set value share one scale, every distinct value gets
its own, so each client spends within ``[(1 - tol), 1] ×`` its own share of the target (its set ε
when the target is the largest set ε, as the Playground and ``attack`` ask). One scale for all
would fit the largest client and push the others past their own budgets (``attack_digits``:
10.18, 124.8, 1,083 and 10,023 spent against 10, 100, 1,000 and 10,000 set).

>>> from fedcore.layering import build_config
>>> cfg = build_config("demo", None, ["method=pldp_b"])
>>> matched = match_headline(cfg, 10.0)
>>> 9.9 <= matched.headline <= 10.0, matched.knob < 10.0
(True, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
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
    per_client: tuple = ()  # ({"client", "set", "spent"}, ...): each client's set ε and replayed headline
    each: bool = True      # False: personalized budgets that could not be solved each on its own (one scale)


def match_headline(cfg, target: float, tol: float = TOLERANCE, base=None, guess: float = 1 - TOLERANCE / 2) -> Matched:
    """``cfg`` with its budgets scaled so its headline ε is in ``[(1 - tol) target, target]``.

    ``base``: a prepared :class:`~fedcore.engine.setup.RunSetup` of ``cfg``'s data and model
    (saves loading and splitting the data again); built here when None. ``guess``: the scale
    tried first (a sweep passes the scale another seed or target needed; by default just below
    1, where a mechanism calibrated to its own headline, e.g. DP-SGD's, already lands).
    """
    from .engine.setup import prepare

    if not (math.isfinite(target) and target > 0):
        raise FedcoreError(f"equal privacy: the target ε must be a finite number > 0, got {target}")
    eps = list(cfg.privacy.epsilons(cfg.num_clients))
    base = base if base is not None else prepare(cfg.replace(device="cpu"))
    label = cfg.method or cfg.privacy.mechanism
    if len(set(eps)) > 1:
        try:
            return _match_each(cfg, target, tol, base, eps, label)
        except FedcoreError:   # coupled budgets (PLDP-FL's rule C picks clients by budget): one scale, said so
            one = _match_one(cfg, target, tol, base, eps, label, guess)
            from .engine.replay import replay_headlines

            heads = replay_headlines(one.config, base)
            return replace(one, per_client=_per_client(eps, heads, target), each=False)
    return _match_one(cfg, target, tol, base, eps, label, guess)


def _per_client(eps: list, heads, target: float) -> tuple:
    """``({"client", "set", "spent"}, ...)``: each client's share of ``target`` (its set ε when the
    target is the largest) and its replayed headline."""
    top = max(eps)
    return tuple({"client": i, "set": e * target / top, "spent": float(h)} for i, (e, h) in enumerate(zip(eps, heads)))


def _match_one(cfg, target: float, tol: float, base, eps: list, label: str, guess: float) -> Matched:
    """One scale for every client's budget, solved for the run's headline (the largest client's)."""
    from .engine.replay import replay_headline

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


def _match_each(cfg, target: float, tol: float, base, eps: list, label: str) -> Matched:
    """Personalized budgets: one scale per distinct set ε, solved together (module doc). Each round
    replays the run once and moves every group not yet in tolerance along its own bracket
    (:func:`_next_guess`); a mechanism that couples clients (one noise for the sum) converges as the
    groups settle, and all are checked on one final replay."""
    from .engine.replay import replay_headlines

    values = sorted(set(eps))
    member = [values.index(e) for e in eps]
    aims = [v * target / max(values) for v in values]          # each group's own share of the target
    log_s = [math.log(1 - tol / 2)] * len(values)
    brackets: list[list] = [[None, None] for _ in values]
    limits = [(math.log(EPSILON_RANGE[0] / v), math.log(EPSILON_RANGE[1] / v)) for v in values]

    def config(scales):
        return cfg.with_overrides({"privacy.epsilon": [min(EPSILON_RANGE[1], max(EPSILON_RANGE[0], e * math.exp(scales[m])))
                                                       for e, m in zip(eps, member)]})

    for _ in range(MAX_STEPS):
        trial = config(log_s)
        heads = replay_headlines(trial, base)
        spent = [max(float(h) for h, m in zip(heads, member) if m == g) for g in range(len(values))]
        if all((1 - tol) * a <= h <= a for h, a in zip(spent, aims)):
            return Matched(trial, target, max(spent), max(trial.privacy.epsilons(cfg.num_clients)),
                           math.exp(log_s[-1]), per_client=_per_client(eps, heads, target))
        if any(math.isinf(h) for h in spent):
            raise FedcoreError(f"equal privacy: {label} has no finite headline ε (nothing is noised), "
                               "so it cannot be matched to a target")
        for g, (h, a) in enumerate(zip(spent, aims)):
            if (1 - tol) * a <= h <= a:
                continue
            point = (log_s[g], math.log(h) if h > 0 else -math.inf)
            brackets[g][1 if h > a else 0] = point
            guess = _next_guess(*brackets[g], math.log((1 - tol / 2) * a), *limits[g])
            if guess is None:
                raise FedcoreError(f"equal privacy: {label} cannot spend ε = {a:g} for the clients set at "
                                   f"{values[g]:g} within {tol:.0%} (closest {h:.4g})")
            log_s[g] = guess
    raise FedcoreError(f"equal privacy: {label}'s personalized budgets did not settle in {MAX_STEPS} replays")
