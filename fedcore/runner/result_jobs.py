"""Jobs that work out one JSON result about a config in a spawned, niced worker: audits
(:mod:`.audits`) and membership attacks (:mod:`.membership`), each a :class:`ResultJob`.

The result lands atomically beside the run store (``<store>/<folder>/<config hash>-<count>.json``),
where every session (and a restart) finds it; the job's record (``<kind>:<config hash>-<count>``)
says whether it is queued, running or how it ended, so a restart keeps a queued one. Asking again for
one that is queued, running or done costs nothing. A visitor sees one line when it fails, the host's
log the traceback.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..config import RunConfig


@dataclass(frozen=True)
class ResultJob:
    """One kind of result job: its ``kind`` (its job ids' prefix), the ``folder`` of its results, the
    record's field that sizes it (``count``: ``trials``, ``shadows``), the launcher its records name
    (``entry``), ``compute(config, count) -> dict``, and ``what`` (its name in a failure's line: "the
    audit") and the ``logger`` of that failure's traceback."""

    kind: str
    folder: str
    count: str
    entry: str
    compute: Callable[[RunConfig, int], dict]
    what: str
    logger: str

    def path(self, store_dir, cfg: RunConfig, count: int) -> Path:
        """``<store>/<folder>/<config hash>-<count>.json`` (the folder made private on first use)."""
        where = Path(store_dir) / self.folder
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        return where / f"{cfg.config_hash()}-{int(count)}.json"

    def id(self, cfg: RunConfig, count: int) -> str:
        """The job id of ``cfg``'s job (for ``Jobs.status`` / ``stop``)."""
        return f"{self.kind}:{cfg.config_hash()}-{int(count)}"

    def result(self, store_dir, cfg: RunConfig, count: int) -> Optional[dict]:
        """The stored result (or ``{"error": one line}``), None if none yet (or unreadable)."""
        try:
            return json.loads(self.path(store_dir, cfg, count).read_text())
        except (OSError, ValueError):
            return None

    def asked(self, manager, cfg: RunConfig, count: int) -> bool:
        """Whether ``cfg``'s result is stored or ``manager`` knows its job (queued, running or ended)."""
        return self.result(manager.store_dir, cfg, count) is not None or manager.job(self.id(cfg, count)) is not None

    def start(self, manager, cfg: RunConfig, count: int, owner: Optional[str], label: str, seconds: float) -> str:
        """Queue ``cfg``'s job as ``owner``'s unless its result is stored, or it is queued or running;
        returns its job id. Raises :class:`~fedcore.runner.limits.LimitError` naming the limit."""
        from .jobs import Job

        job_id = self.id(cfg, count)
        if not self.path(manager.store_dir, cfg, count).is_file():
            manager.submit(Job(job_id, self.kind, self.entry, owner, label=label, seconds=seconds,
                               fields={"config": cfg.to_dict(), self.count: int(count), "done": 0, "total": 1}), cfg)
        return job_id

    def launch(self, store, record: dict):
        """The manager's launcher (the records' ``entry``): :meth:`main` in a spawned process; it cannot
        stop early."""
        from .launchers import ProcessLauncher, spawn

        return ProcessLauncher(spawn(self.main, str(store.directory), record["id"],
                                     name=f"fedcore-{record['id'].replace(':', '-')}"))

    def main(self, store_dir: str, job_id: str) -> None:
        """Worker: ``compute`` for job ``job_id`` at low priority, write its result (or ``{"error": one
        line}``) atomically and record how the job ended."""
        from ..errors import FedcoreError
        from ..files import write_atomic
        from .store import FAILED, FINISHED, JobStore
        from .worker import lower_priority

        lower_priority(10, 1)
        store = JobStore(store_dir)
        record = store.get_job_dict(job_id)
        cfg = RunConfig.from_dict(record["config"])
        try:
            out = self.compute(cfg, record[self.count])
        except FedcoreError as exc:
            out = {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001  (a visitor sees one line; the host's log the rest)
            import logging

            logging.getLogger(self.logger).exception("%s failed", self.what)
            out = {"error": f"{self.what} failed ({type(exc).__name__})"}
        write_atomic(self.path(store_dir, cfg, record[self.count]), json.dumps(out, allow_nan=False))
        store.update_job(job_id, status=FAILED if "error" in out else FINISHED, error=out.get("error"), done=1,
                         finished=time.time())
        store.close()
