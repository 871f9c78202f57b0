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

import json
import time
from pathlib import Path
from typing import Optional

from ..config import RunConfig

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
    folder = Path(store_dir) / "membership"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{cfg.config_hash()}-{int(shadows)}.json"


def membership_id(cfg: RunConfig, shadows: int) -> str:
    """The job id of attacking ``cfg``'s recipe with ``shadows`` shadow runs."""
    return f"membership:{cfg.config_hash()}-{int(shadows)}"


def membership_result(store_dir, cfg: RunConfig, shadows: int) -> Optional[dict]:
    """The stored result (module doc), None if none yet."""
    try:
        return json.loads(membership_path(store_dir, cfg, shadows).read_text())
    except (OSError, ValueError):
        return None


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
    from .launchers import ProcessLauncher, spawn

    return ProcessLauncher(spawn(membership_main, str(store.directory), record["id"],
                                 name=f"fedcore-{record['id'].replace(':', '-')}"))


def membership_main(store_dir: str, job_id: str) -> None:
    """Worker: attack the config of job ``job_id``, write the result (or a one-line error)
    atomically and record how the job ended."""
    from ..attacks.membership import attacks
    from ..errors import FedcoreError
    from ..files import write_atomic
    from .store import FAILED, FINISHED, RunStore
    from .worker import lower_priority

    lower_priority(10, 1)
    store = RunStore(store_dir)
    record = store.get_run(job_id)
    cfg = RunConfig.from_dict(record["config"])
    try:
        scored = attacks(cfg, record["shadows"])
        out = {"membership": scored["lira"].to_dict(), "rmia": scored["rmia"].to_dict(), "shadows": record["shadows"]}
    except FedcoreError as exc:
        out = {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001  (a visitor sees one line; the host's log the rest)
        import logging

        logging.getLogger("fedcore.attacks").exception("membership attack failed")
        out = {"error": f"the membership attack failed ({type(exc).__name__})"}
    write_atomic(membership_path(store_dir, cfg, record["shadows"]), json.dumps(out, allow_nan=False))
    store.update_run(job_id, status=FAILED if "error" in out else FINISHED, error=out.get("error"), done=1,
                     finished=time.time())
    store.close()
