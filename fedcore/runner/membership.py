"""Membership inference on a finished run's recipe, in the background, for the Playground.

The experiment is :func:`fedcore.attacks.membership.attacks` (LiRA and RMIA over the same
``shadows`` + 1 runs of the recipe, trained in lockstep): seconds on ``attack_membership``, more on
larger recipes, so it never runs in the Streamlit script thread. :func:`start_membership` submits it
to the one :class:`~fedcore.runner.Jobs` (same queue, host limits, owners and Stop as runs and
audits; as :mod:`.audits` does) as a spawned, niced process that stores the result as JSON beside the
run store (``<store>/membership/<config hash>-<shadows>.json``)::

    {"membership": Membership.to_dict() (LiRA), "rmia": Membership.to_dict(), "shadows": int}
    | {"error": "one line"}

Each ``Membership`` carries its ``roc``, ``cap_curve`` (the edge of the region the runs' ε allows),
TPR at 0.1 % and 1 % FPR and their caps: what the Playground's ROC figure draws. Asking again for one
that is queued, running or done costs nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..config import RunConfig
from . import result_jobs
from .result_jobs import read_result, result_path

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


def membership_path(store_dir, cfg: RunConfig, shadows: int) -> Path:
    return result_path(store_dir, "membership", cfg, shadows)


def membership_id(cfg: RunConfig, shadows: int) -> str:
    """The job id of attacking ``cfg``'s recipe with ``shadows`` shadow runs."""
    return f"membership:{cfg.config_hash()}-{int(shadows)}"


def membership_result(store_dir, cfg: RunConfig, shadows: int) -> Optional[dict]:
    """The stored result (module doc), None if none yet."""
    return read_result(membership_path(store_dir, cfg, shadows))


def start_membership(manager, cfg: RunConfig, shadows: int, owner: Optional[str] = None) -> str:
    """Queue the membership attack on ``cfg``'s recipe as ``owner``'s job unless it is stored, queued
    or running; returns its job id. Raises :class:`~fedcore.runner.limits.LimitError` naming the limit."""
    from ..attacks.membership import check_shadows
    from .jobs import Job

    check_shadows(shadows)
    job_id = membership_id(cfg, shadows)
    if not membership_path(manager.store_dir, cfg, shadows).is_file():
        manager.submit(Job(job_id, "membership", "fedcore.runner.membership:launch", owner,
                           label=f"membership attack, {shadows} shadow runs",
                           seconds=(shadows + 1) * cfg.rounds * SECONDS_PER_RUN,
                           fields={"config": cfg.to_dict(), "shadows": int(shadows), "done": 0, "total": 1}), cfg)
    return job_id


def launch(store, record: dict):
    """The manager's launcher of a membership attack (its record's ``entry``); it cannot stop early."""
    return result_jobs.launch(membership_main, store, record)


def _attack(cfg: RunConfig, record: dict) -> dict:
    from ..attacks.membership import attacks

    scored = attacks(cfg, record["shadows"])
    return {"membership": scored["lira"].to_dict(), "rmia": scored["rmia"].to_dict(), "shadows": record["shadows"]}


def membership_main(store_dir: str, job_id: str) -> None:
    """Worker: attack the config of job ``job_id``, write the result (or a one-line error)
    atomically and record how the job ended."""
    result_jobs.compute_and_store(store_dir, job_id, _attack,
                                  lambda cfg, record: membership_path(store_dir, cfg, record["shadows"]),
                                  "the membership attack", "fedcore.attacks")
