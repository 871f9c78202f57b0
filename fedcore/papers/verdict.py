"""The paired rule that decides every verdict of a paper's claim (issue 52), pure maths.

A claim compares rows of a table seed by seed: :func:`paired_rule` turns the per-seed paired
differences into a 95 % Student-t interval and a verdict against the claim's threshold
(Bouthillier et al. 2021, "Accounting for variance in machine learning benchmarks"; Henderson et
al. 2018; Colas et al. 2018). :data:`RULE_TEXT` states it in words for the report and the Papers
page; :meth:`fedcore.papers.spec.Claim.check` applies it.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

LEVEL = 0.95
"""Two-sided confidence of :func:`paired_rule`'s interval."""
MAX_SEEDS_TO_DECIDE = 1000
"""Beyond this many seeds :func:`seeds_to_decide` says "more than" (a gap this small is no finding)."""
RULE_TEXT = (
    "**The paired rule.** A claim \"X ≥ Y, within t points\" is judged on the paired differences "
    "d_s = X_s − Y_s of the seeds s both rows ran (the same seed: the same data split, sampling and "
    "initialisation): their mean and its 95 % Student-t interval, mean ± t(0.975, n − 1) · sd / √n "
    "(Bouthillier et al. 2021; Henderson et al. 2018; Colas et al. 2018). It **holds** when the whole "
    "interval lies above −t, **does not hold** when it lies wholly below −t, and is **inconclusive** "
    "otherwise (or with one seed: no spread), with the seeds that would decide it at the observed "
    "spread. A chain X ≥ Y ≥ Z is judged step by step (holds when every step holds, does not hold when "
    "one does not). \"Reaches the target in fewer rounds\" pairs each seed's first round at the target, "
    "read only at rounds where every seed of the claim's rows was evaluated (a seed that never reaches "
    "it counts as the last round + 1, a bound). **Equal privacy or no verdict**: a decided claim whose "
    "rows' headline ε (the largest over seeds) differ by more than 1 %, or were computed by different "
    "accountants, reads **unequal privacy** instead (claims that compare budgets by design, e.g. "
    "LDP-FL's ε sweep, are exempt and say so).")
"""The rule in words, as the report's header and the Papers page state it (:func:`paired_rule`)."""


def t_quantile(p: float, df: int) -> float:
    """Student t quantile (scipy.special.stdtrit: scipy comes with scikit-learn)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def seeds_to_decide(mean: float, sd: float, threshold: float, level: float = LEVEL) -> Optional[int]:
    """The fewest seeds n whose interval ``mean ± t · sd / √n`` would clear ``threshold`` at this
    mean and spread (None: never, the mean sits on the threshold, or more than ``MAX_SEEDS_TO_DECIDE``)."""
    gap = abs(mean - threshold)
    if gap == 0:
        return None
    for n in range(2, MAX_SEEDS_TO_DECIDE + 1):
        if t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n) < gap:
            return n
    return None


def paired_rule(diffs: Sequence[float], threshold: float = 0.0, level: float = LEVEL) -> dict:
    """The verdict of a claim "difference ≥ ``threshold``" from per-seed paired differences
    (the rule :data:`RULE_TEXT` states): ``{"verdict", "n", "mean", "low", "high", "seeds_needed"}``.

    The interval is ``mean ± t(0.975, n − 1) · sd / √n`` (sd: sample std, n − 1); "holds" when
    ``low > threshold``, "does not hold" when ``high < threshold``, else "inconclusive";
    ``seeds_needed`` (only when inconclusive): seeds that would decide it at this mean and sd.

    >>> r = paired_rule([0.031, 0.012, 0.020], threshold=-0.01)   # "≥, within 1 point": every seed clears it
    >>> r["verdict"], round(r["low"], 4), round(r["high"], 4)
    ('holds', -0.0027, 0.0447)
    >>> r = paired_rule([-0.180, 0.032, -0.121, -0.005, -0.204])   # PLDP-FL F-MNIST non-IID, C − A
    >>> r["verdict"], r["seeds_needed"]
    ('inconclusive', 8)
    """
    n = len(diffs)
    mean = sum(diffs) / n if n else None
    out = {"n": n, "mean": mean, "low": None, "high": None, "seeds_needed": None, "threshold": threshold}
    if n < 2:
        return {**out, "verdict": "inconclusive" if n else "not checked", "seeds_needed": 2 if n else None}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    verdict = "holds" if low > threshold else "does not hold" if high < threshold else "inconclusive"
    needed = seeds_to_decide(mean, sd, threshold, level) if verdict == "inconclusive" else None
    return {**out, "verdict": verdict, "low": low, "high": high, "seeds_needed": needed}


def common_rounds(curves: Sequence[Sequence[Optional[float]]]) -> list[int]:
    """Indices of the rounds at which every curve has a value (the grid every seed was evaluated on)."""
    return [i for i, values in enumerate(zip(*curves)) if all(v is not None for v in values)] if curves else []


def first_at(rounds: Sequence[int], curve: Sequence[Optional[float]], target: float,
             grid: Sequence[int]) -> Optional[int]:
    """First round of ``grid`` (indices) at which ``curve`` reaches ``target`` (None: never)."""
    return next((int(rounds[i]) for i in grid if curve[i] is not None and curve[i] >= target), None)
