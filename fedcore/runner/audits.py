"""Privacy audits of runs, in the background, for the dashboard.

An audit (:func:`fedcore.audit.run.audit_run`) trains or samples the mechanism again, from a
few seconds to minutes, so it never runs in the Streamlit script thread: :func:`start_audit`
submits it to the one :class:`~fedcore.runner.Jobs` (same queue, host limits, owners
and Stop as runs) as a spawned, niced process that stores the result as JSON beside the run
store (``<store>/audits/<config hash>-<trials>.json``), where every session (and a restart)
finds it. Its job record (``audit:<config hash>-<trials>``, kind ``audit``) says whether it is
queued, running or how it ended, so a restart keeps a queued audit. Asking again for one that
is queued, running or done costs nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..config import RunConfig
from . import result_jobs
from .result_jobs import read_result, result_path

DEFAULT_TRIALS = 5000
"""Draws per input of a distinguishing audit from the dashboard (the CLI defaults to 20000)."""


def audit_path(store_dir, cfg: RunConfig, trials: int) -> Path:
    return result_path(store_dir, "audits", cfg, trials)


def audit_id(cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> str:
    """The job id of auditing ``cfg`` with ``trials`` draws (for ``Jobs.status`` / ``stop``)."""
    return f"audit:{cfg.config_hash()}-{int(trials)}"


def audit_result(store_dir, cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> Optional[dict]:
    """The stored audit (``AuditResult.to_dict()``, or ``{"error": ...}``), None if none yet."""
    return read_result(audit_path(store_dir, cfg, trials))


def start_audit(manager, cfg: RunConfig, trials: int = DEFAULT_TRIALS, owner: Optional[str] = None) -> str:
    """Queue auditing ``cfg`` as ``owner``'s job unless that audit is stored, queued or running;
    returns its job id. Raises :class:`~fedcore.runner.limits.LimitError` naming the limit."""
    from .jobs import Job

    job_id = audit_id(cfg, trials)
    if not audit_path(manager.store_dir, cfg, trials).is_file():
        manager.submit(Job(job_id, "audit", "fedcore.runner.audits:launch", owner,
                           label=f"audit of {cfg.privacy.mechanism}", seconds=cfg.rounds * 2.0,
                           fields={"config": cfg.to_dict(), "trials": int(trials), "done": 0, "total": 1}), cfg)
    return job_id


def launch(store, record: dict):
    """The manager's launcher of an audit (its record's ``entry``); an audit cannot stop early."""
    return result_jobs.launch(audit_main, store, record)


def _audit(cfg: RunConfig, record: dict) -> dict:
    from ..audit.run import audit_run

    return audit_run(cfg, trials=record["trials"]).to_dict()


def audit_main(store_dir: str, job_id: str) -> None:
    """Worker: audit the config of job ``job_id``, write the result (or a one-line error)
    atomically and record how the job ended."""
    result_jobs.compute_and_store(store_dir, job_id, _audit,
                                  lambda cfg, record: audit_path(store_dir, cfg, record["trials"]),
                                  "the audit", "fedcore.audit")
