"""Membership of a worst-case record in one upload: the game the cap is tight for.

LiRA (:mod:`.membership`) asks about real digits in a trained model, and real records sit far
inside the cap. This attacker plays the membership game of the cap itself (Kairouz, Oh &
Viswanath 2015; Nasr et al. 2021, "Adversary instantiation"): under a *local* threat model the
server receives one client's upload, computed from a record at one corner of the mechanism's
clip range ("in") or from its neighbour at the opposite corner ("out"): the distinguishing
audit's probe (:mod:`fedcore.audit.distinguish`). It draws ``trials`` uploads of each through
the registered mechanism and scores each by the probe's likelihood-ratio statistic (the
projection onto the two inputs' difference for Gaussian noise, signs and two-point draws).

The ROC is read and checked exactly as LiRA's (:func:`.membership.report`): TPR at 0.1 %, 1 %
and 10 % FPR, each TPR's lower and FPR's upper Clopper-Pearson bound against
``TPR <= e^ε FPR + δ`` at the run's headline ε and at each (ε, δ) of its privacy profile. A correct
mechanism lands under the cap (a Gaussian's curve comes closest at small FPR); one that adds less noise than its ledger counts
lands above it, and is flagged (``tests/test_attacks.py`` plants σ/3).

Scope: local threat models, the mechanisms the distinguishing audit can probe. Central and
record-level runs protect the aggregate or a record, not one upload; their worst case is the
canary audit's (``python -m fedcore audit --kind canary``).
"""
from __future__ import annotations

import math
import time
from typing import Optional

import numpy as np

from .membership import Membership, report

TRIALS = 20_000
"""Uploads per input: the 1 % FPR point then rests on 200 false positives."""
DIM = 256
"""Parameters of the audited upload (fewer than the model's when it is larger: the probe's
statistic reads one direction, so the upload's size changes nothing but the time)."""


def not_applicable(cfg) -> str:
    """Why the worst-case game is not played on ``cfg`` ('' when it is)."""
    from ..audit.distinguish import PROBES
    from ..audit.run import threat_model_of

    threat = threat_model_of(cfg)
    if threat != "local":
        return (f"the {threat} threat model protects the aggregate or a record, not one upload: "
                "its worst case is the canary audit's (python -m fedcore audit --kind canary)")
    if cfg.privacy.mechanism not in PROBES:
        return f"{cfg.privacy.mechanism} has no worst-case probe"
    return ""


def worst_case(cfg, epsilon: Optional[float], trials: int = TRIALS, seed: int = 0,
               profile: list = ()) -> Optional[Membership]:
    """The worst-case membership game on ``cfg``'s mechanism (module doc), checked against the cap
    at ``epsilon`` (the run's headline; None = ∞) and the run's other guarantees ``profile``
    (``RunFinished.epsilon_profile``); None where :func:`not_applicable` says why."""
    from ..audit.distinguish import PROBES, draw_scores
    from ..audit.run import one_report

    if not_applicable(cfg):
        return None
    t0 = time.perf_counter()
    ctx, who, cls, _, options = one_report(cfg)
    name = cfg.privacy.mechanism
    (out, inside), _, _, delta = draw_scores(cls, options, ctx, PROBES[name], name=name, client=who,
                                             trials=trials, seed=seed, dim=min(DIM, ctx.num_params))
    scores = np.concatenate([out, inside])
    truth = np.concatenate([np.zeros(len(out), dtype=bool), np.ones(len(inside), dtype=bool)])
    eps = math.inf if epsilon is None else float(epsilon)
    return report(scores, truth, eps, delta, shadows=0, accuracy=[], seconds=time.perf_counter() - t0,
                  profile=profile)
