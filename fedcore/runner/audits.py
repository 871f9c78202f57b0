"""Privacy audits of runs, in the background, for the dashboard.

An audit (:func:`fedcore.audit.run.audit_run`) trains or samples the mechanism again, from a
few seconds to minutes, so it never runs in the Streamlit script thread: :class:`AuditJobs`
hands it to one spawned, niced process and stores the result as JSON beside the run store
(``<store>/audits/<config hash>-<trials>.json``), where every session (and a restart) finds
it. One audit runs at a time; asking again for one that is running or done costs nothing.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Optional

from ..config import RunConfig

DEFAULT_TRIALS = 5000
"""Draws per input of a distinguishing audit from the dashboard (the CLI defaults to 20000)."""


class AuditJobs:
    """Background audits keyed by config hash and number of trials."""

    def __init__(self, store_dir):
        self.folder = Path(store_dir) / "audits"
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._pool: Optional[ProcessPoolExecutor] = None
        self._futures: dict[str, Future] = {}

    def path(self, cfg: RunConfig, trials: int) -> Path:
        return self.folder / f"{cfg.config_hash()}-{int(trials)}.json"

    def result(self, cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> Optional[dict]:
        """The stored audit (``AuditResult.to_dict()``, or ``{"error": ...}``), None if none yet."""
        path = self.path(cfg, trials)
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def running(self, cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> bool:
        future = self._futures.get(self.path(cfg, trials).name)
        return future is not None and not future.done()

    def submit(self, cfg: RunConfig, trials: int = DEFAULT_TRIALS) -> None:
        """Start auditing ``cfg`` unless that audit is stored or already running."""
        path = self.path(cfg, trials)
        if path.is_file() or self.running(cfg, trials):
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
        from .jobs import spawn_without_main_module

        with spawn_without_main_module():  # the pool's worker must not re-run the page script first
            self._futures[path.name] = self._pool.submit(audit_to_file, cfg.to_dict(), int(trials), str(path))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def audit_to_file(config: dict, trials: int, path: str) -> None:
    """Worker: audit ``config`` and write the result (or a one-line error) atomically."""
    os.nice(10)
    import torch

    torch.set_num_threads(1)
    from ..audit.run import audit_run
    from ..errors import FedcoreError

    try:
        out = audit_run(RunConfig.from_dict(config), trials=trials).to_dict()
    except FedcoreError as exc:
        out = {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001  (a visitor sees one line; the host's log the rest)
        import logging

        logging.getLogger("fedcore.audit").exception("audit failed")
        out = {"error": f"the audit failed ({type(exc).__name__})"}
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(out, f, allow_nan=False)
    os.replace(tmp, path)
