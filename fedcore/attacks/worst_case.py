"""Membership of a worst-case record in one upload: the game the cap is tight for.

LiRA (:mod:`.membership`) asks about real digits in a trained model, and real records sit far
inside the cap. This attacker plays the membership game of the cap itself (Kairouz, Oh &
Viswanath 2015; Nasr et al. 2021, "Adversary instantiation"): under a *local* threat model the
server receives one client's upload, computed from a record at one corner of the mechanism's
clip range ("in") or from its neighbour at the opposite corner ("out"): the distinguishing
audit's probe (:mod:`fedcore.audit.distinguish`). It draws ``trials`` uploads of each through
the registered mechanism and scores each by the probe's likelihood-ratio statistic (the
projection onto the two inputs' difference for Gaussian noise, signs and two-point draws).

The game is one upload (:data:`GAME`): the attacker sees one round's release of one client, whose
input is one corner or the other (a replacement, which local ε covers), so the cap is what that
one upload proves, from the mechanism's own ledger record of it (:func:`upload_bound`): the exact
trade-off curve ``Φ(Φ⁻¹(FPR) + μ)`` of a Gaussian upload, else the smallest over the profile of
its pure releases. The whole run's ε is valid too, but loose by the number of rounds: checked
against it, a mechanism adding a third of its noise in every round of a 20-round run goes
unseen. The run's cap is shown beside (``run_cap_tpr_at_1pct_fpr``).

The ROC is read and checked as LiRA's (:func:`.membership.report`) at :data:`LEVELS`: each TPR's
lower and FPR's upper Clopper-Pearson bound against the cap. A correct mechanism lands under it
(on it, for a Gaussian, whose curve is exact); one that adds less noise than its ledger counts
lands above it and is flagged (``tests/test_attacks.py`` plants σ/3 and σ/2 at 20 rounds and
σ/1.25 at one round).

Scope: local threat models, the mechanisms the distinguishing audit can probe. Central and
record-level runs protect the aggregate or a record, not one upload; their worst case is the
canary audit's (``python -m fedcore audit --kind canary``).
"""
from __future__ import annotations

import math
import time
from typing import Optional

import numpy as np

from ..accounting.games import Bound, Game
from .membership import Membership, report

TRIALS = 20_000
"""Uploads per input: the 1 % FPR point then rests on 200 false positives."""
LEVELS = (0.001, 0.01, 0.1, 0.3, 0.5)
"""FPRs checked: the large ones see a Gaussian upload with a quarter too little noise (σ/1.25)."""
GAME = Game("user", "replace", "round", "conditioned")
"""One upload of one client, from one input or another."""
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


def upload_bound(upload, row: int, delta: float):
    """What one upload (row ``row`` of ``upload``) proves for :data:`GAME`: its ledger record, a Gaussian
    ``{(z, q): steps}`` and its pure releases ``{ε: count}`` (:func:`fedcore.accounting.games.bound`)."""
    from ..accounting.games import bound
    from ..audit.distinguish import upload_releases

    gaussian, pure = upload_releases(upload, row)
    return bound(GAME, gaussian, pure, "replace", delta)


def worst_case(cfg, epsilon: Optional[float], trials: int = TRIALS, seed: int = 0,
               profile: list = ()) -> Optional[Membership]:
    """The worst-case membership game on ``cfg``'s mechanism (module doc), checked against what one
    upload proves; ``epsilon`` (the run's headline, None = ∞) and ``profile`` (its other guarantees,
    ``RunFinished.epsilon_profile``) give the run's cap, shown beside. None where
    :func:`not_applicable` says why."""
    from ..audit.distinguish import PROBES, draw_scores
    from ..audit.run import one_report

    if not_applicable(cfg):
        return None
    t0 = time.perf_counter()
    ctx, who, cls, _, options = one_report(cfg)
    name = cfg.privacy.mechanism
    (out, inside), upload, _, delta = draw_scores(cls, options, ctx, PROBES[name], name=name, client=who,
                                                  trials=trials, seed=seed, dim=min(DIM, ctx.num_params))
    scores = np.concatenate([out, inside])
    truth = np.concatenate([np.zeros(len(out), dtype=bool), np.ones(len(inside), dtype=bool)])
    eps = math.inf if epsilon is None else float(epsilon)
    result = report(scores, truth, upload_bound(upload, 0, delta), shadows=0, accuracy=[],
                    seconds=time.perf_counter() - t0, headline=eps, levels=LEVELS, attack="worst-case record")
    result.run_cap_tpr_at_1pct_fpr = min(Bound(GAME, e, d, "run").tpr_cap(0.01) for e, d in [(eps, delta), *profile])
    return result
