"""Privacy in plain words, for a student's first minute (the Playground's student mode).

Three things a student needs, each with the exact term one click away:

- :data:`PLAIN_THREAT_TEXT`: who is trusted, in everyday words (the exact wording is
  :data:`fedcore.accounting.headline.THREAT_MODEL_TEXT`);
- :func:`people`: numbers as people write them (``13,000``, not ``1.3e+04``);
- :func:`epsilon_unit` / :func:`why_they_differ`: what the ε a student *sets* means for each
  mechanism (per weight per round, per round, the whole run) and why the ε the run *spends*
  (its headline ε, always for the whole run) differs from it.

>>> people(12987.3), people(195000), people(0.5), people(1.25), people(float("inf")), people(None)
('13,000', '195,000', '0.5', '1.25', '∞', '∞')
>>> epsilon_unit("two_point")
'per weight, per round'

- :func:`odds_sentence`: ε as odds (a user study of DP explanations, Nanayakkara et al., USENIX
  Security 2023, found them the clearest form). What (ε, δ)-DP proves of a balanced guess: an attacker
  who thought it 50/50 whether your data was used, guessing after seeing the result, is right at most
  ``(e^ε + δ) / (1 + e^ε)`` of the time (Kairouz, Oh & Viswanath 2015: TPR <= e^ε FPR + δ, at
  TPR + FPR = 1); with δ = 0, ``e^ε / (1 + e^ε)``.

>>> odds_sentence(1.0, 1e-5)
'an attacker who guessed 50/50 beforehand is right at most 73.1 % of the time after seeing this'
>>> people_percent(attacker_certainty(10.0)), odds_sentence(50.0, 1e-5)
('99.995 %', 'no limit that matters: an attacker who guessed 50/50 beforehand can be right all but always after seeing this')
>>> people(1.69e16)
'1.69 × 10¹⁶'
"""
from __future__ import annotations

import math
from typing import Optional

from .headline import NO_PRIVACY

PLAIN_THREAT_TEXT = {
    "local": "The server can't see your data even if it's curious: every update is blurred on your own "
             "device before it leaves.",
    "central": "You trust the server to add up the updates honestly; anyone who sees the trained model "
               "can't tell whether your data was in it.",
    "record": "Each single example in your data is hidden, but the server still learns about your "
              "data as a whole.",
    NO_PRIVACY: "No privacy: your updates leave your device exactly as they are.",
}


EMPTY_RUN_TEXT = ("No update was aggregated in any round (e.g. PLDP-FL rule C selected nobody): the model is "
                  "the untrained one and nothing was released, so its accuracy says nothing about the method "
                  "and its ε of 0 is not a privacy result.")
"""What a run with ``aggregated_rounds == 0`` says wherever it is shown (live view, CLI)."""


def plain_threat_text(kind: str) -> str:
    """Who is trusted, in everyday words."""
    return PLAIN_THREAT_TEXT.get(kind, f"unknown threat model {kind!r}")


# What the ε a student sets means for each mechanism: (unit, why the spent ε differs).
EPSILON_MEANING = {
    "two_point": ("per weight, per round",
                  "LDP-FL spends your ε on every single weight of the model in every round; the total "
                  "adds up all those releases, so it is far larger than the ε you set"),
    "ldp_sign": ("per round, from the paper's noise formula",
                 "the paper turns your ε into a noise level; the total counts every sign released in "
                 "every round"),
    "laplace": ("per round",
                "each round's update is private at your ε; the total adds up the rounds"),
    "gaussian": ("for the whole run, by the paper's formula",
                 "PLDP-FL sets its noise from your ε with its own formula; the rigorous total for "
                 "the clipped update is larger"),
    "hw_gaussian": ("per round (HW-DPFL's Theorem 1)",
                    "each round's noisy model is private at your ε; the total adds up the rounds"),
    "dp_sgd": ("for the whole run, per training example",
               "the noise is set so the run spends about your ε; the total counts every training step"),
    "uldp_gaussian": ("for the whole run, per user",
                      "the noise is set from your ε for the whole run, counting the server's random choice "
                      "of users; with the central reading's decaying clip, a user whose clip stays above the "
                      "round's typical one is charged more, and the total can pass your ε"),
    "none": ("not used", "nothing is noised, so the run spends ε = ∞ whatever you set"),
}


def epsilon_unit(mechanism: str) -> str:
    """What one unit of ``privacy.epsilon`` covers under ``mechanism``."""
    return EPSILON_MEANING.get(mechanism, ("as the mechanism defines it", ""))[0]


def why_they_differ(mechanism: str) -> str:
    """One sentence on why the ε spent over the run differs from the ε set."""
    return EPSILON_MEANING.get(mechanism, ("", "the run's total counts every release it made"))[1]


def people(x: Optional[float], digits: int = 3) -> str:
    """A number as people write it: ``13,000`` (3 significant digits, thousands separated),
    ``0.5``, ``∞`` for None / infinity; never scientific notation above 0.001."""
    if x is None:
        return "∞"
    v = float(x)
    if math.isinf(v):
        return "∞"
    if math.isnan(v):
        return "–"
    if v == 0:
        return "0"
    if abs(v) >= 1e7:              # not a 17-digit number
        from .headline import format_epsilon

        return format_epsilon(v, digits)
    magnitude = math.floor(math.log10(abs(v)))
    if abs(v) >= 1000:
        return f"{round(v, digits - 1 - magnitude):,.0f}"
    if abs(v) < 1e-3:
        return f"{v:.{digits - 1}e}"
    decimals = max(0, digits - 1 - magnitude)
    text = f"{round(v, decimals):.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def attacker_certainty(epsilon: Optional[float], delta: float = 0.0) -> float:
    """The most often a balanced guess (a 50/50 prior) is right after an (ε, δ)-DP result:
    ``(e^ε + δ) / (1 + e^ε)`` (module doc), at most 1. None or ∞: 1."""
    if epsilon is None or math.isinf(epsilon):
        return 1.0
    p = 1.0 / (1.0 + math.exp(-float(epsilon)))          # e^ε / (1 + e^ε), no overflow at any ε >= 0
    return min(1.0, p + float(delta) * (1.0 - p))         # + δ / (1 + e^ε)


CERTAIN_GAP = 1e-6
"""Closer to 1 than this, a certainty is said in words ("all but certain"), not in digits."""


def people_percent(p: float) -> str:
    """A probability below 1 with as many decimals as it takes not to read 100 %: ``73.1 %``,
    ``99.995 %``; ``more than 99.9999 %`` within :data:`CERTAIN_GAP` of 1."""
    gap = 100.0 * (1.0 - p)
    if gap < 100.0 * CERTAIN_GAP:
        return "more than 99.9999 %"
    decimals = max(1, -math.floor(math.log10(gap)))
    return f"{round(100.0 * p, decimals):.{decimals}f} %"


def run_delta(run=None, config: Optional[dict] = None) -> float:
    """The δ an odds sentence of a run's ε uses: the largest of its clients' (a larger δ only weakens the
    claim), from its start event (``run.start.delta``) or its configuration; the default 1e-5 otherwise.

    >>> run_delta(config={"privacy": {"delta": [1e-6, 1e-4]}})
    0.0001
    """
    deltas = list(getattr(getattr(run, "start", None), "delta", None) or [])
    if not deltas and config is not None:
        given = (config.get("privacy") or {}).get("delta")
        deltas = list(given) if isinstance(given, (list, tuple)) else [given] if given is not None else []
    return max(float(d) for d in deltas) if deltas else 1e-5


def odds_sentence(epsilon: Optional[float], delta: float = 0.0) -> str:
    """(ε, δ) as odds, for a student (:func:`attacker_certainty`); ``""`` for a NaN (nothing spent yet)."""
    if epsilon is not None and epsilon != epsilon:
        return ""
    if epsilon is None or math.isinf(epsilon):
        return "an attacker who guessed 50/50 beforehand can be right every time after seeing this: nothing limits it"
    if 1.0 - attacker_certainty(epsilon, delta) < CERTAIN_GAP:
        return ("no limit that matters: an attacker who guessed 50/50 beforehand can be right all but always "
                "after seeing this")
    return (f"an attacker who guessed 50/50 beforehand is right at most "
            f"{people_percent(attacker_certainty(epsilon, delta))} of the time after seeing this")
