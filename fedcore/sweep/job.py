"""A sweep as a job of the one job manager, for the dashboard's Frontier view.

The dashboard never trains in its script thread: :func:`start_sweep` submits the sweep to
:class:`fedcore.runner.Jobs` (same queue, host limits, owners and Stop as runs; the
host limit ``max_sweep_runs`` bounds its size) as one process (niced) that runs
:func:`fedcore.sweep.runner.run_sweep` in small lockstep batches and rewrites
``<store>/sweeps/<key>.json`` (the ``frontier.json`` format) after every batch, plus a
status file naming its owner. With ``ray=`` the job runs the sweep on a Ray cluster
instead (:mod:`fedcore.distributed.jobs`), into the same files. The page polls
:func:`sweep_status` and :func:`sweep_rows`.

``key`` is a hash of the :class:`~fedcore.sweep.spec.SweepSpec` (and of the audit's draws when
each point is audited, :mod:`fedcore.sweep.audit`): the same spec (a shared link) finds the
finished frontier at once instead of training again.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

from ..errors import FedcoreError
from .rows import dumps_frontier, write_atomic
from .spec import SweepSpec

DASHBOARD_BATCH = 24
"""Runs per lockstep batch in the dashboard: the CLI's (:data:`fedcore.sweep.runner.MAX_BATCH`),
so the page trains as fast as ``python -m fedcore sweep``; rows still appear group by group (a
method's references first, then its private points)."""
NICE = 5
ACTIVE = ("queued", "starting", "running")
SECONDS_PER_RUN = 2.0
"""The queue's guess of one sweep run's cost (an estimate, for the ETA of what waits behind)."""


def spec_key(spec: SweepSpec, audit: int = 0) -> str:
    """Stable 16-hex-digit key of a sweep spec, audited with ``audit`` draws per input (0 = not
    audited: the key of the spec alone)."""
    canon = json.dumps({**asdict(spec), **({"audit": int(audit)} if audit else {})}, sort_keys=True, default=list)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def spec_to_dict(spec: SweepSpec) -> dict:
    d = asdict(spec)
    d["seeds"] = list(spec.seeds) if isinstance(spec.seeds, tuple) else spec.seeds
    return d


def sweep_main(folder: str, key: str, spec: dict, max_batch: int = DASHBOARD_BATCH, audit: int = 0,
               owner: Optional[str] = None) -> None:
    """Worker process: train ``spec`` (each point audited with ``audit`` draws per input, 0 = no
    audit), rewriting ``<key>.json`` and ``<key>.status.json`` after every row."""
    from ..runner.worker import lower_priority
    from .runner import run_groups

    lower_priority(NICE)
    base = Path(folder)
    stop_path = base / f"{key}.stop"
    rows: list = []
    total = 0

    def status(state: str, **extra) -> None:
        write_status(base, key, state, done=len(rows), total=total, pid=os.getpid(), audit=audit,
                     owner=owner, **extra)

    try:
        spec_obj = SweepSpec(**{**spec, "seeds": spec["seeds"] if isinstance(spec["seeds"], int)
                                else tuple(spec["seeds"]), "sets": tuple(spec.get("sets", ()))})
        total = spec_obj.count()
        status("running")
        # group by group (a method's references, then its private points, calibrated when reached)
        for row in run_groups(spec_obj.groups(), max_batch=max_batch, should_stop=stop_path.exists, audit=audit):
            rows.append(row)
            write_atomic(base / f"{key}.json", dumps_frontier(rows))
            status("running")
        status("stopped" if len(rows) < total else "finished")
    except FedcoreError as exc:
        status("failed", error=str(exc))
    except Exception as exc:  # noqa: BLE001  (the page shows it; the worker must say why it ended)
        status("failed", error=f"{type(exc).__name__}: {exc}")


def write_status(folder: Path, key: str, state: str, **fields) -> None:
    """Rewrite the sweep's status file (``status`` one of :data:`ACTIVE` or
    ``finished | stopped | failed``, ``done``, ``total``, ``owner``, ...)."""
    write_atomic(Path(folder) / f"{key}.status.json", json.dumps({"status": state, "updated": time.time(), **fields}))


def sweep_folder(manager) -> Path:
    """Where a manager's sweeps keep their files: ``<store>/sweeps``."""
    folder = Path(manager.store_dir) / "sweeps"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def start_sweep(manager, spec: SweepSpec, *, owner: Optional[str] = None, audit: int = 0,
                ray: Optional[str] = None, max_batch: int = DASHBOARD_BATCH) -> str:
    """Queue ``spec`` as ``owner``'s job (each point audited with ``audit`` draws per input; on the
    Ray cluster at ``ray`` when given) and return its key (:func:`spec_key`); a sweep that
    finished, or is queued or training, returns at once. Raises
    :class:`~fedcore.runner.limits.LimitError` naming the host limit it exceeds."""
    from ..runner.jobs import Job, spawn
    from ..runner.limits import check_sweep
    from .audit import check_trials

    key = spec_key(spec, check_trials(audit))
    folder = sweep_folder(manager)
    if sweep_status(manager, key)["status"] in ("finished", *ACTIVE):
        return key
    total = spec.count()  # invalid specs failed in SweepSpec(); the points are built in the worker
    if manager.limits is not None:
        check_sweep(total, manager.limits)

    def ended(status: str, why: str) -> None:
        if sweep_status(manager, key)["status"] in ACTIVE:
            write_status(folder, key, status, done=len(sweep_rows(manager, key)), total=total, owner=owner,
                         error=f"the sweep's worker {why}" if status == "failed" else None)

    if ray:
        from ..distributed.jobs import ray_process

        launch = lambda: ray_process(spec, ray, folder / f"{key}.json",  # noqa: E731
                                     lambda state, **f: write_status(folder, key, state, owner=owner, **f))
        request_stop = None
    else:
        launch = lambda: spawn(sweep_main, str(folder), key, spec_to_dict(spec), max_batch, audit, owner,  # noqa: E731
                               name=f"fedcore-sweep-{key}")
        request_stop = (folder / f"{key}.stop").touch

    def queued() -> None:  # accepted: reset its files (a Ray sweep resumes from its rows)
        for suffix in (".stop",) if ray else (".json", ".stop"):
            (folder / f"{key}{suffix}").unlink(missing_ok=True)
        write_status(folder, key, "queued", done=0, total=total, audit=audit, owner=owner)

    manager.submit(Job(f"sweep:{key}", "ray sweep" if ray else "sweep", owner, launch, request_stop, ended,
                       queued, seconds=total * SECONDS_PER_RUN))
    return key


def sweep_status(manager, key: str) -> dict:
    """``{"status": none|queued|starting|running|finished|stopped|failed, "done", "total",
    "owner", "queue"}``; ``queue`` (while queued) is :meth:`Jobs.queue_info`. A sweep
    whose job this server does not know (it was restarted) reads ``failed``, or ``none``
    when it never started."""
    from ..runner.jobs import pid_alive

    try:
        state = json.loads((sweep_folder(manager) / f"{key}.status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"status": "none", "done": 0, "total": 0}
    known = manager.job(f"sweep:{key}") is not None
    if state.get("status") == "queued":
        queue = manager.queue_info(f"sweep:{key}")
        return {**state, "queue": queue} if known or queue else {"status": "none", "done": 0, "total": 0}
    if state.get("status") in ACTIVE and not known and not pid_alive(state.get("pid")) \
            and time.time() - float(state.get("updated", 0)) > 30:
        state = {**state, "status": "failed", "error": "its worker is gone (the server was restarted)"}
    return state


def sweep_rows(manager, key: str) -> list[dict]:
    """The rows finished so far (empty before the first batch ends)."""
    try:
        return json.loads((sweep_folder(manager) / f"{key}.json").read_text(encoding="utf-8"))["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
