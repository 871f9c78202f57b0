"""Jobs that work out one JSON result about a config in a spawned, niced worker: audits
(:mod:`.audits`) and membership attacks (:mod:`.membership`).

The result lands atomically beside the run store, where every session (and a restart) finds
it; the job's record says how it ended. A visitor sees one line when it fails, the host's log
the traceback.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional

from ..config import RunConfig


def result_path(store_dir, folder: str, cfg: RunConfig, count: int) -> Path:
    """``<store>/<folder>/<config hash>-<count>.json`` (the folder made private on first use)."""
    where = Path(store_dir) / folder
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    return where / f"{cfg.config_hash()}-{int(count)}.json"


def read_result(path: Path) -> Optional[dict]:
    """The stored result, None if none yet (or unreadable)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def launch(main: Callable[[str, str], None], store, record: dict):
    """A launcher running ``main(store_dir, job_id)`` in a spawned process; it cannot stop early."""
    from .launchers import ProcessLauncher, spawn

    return ProcessLauncher(spawn(main, str(store.directory), record["id"],
                                 name=f"fedcore-{record['id'].replace(':', '-')}"))


def compute_and_store(store_dir: str, job_id: str, compute: Callable[[RunConfig, dict], dict],
                      path_of: Callable[[RunConfig, dict], Path], what: str, logger: str) -> None:
    """Worker body: ``compute(config, record)`` for job ``job_id`` at low priority, write its result
    (or ``{"error": one line}``) to ``path_of(config, record)`` atomically, and record how the job
    ended. ``what`` names the job in that line ("the audit")."""
    from ..errors import FedcoreError
    from ..files import write_atomic
    from .store import FAILED, FINISHED, JobStore
    from .worker import lower_priority

    lower_priority(10, 1)
    store = JobStore(store_dir)
    record = store.get_job_dict(job_id)
    cfg = RunConfig.from_dict(record["config"])
    try:
        out = compute(cfg, record)
    except FedcoreError as exc:
        out = {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001  (a visitor sees one line; the host's log the rest)
        import logging

        logging.getLogger(logger).exception("%s failed", what)
        out = {"error": f"{what} failed ({type(exc).__name__})"}
    write_atomic(path_of(cfg, record), json.dumps(out, allow_nan=False))
    store.update_job(job_id, status=FAILED if "error" in out else FINISHED, error=out.get("error"), done=1,
                     finished=time.time())
    store.close()
