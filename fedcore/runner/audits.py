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

import json
import time
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
    """The job id of auditing ``cfg`` with ``trials`` draws (for ``Jobs.status`` / ``stop``)."""
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
    from .jobs import Job

    job_id = audit_id(cfg, trials)
    if not audit_path(manager.store_dir, cfg, trials).is_file():
        manager.submit(Job(job_id, "audit", "fedcore.runner.audits:launch", owner,
                           label=f"audit of {cfg.privacy.mechanism}", seconds=cfg.rounds * 2.0,
                           fields={"config": cfg.to_dict(), "trials": int(trials), "done": 0, "total": 1}), cfg)
    return job_id


def launch(store, record: dict):
    """The manager's launcher of an audit (its record's ``entry``); an audit cannot stop early."""
    from .launchers import ProcessLauncher, spawn

    return ProcessLauncher(spawn(audit_main, str(store.directory), record["id"],
                                 name=f"fedcore-{record['id'].replace(':', '-')}"))


def audit_main(store_dir: str, job_id: str) -> None:
    """Worker: audit the config of job ``job_id``, write the result (or a one-line error)
    atomically and record how the job ended."""
    from ..audit.run import audit_run
    from ..errors import FedcoreError
    from ..files import write_atomic
    from .store import FAILED, FINISHED, RunStore
    from .worker import lower_priority

    lower_priority(10, 1)
    store = RunStore(store_dir)
    record = store.get_run(job_id)
    cfg = RunConfig.from_dict(record["config"])
    try:
        out = audit_run(cfg, trials=record["trials"]).to_dict()
    except FedcoreError as exc:
        out = {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001  (a visitor sees one line; the host's log the rest)
        import logging

        logging.getLogger("fedcore.audit").exception("audit failed")
        out = {"error": f"the audit failed ({type(exc).__name__})"}
    write_atomic(audit_path(store_dir, cfg, record["trials"]), json.dumps(out, allow_nan=False))
    store.update_run(job_id, status=FAILED if "error" in out else FINISHED, error=out.get("error"), done=1,
                     finished=time.time())
    store.close()
