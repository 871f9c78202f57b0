"""From attack outcomes to an epsilon lower bound with a stated confidence.

Two exact, finite-sample ways of turning a membership guess into "this mechanism is *not*
(eps, delta)-DP for any smaller eps, with confidence 1 - alpha":

**Threshold test on two worlds** (Kairouz, Oh & Viswanath 2015, the hypothesis-testing
view of DP; the Clopper-Pearson recipe of Jagielski, Ullman & Oprea 2020 and Nasr et al.
2021). An (eps, delta)-DP mechanism forces every test between neighbouring inputs to obey

    FPR + e^eps FNR >= 1 - delta   and   FNR + e^eps FPR >= 1 - delta,

so with upper confidence limits FPR^+ and FNR^+ (Clopper-Pearson, each at alpha/2, so
both hold together with probability >= 1 - alpha)

    eps >= max( ln((1 - delta - FNR^+) / FPR^+),  ln((1 - delta - FPR^+) / FNR^+) ).

The threshold is chosen on one half of the draws and the bound computed on the other
half (:func:`threshold_audit`), so choosing "the best threshold" does not spend the
confidence.

**One run, many canaries** (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1)
Training Run", NeurIPS 2023, Theorem 3.1 / Algorithm 2). Each of m canaries is inserted
independently with probability 1/2; the auditor guesses in / out for r of them and is
right v times. Under (eps, delta)-DP, P[v correct] is at most the upper tail of
Binomial(r, e^eps / (1 + e^eps)) plus a delta term (:func:`one_run_p_value`); the lower
bound is the largest eps whose p-value is below alpha (:func:`one_run_epsilon`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


def clopper_pearson_upper(successes, trials, alpha: float) -> np.ndarray:
    """One-sided upper confidence limit (level 1 - alpha) of a binomial proportion.

    The exact Clopper-Pearson limit ``Beta.ppf(1 - alpha, k + 1, n - k)`` (1 where k = n).

    >>> float(clopper_pearson_upper(0, 100, 0.05).round(4))
    0.0295
    """
    from scipy.special import betaincinv     # = scipy.stats.beta.ppf, without importing scipy.stats (slow)

    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = betaincinv(k + 1, np.maximum(n - k, 1e-300), 1 - alpha)
    return np.where(k >= n, 1.0, upper)


def epsilon_from_rates(fpr, fnr, delta: float) -> np.ndarray:
    """The largest eps that false-positive and false-negative rates rule out, at ``delta``.

    0 where the rates rule out nothing (e.g. ``FPR + FNR >= 1 - delta``).

    >>> round(float(epsilon_from_rates(0.25, 0.25, 0.0)), 4)   # ln 3
    1.0986
    """
    fpr, fnr = np.asarray(fpr, dtype=np.float64), np.asarray(fnr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1 - delta - fnr, 0) / fpr)
        b = np.log(np.maximum(1 - delta - fpr, 0) / fnr)
    out = np.fmax(a, b)
    return np.where(np.isnan(out), 0.0, np.maximum(out, 0.0))


@dataclass(frozen=True)
class ThresholdAudit:
    """The outcome of :func:`threshold_audit`.

    ``epsilon_lower``: eps ruled out with ``confidence``; ``epsilon_estimate``: the same
    formula with the rates' median (50 %) Clopper-Pearson limits, a central estimate that
    stays finite at zero counts (not a bound);
    ``fpr`` / ``fnr``: the evaluation rates; ``fpr_upper`` / ``fnr_upper``: their limits;
    ``threshold`` and ``direction`` (+1: guess "world 1" when the score is above it).
    """

    epsilon_lower: float
    epsilon_estimate: float
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    threshold: float
    direction: int
    draws: int
    confidence: float


def _rates_at(scores0: np.ndarray, scores1: np.ndarray, thresholds: np.ndarray, direction: int):
    """Counts of false positives (world 0 called 1) and false negatives at each threshold."""
    s0, s1 = np.sort(scores0 * direction), np.sort(scores1 * direction)
    t = thresholds * direction
    fp = len(s0) - np.searchsorted(s0, t, side="right")     # world 0 scored above t
    fn = np.searchsorted(s1, t, side="right")                # world 1 scored at or below t
    return fp, fn


def threshold_audit(scores0, scores1, delta: float, confidence: float = CONFIDENCE,
                    candidates: int = 20000) -> ThresholdAudit:
    """Best threshold test between ``scores0`` (world 0) and ``scores1`` (world 1).

    The first half of each array picks the threshold and direction that maximise the
    Clopper-Pearson bound on that half; the second half, unseen by the choice, gives the
    reported bound. Both halves are draws of the real mechanism, so the result is exact in
    the number of draws (no asymptotics).
    """
    s0, s1 = np.asarray(scores0, dtype=np.float64), np.asarray(scores1, dtype=np.float64)
    if min(len(s0), len(s1)) < 4:
        raise ValueError("need at least 4 draws per world")
    h0, h1 = len(s0) // 2, len(s1) // 2
    tune0, eval0, tune1, eval1 = s0[:h0], s0[h0:], s1[:h1], s1[h1:]
    alpha = 1 - confidence
    pool = np.unique(np.concatenate([tune0, tune1]))
    idx = np.unique(np.linspace(0, len(pool) - 1, candidates).astype(int))
    upper = pool[np.minimum(idx + 1, len(pool) - 1)]
    thresholds = np.concatenate([(pool[idx] + upper) / 2, [pool[0] - 1.0]])   # mid-gap: no tie with a draw
    best = (-1.0, 0.0, 1)
    for direction in (1, -1):
        fp, fn = _rates_at(tune0, tune1, thresholds, direction)
        eps = epsilon_from_rates(clopper_pearson_upper(fp, h0, alpha / 2),
                                 clopper_pearson_upper(fn, h1, alpha / 2), delta)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(thresholds[i]), direction)
    _, threshold, direction = best
    n0, n1 = len(eval0), len(eval1)
    fp, fn = (int(v[0]) for v in _rates_at(eval0, eval1, np.array([threshold]), direction))
    fpr_up = float(clopper_pearson_upper(fp, n0, alpha / 2))
    fnr_up = float(clopper_pearson_upper(fn, n1, alpha / 2))
    return ThresholdAudit(
        epsilon_lower=float(epsilon_from_rates(fpr_up, fnr_up, delta)),
        epsilon_estimate=float(epsilon_from_rates(clopper_pearson_upper(fp, n0, 0.5),
                                                  clopper_pearson_upper(fn, n1, 0.5), delta)),
        fpr=fp / n0, fnr=fn / n1, fpr_upper=fpr_up, fnr_upper=fnr_up,
        threshold=threshold, direction=direction, draws=len(s0) + len(s1), confidence=confidence)


def max_auditable_epsilon(draws_per_world: int, delta: float, confidence: float = CONFIDENCE) -> float:
    """The largest bound :func:`threshold_audit` can report: a perfect test on the
    evaluation half. Above it, more draws are needed to say anything.

    >>> round(max_auditable_epsilon(20000, 1e-5), 2)
    7.9
    """
    n = draws_per_world - draws_per_world // 2
    up = float(clopper_pearson_upper(0, n, (1 - confidence) / 2))
    return float(epsilon_from_rates(up, up, delta))


# --- one run, many canaries (Steinke, Nasr & Jagielski 2023) -----------------------------------

def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P-value of ``v`` correct guesses out of ``r`` (of ``m`` canaries) under (eps, delta)-DP.

    Steinke et al. 2023, Theorem 3.1 as their Algorithm 2 evaluates it: the Binomial(r, p)
    upper tail at v, p = e^eps / (1 + e^eps), plus ``2 m delta`` times the largest average
    of the Binomial mass just below v.
    """
    from scipy.special import betainc, gammaln

    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    p = 1.0 / (1.0 + math.exp(-epsilon))
    tail = float(betainc(v, r - v + 1, p)) if v > 0 else 1.0           # P[Binom(r, p) >= v]
    j = np.arange(v - 1, -1, -1, dtype=np.float64)                     # v - i, i = 1..v
    below = np.exp(gammaln(r + 1) - gammaln(j + 1) - gammaln(r - j + 1)
                   + j * math.log(p) + (r - j) * math.log1p(-p))      # P[Binom = v - i]
    alpha = float(np.max(np.cumsum(below) / np.arange(1, v + 1))) if v > 0 else 0.0
    return min(1.0, tail + 2 * m * delta * alpha)


def one_run_epsilon(m: int, r: int, v: int, delta: float, p_value: float) -> float:
    """Largest eps that ``v`` of ``r`` correct guesses rule out at significance ``p_value``."""
    if r == 0 or one_run_p_value(m, r, v, 0.0, delta) >= p_value:
        return 0.0
    lo, hi = 0.0, 1.0
    while one_run_p_value(m, r, v, hi, delta) < p_value and hi < 100:
        lo, hi = hi, hi * 2
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if one_run_p_value(m, r, v, mid, delta) < p_value else (lo, mid)
    return lo
