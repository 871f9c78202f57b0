"""Membership inference on a finished run's recipe, in the background, for the Playground.

The experiment is :func:`fedcore.attacks.membership.attacks` (LiRA and RMIA over the same
``shadows`` + 1 runs of the recipe, trained in lockstep): seconds on ``attack_membership``, more on
larger recipes, so it never runs in the Streamlit script thread. :func:`start_membership` submits it
to the one :class:`~fedcore.runner.Jobs` (same queue, host limits, owners and Stop as runs and
audits) as a :class:`~.result_jobs.ResultJob` of kind ``membership``, whose result lies in
``<store>/membership/``::

    {"membership": Membership.to_dict() (LiRA), "rmia": Membership.to_dict(), "shadows": int}
    | {"error": "one line"}

Each ``Membership`` carries its ``roc``, ``cap_curve`` (the edge of the region the runs' ε allows),
TPR at 0.1 % and 1 % FPR and their caps: what the Playground's ROC figure draws.
"""
from __future__ import annotations

from typing import Optional

from ..config import RunConfig
from .result_jobs import ResultJob

PLAYGROUND_SHADOWS = 16
"""Shadow runs of a Playground membership attack (the Frontier's ``--attack`` default); the
``attack_membership`` preset, made for it, gets :data:`PRESET_SHADOWS`."""
PRESET_SHADOWS = {"attack_membership": 64}
SECONDS_PER_RUN = 0.02
"""Queue estimate: seconds per shadow run per round (lockstep, small models: attack_membership's 65 runs x 10
rounds take 5-15 s here; a rough figure)."""


def shadows_for(preset: Optional[str]) -> int:
    """Shadow runs for a Playground run started from ``preset``."""
    return PRESET_SHADOWS.get(preset or "", PLAYGROUND_SHADOWS)


def _attack(cfg: RunConfig, shadows: int) -> dict:
    from ..attacks.membership import attacks

    scored = attacks(cfg, shadows)
    return {"membership": scored["lira"].to_dict(), "rmia": scored["rmia"].to_dict(), "shadows": shadows}


MEMBERSHIP = ResultJob("membership", "membership", "shadows", "fedcore.runner.membership:launch", _attack,
                       "the membership attack", "fedcore.attacks")
launch = MEMBERSHIP.launch   # the entry its records name


def start_membership(manager, cfg: RunConfig, shadows: int, owner: Optional[str] = None) -> str:
    """Queue the membership attack on ``cfg``'s recipe as ``owner``'s job unless it is stored, queued
    or running; returns its job id (:meth:`.ResultJob.start`)."""
    from ..attacks.membership import check_shadows

    check_shadows(shadows)
    return MEMBERSHIP.start(manager, cfg, shadows, owner, f"membership attack, {shadows} shadow runs",
                            (shadows + 1) * cfg.rounds * SECONDS_PER_RUN)
