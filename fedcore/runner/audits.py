"""Privacy audits of runs, in the background, for the dashboard.

An audit (:func:`fedcore.audit.run.audit_run`) trains or samples the mechanism again, from a
few seconds to minutes, so it never runs in the Streamlit script thread: :func:`start_audit`
submits it to the one :class:`~fedcore.runner.Jobs` (same queue, host limits, owners
and Stop as runs) as a spawned, niced process that stores the result as JSON beside the run
store (``<store>/audits/<config hash>-<trials>.json``), where every session (and a restart)
finds it. Asking again for one that is queued, running or done costs nothing.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..config import RunConfig

DEFAULT_TRIALS = 5000
"""Draws per input of a distinguishing audit from the dashboard (the CLI defaults to 20000)."""


def audit_path(store_dir, cfg: RunConfig, trials: int) -> Path:
    folder = Path(store_dir) / "audits"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{cfg.config_hash()}-{int(trials)}.json"


def audit_id(cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> str:
    """The job id of auditing ``cfg`` with ``trials`` draws (for ``Jobs.job`` / ``stop``)."""
    return f"audit:{cfg.config_hash()}-{int(trials)}"


def audit_result(store_dir, cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> Optional[dict]:
    """The stored audit (``AuditResult.to_dict()``, or ``{"error": ...}``), None if none yet."""
    try:
        return json.loads(audit_path(store_dir, cfg, trials).read_text())
    except (OSError, ValueError):
        return None


def start_audit(manager, cfg: RunConfig, trials: int = DEFAULT_TRIALS, owner: Optional[str] = None) -> str:
    """Queue auditing ``cfg`` as ``owner``'s job unless that audit is stored, queued or running;
    returns its job id. Raises :class:`~fedcore.runner.limits.LimitError` naming the limit."""
    from .jobs import Job, spawn

    path, job_id = audit_path(manager.store_dir, cfg, trials), audit_id(cfg, trials)
    if not path.is_file():
        manager.submit(Job(job_id, "audit", owner, lambda: spawn(audit_to_file, cfg.to_dict(), int(trials), str(path),
                                                                  name=f"fedcore-{job_id}"),
                           seconds=cfg.rounds * 2.0), cfg)
    return job_id


def audit_to_file(config: dict, trials: int, path: str) -> None:
    """Worker: audit ``config`` and write the result (or a one-line error) atomically."""
    from ..audit.run import audit_run
    from ..sweep.rows import write_atomic
    from .worker import lower_priority

    lower_priority(10, 1)
    from ..errors import FedcoreError

    try:
        out = audit_run(RunConfig.from_dict(config), trials=trials).to_dict()
    except FedcoreError as exc:
        out = {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001  (a visitor sees one line; the host's log the rest)
        import logging

        logging.getLogger("fedcore.audit").exception("audit failed")
        out = {"error": f"the audit failed ({type(exc).__name__})"}
    write_atomic(path, json.dumps(out, allow_nan=False))
