"""Threat models and the one headline epsilon per client and per run (METHODS section 8).

Threat model (who is trusted), declared by every mechanism (``Mechanism.threat_model``):

- ``"local"``: each upload is (eps, delta)-DP against the server itself; nothing is
  gained from the server's sampling of clients.
- ``"central"``: user-level DP for a trusted aggregator or secure aggregation that only
  reveals the sum; amplification by Poisson user sampling applies.
- ``"record"``: DP-SGD on a client's records: one training record is protected, not a
  client's whole dataset.
- ``"none"``: nothing is noised; no guarantee (eps = infinity).

Headline epsilon: for each client, the tightest *rigorous* (eps, delta_i)-DP bound the
ledger can prove for that threat model, and for the run, the largest over clients:

- Gaussian-based rounds (a ``GaussianRecord``): the exact accountant, dp-accounting's privacy loss
  distribution (PLD) of every recorded (Poisson-subsampled) Gaussian step, pessimistic, at the
  client's own delta_i (:mod:`fedcore.accounting.exact`); RDP (:mod:`fedcore.accounting.rdp`) only
  where the PLD is not composed (a run whose every user has its own noise history each round,
  ULDP-FED's central reading, or a PLD dp-accounting cannot build), and then the run says so
  (:data:`ACCOUNTANTS`, ``RoundEvent.accountant``);
- pure-eps rounds (two-point, Laplace, the sign mechanism's randomized-response bound):
  their PLD (:mod:`fedcore.accounting.pure`: k-fold randomized response, exact), or their sum
  where that is smaller;
- where a client has both views for every round (stochastic sign), the smaller;
- infinity where a client uploaded something with no rigorous bound (no noise, or a
  setting that breaks the bound, e.g. unclipped gradients) and for threat model "none";
- 0 for a client that has released nothing yet under a noised mechanism.

A paper's own figure is never the headline; the ledger's labelled claims (keys of
``RoundEvent.epsilon_accountant`` that start with ``"paper"``) are shown beside it.

Encoding in events (strict JSON, no ``Infinity`` token): a finite float stays a float,
infinity becomes ``None`` (JSON ``null``); :func:`encode_epsilon` / :func:`decode_epsilon`
convert, :func:`format_epsilon` prints (``"∞"``).

>>> headline_epsilons(np.array([0.9, 0.0]), np.array([False, False]), np.array([1.5, 0.0]),
...                   np.array([True, True]), np.array([False, True]), "local")
array([1.5, inf])
>>> [encode_epsilon(x) for x in (1.5, math.inf)], format_epsilon(None)
([1.5, None], '∞')
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np


THREAT_MODELS = ("local", "central", "record")
NO_PRIVACY = "none"

THREAT_MODEL_NAMES = {
    "local": "local DP",
    "central": "central DP (user-level)",
    "record": "record-level DP (DP-SGD)",
    NO_PRIVACY: "no privacy",
}
THREAT_MODEL_TEXT = {
    "local": "Local DP: every upload is private even against the server, which is not trusted. "
             "No amplification from the server's sampling of clients.",
    "central": "Central, user-level DP: the server (or secure aggregation) is trusted to reveal only the "
               "sum of the sampled users' updates; a whole user's data is protected against anyone who sees "
               "the model. Amplification by user sampling applies.",
    "record": "Record-level DP (DP-SGD): protects any single training example of a client, not the client's "
              "whole dataset; the server sees each client's noisy update.",
    NO_PRIVACY: "No privacy: updates are uploaded as they are, so ε = ∞.",
}


def threat_model_text(kind: str) -> str:
    """The threat model in plain words (for pickers, run headers, the Papers page)."""
    return THREAT_MODEL_TEXT.get(kind, f"unknown threat model {kind!r}")


def headline_epsilons(gaussian: np.ndarray, gaussian_valid: np.ndarray, pure: np.ndarray, pure_valid: np.ndarray,
                      exposed: np.ndarray, threat_model: str) -> np.ndarray:
    """Per-client headline epsilon ``[N]`` (``inf`` = no guarantee) from a ledger's figures.

    ``gaussian [N]``: each client's ε of its Gaussian releases at its δ (PLD, or RDP where the
    ledger says so); ``gaussian_valid [N]``: every noised release of the client is among them;
    ``pure [N]``: its pure releases composed; ``pure_valid [N]``: every release has a pure-eps
    bound (a client with both views of every release takes the smaller); ``exposed [N]``: the
    client released something with no bound at all.
    """
    n = len(gaussian)
    if threat_model == NO_PRIVACY:
        return np.full(n, math.inf)
    out = np.where(np.asarray(gaussian_valid, bool), np.asarray(gaussian, np.float64), math.inf)
    pv = np.asarray(pure_valid, bool)
    out[pv] = np.minimum(out[pv], np.asarray(pure, np.float64)[pv])
    out[np.asarray(exposed, bool)] = math.inf
    return out


ACCOUNTANTS = {
    "pld": "exact (PLD) accountant",
    "rdp": "RDP accountant (looser; the PLD is not composed for this run)",
    NO_PRIVACY: "no accountant: nothing is noised",
}
"""The accountant a run's headline comes from (``RoundEvent.accountant``), as it is said on screen."""


def run_headline(per_client: Sequence[float]) -> float:
    """The run's headline epsilon: the largest over clients (inf if any client has none)."""
    values = [math.inf if v is None else float(v) for v in per_client]
    return max(values) if values else math.inf


def encode_epsilon(x: Optional[float]) -> Optional[float]:
    """Strict-JSON form: finite float as is, infinity (or NaN, no bound) as None."""
    if x is None or not math.isfinite(float(x)):
        return None
    return float(x)


def decode_epsilon(x: Optional[float]) -> float:
    """Inverse of :func:`encode_epsilon`: None means infinity."""
    return math.inf if x is None else float(x)


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_epsilon(x: Optional[float], digits: int = 3) -> str:
    """``"∞"`` for None / inf, else the number with ``digits`` significant digits, written for
    people: thousands grouped below ten million, a power of ten beyond (and below 0.001).

    >>> [format_epsilon(v) for v in (None, 0.1, 7.504, 9950.4, 135_800, 1.65e20, 2.5e-5, 0)]
    ['∞', '0.1', '7.5', '9,950', '136,000', '1.65 × 10²⁰', '2.5 × 10⁻⁵', '0']
    """
    v = decode_epsilon(x)
    if math.isinf(v):
        return "∞"
    if v == 0 or 1e-3 <= abs(v) < 1e7:
        rounded = float(f"{v:.{digits}g}")
        return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{rounded:.{digits}g}"
    mantissa, exponent = f"{v:.{digits - 1}e}".split("e")
    return f"{float(mantissa):g} × 10" + str(int(exponent)).translate(SUPERSCRIPT)


def bound_words(caveat: str, headline: Optional[float] = 0.0) -> str:
    """How far a headline ε can be trusted, in one phrase: "rigorous bound" only when the run's
    ``caveat`` is empty (the bound holds for what ran, METHODS section 8), else "not proven for
    what ran: <caveat>"; "no guarantee" for ∞ (``headline`` None or inf).

    >>> bound_words(""), bound_words("assumes Poisson sampling")
    ('rigorous bound', 'not proven for what ran: assumes Poisson sampling')
    """
    if headline is None or math.isinf(float(headline)):
        return "no guarantee"
    return "rigorous bound" if not caveat else f"not proven for what ran: {caveat}"
