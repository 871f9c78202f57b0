"""A sweep in a background process, for the dashboard's Frontier view.

The dashboard never trains in its script thread: :meth:`SweepJobs.start` spawns one
process (``multiprocessing`` "spawn", like :class:`fedcore.runner.JobManager`'s workers,
niced) that runs :func:`fedcore.sweep.runner.run_sweep` in small lockstep batches and
rewrites ``<folder>/<key>.json`` (the ``frontier.json`` format) after every batch, plus a
status file. The page polls :meth:`SweepJobs.read`. Sweeps are independent of the run
queue, so a frontier trains while other runs wait there, and at most one sweep trains per
server (:data:`MAX_RUNNING`), so a page cannot fill the machine with them.

``key`` is a hash of the :class:`~fedcore.sweep.spec.SweepSpec` (and of the audit's draws when
each point is audited, :mod:`fedcore.sweep.audit`): the same spec (a shared link) finds the
finished frontier at once instead of training again.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Union

from ..errors import FedcoreError
from .rows import dumps_frontier
from .spec import SweepSpec

MAX_RUNNING = 1
DASHBOARD_BATCH = 6
"""Runs per lockstep batch in the dashboard: rows appear every few seconds (two ε of one
method x three seeds) at a small cost in speed against the CLI's 24."""
NICE = 5


def spec_key(spec: SweepSpec, audit: int = 0) -> str:
    """Stable 16-hex-digit key of a sweep spec, audited with ``audit`` draws per input (0 = not
    audited: the key of the spec alone)."""
    canon = json.dumps({**asdict(spec), **({"audit": int(audit)} if audit else {})}, sort_keys=True, default=list)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def spec_to_dict(spec: SweepSpec) -> dict:
    d = asdict(spec)
    d["seeds"] = list(spec.seeds) if isinstance(spec.seeds, tuple) else spec.seeds
    return d


def sweep_main(folder: str, key: str, spec: dict, max_batch: int = DASHBOARD_BATCH, audit: int = 0) -> None:
    """Worker process: train ``spec`` (each point audited with ``audit`` draws per input, 0 = no
    audit), rewriting ``<key>.json`` and ``<key>.status.json`` after every row."""
    from ..runner.worker import lower_priority
    from .runner import run_sweep

    lower_priority(NICE)
    base = Path(folder)
    status_path = base / f"{key}.status.json"
    stop_path = base / f"{key}.stop"
    rows: list = []
    points = []

    def status(state: str, **extra) -> None:
        _write(status_path, json.dumps({"status": state, "done": len(rows), "total": len(points),
                                        "pid": os.getpid(), "updated": time.time(), "audit": audit, **extra}))

    try:
        spec_obj = SweepSpec(**{**spec, "seeds": spec["seeds"] if isinstance(spec["seeds"], int)
                                else tuple(spec["seeds"]), "sets": tuple(spec.get("sets", ()))})
        status("starting", phase="solving each method's budget for equal privacy" if spec_obj.match == "headline"
               else "building the runs")
        points = spec_obj.points()
        status("running")
        for row in run_sweep(points, max_batch=max_batch, should_stop=stop_path.exists, audit=audit):
            rows.append(row)
            _write(base / f"{key}.json", dumps_frontier(rows))
            status("running")
        status("stopped" if len(rows) < len(points) else "finished")
    except FedcoreError as exc:
        status("failed", error=str(exc))
    except Exception as exc:  # noqa: BLE001  (the page shows it; the worker must say why it ended)
        status("failed", error=f"{type(exc).__name__}: {exc}")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


class SweepJobs:
    """Start, watch and stop sweeps whose results live in ``folder``."""

    def __init__(self, folder: Union[str, Path]):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._mp = multiprocessing.get_context("spawn")
        self._procs: dict[str, multiprocessing.Process] = {}

    def start(self, spec: SweepSpec, *, max_batch: int = DASHBOARD_BATCH, audit: int = 0) -> str:
        """Train ``spec`` in the background (each point audited with ``audit`` draws per input;
        0 = no audit) and return its key (:func:`spec_key`); a spec that already finished, or
        is training, returns at once. Raises FedcoreError when another sweep is training
        (:data:`MAX_RUNNING`)."""
        from .audit import check_trials

        key = spec_key(spec, check_trials(audit))
        state = self.status(key)
        if state["status"] in ("finished", "running", "starting"):
            return key
        running = [k for k in self._procs if self.status(k)["status"] in ("running", "starting")]
        if len(running) >= MAX_RUNNING:
            raise FedcoreError("another frontier is training on this server; wait for it or stop it first")
        total = spec.count()  # invalid specs failed in SweepSpec(); the points are built in the worker
        for suffix in (".json", ".stop"):
            (self.folder / f"{key}{suffix}").unlink(missing_ok=True)
        _write(self.folder / f"{key}.status.json",
               json.dumps({"status": "starting", "done": 0, "total": total, "updated": time.time(),
                           "audit": audit}))
        from ..runner.jobs import spawn_without_main_module

        proc = self._mp.Process(target=sweep_main, args=(str(self.folder), key, spec_to_dict(spec), max_batch, audit),
                                name=f"fedcore-sweep-{key}", daemon=True)
        with spawn_without_main_module():
            proc.start()
        self._procs[key] = proc
        return key

    def stop(self, key: str) -> None:
        """Ask the sweep to stop before its next batch (rows so far are kept)."""
        (self.folder / f"{key}.stop").touch()

    def status(self, key: str) -> dict:
        """``{"status": none|starting|running|finished|stopped|failed, "done", "total", ...}``;
        a worker that died without saying so reads ``failed``."""
        from ..runner.jobs import pid_alive

        path = self.folder / f"{key}.status.json"
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"status": "none", "done": 0, "total": 0}
        proc = self._procs.get(key)
        if state.get("status") in ("starting", "running") and proc is not None and not proc.is_alive():
            proc.join(0)
            state = {**state, "status": "failed",
                     "error": f"the sweep's worker process ended with exit code {proc.exitcode}"}
        elif state.get("status") in ("starting", "running") and proc is None and not pid_alive(state.get("pid")) \
                and time.time() - float(state.get("updated", 0)) > 30:
            state = {**state, "status": "failed", "error": "its worker is gone (the server was restarted)"}
        return state

    def rows(self, key: str) -> list[dict]:
        """The rows finished so far (empty before the first batch ends)."""
        try:
            return json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))["rows"]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def close(self) -> None:
        for key, proc in self._procs.items():
            if proc.is_alive():
                self.stop(key)
                proc.join(10)
                if proc.is_alive():
                    proc.kill()

