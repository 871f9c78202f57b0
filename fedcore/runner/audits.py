"""Privacy audits of runs, in the background, for the dashboard.

An audit (:func:`fedcore.audit.run.audit_run`) trains or samples the mechanism again, from a
few seconds to minutes, so it never runs in the Streamlit script thread: :func:`start_audit`
submits it to the one :class:`~fedcore.runner.Jobs` (same queue, host limits, owners
and Stop as runs) as a :class:`~.result_jobs.ResultJob` of kind ``audit``, whose result
(``AuditResult.to_dict()``, or ``{"error": ...}``) lies in ``<store>/audits/``.
"""
from __future__ import annotations

from typing import Optional

from ..config import RunConfig
from .result_jobs import ResultJob

DEFAULT_TRIALS = 5000
"""Draws per input of a distinguishing audit from the dashboard (the CLI defaults to 20000)."""


def _audit(cfg: RunConfig, trials: int) -> dict:
    from ..audit.run import audit_run

    return audit_run(cfg, trials=trials).to_dict()


AUDIT = ResultJob("audit", "audits", "trials", "fedcore.runner.audits:launch", _audit, "the audit", "fedcore.audit")
audit_path, audit_id, audit_result, launch = AUDIT.path, AUDIT.id, AUDIT.result, AUDIT.launch  # launch: the entry


def start_audit(manager, cfg: RunConfig, trials: int = DEFAULT_TRIALS, owner: Optional[str] = None) -> str:
    """Queue auditing ``cfg`` as ``owner``'s job unless that audit is stored, queued or running;
    returns its job id (:meth:`.ResultJob.start`)."""
    return AUDIT.start(manager, cfg, trials, owner, f"audit of {cfg.privacy.mechanism}", cfg.rounds * 2.0)
