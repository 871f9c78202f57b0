"""A sweep as a job of the one job manager, for the dashboard's Frontier view.

The dashboard never trains in its script thread: :func:`start_sweep` submits the sweep to
:class:`fedcore.runner.Jobs` (same queue, host limits, owners and Stop as runs; the
host limit ``max_sweep_runs`` bounds its size) as one process (niced) that runs
:func:`fedcore.sweep.runner.run_sweep` in small lockstep batches, rewrites
``<store>/sweeps/<key>.json`` (the ``frontier.json`` format) after every row and reports its
status and progress (``done`` of ``total`` runs) in its job record ``sweep:<key>`` in the run
store. With ``ray=`` the job runs the sweep on a Ray cluster instead
(:mod:`fedcore.distributed.jobs`), into the same file and record. The page polls
:func:`sweep_status` and :func:`sweep_rows`.

``key`` is a hash of the :class:`~fedcore.sweep.spec.SweepSpec` (and of the audit's draws when
each point is audited, :mod:`fedcore.sweep.audit`): the same spec (a shared link) finds the
finished frontier at once instead of training again.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..errors import FedcoreError
from ..files import write_atomic
from .rows import dumps_frontier
from .spec import SweepSpec

if TYPE_CHECKING:
    from ..runner.record import JobRecord

DASHBOARD_BATCH = 24
"""Runs per lockstep batch in the dashboard: the CLI's (:data:`fedcore.sweep.runner.MAX_BATCH`),
so the page trains as fast as ``python -m fedcore sweep``; rows still appear group by group (a
method's references first, then its private points)."""
NICE = 5
SECONDS_PER_RUN = 2.0
"""The queue's guess of one sweep run's cost (an estimate, for the ETA of what waits behind)."""


def spec_key(spec: SweepSpec, audit: int = 0, attack: int = 0) -> str:
    """Stable 16-hex-digit key of a sweep spec, audited with ``audit`` draws per input and attacked
    with ``attack`` shadow runs (0 = not: the key of the spec alone)."""
    extra = {**({"audit": int(audit)} if audit else {}), **({"attack": int(attack)} if attack else {})}
    canon = json.dumps({**asdict(spec), **extra}, sort_keys=True, default=list)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def sweep_id(key: str) -> str:
    """The job id of the sweep of ``key`` (for ``Jobs.status`` / ``stop``)."""
    return f"sweep:{key}"


def spec_to_dict(spec: SweepSpec) -> dict:
    d = asdict(spec)
    d["seeds"] = list(spec.seeds) if isinstance(spec.seeds, tuple) else spec.seeds
    return d


def spec_from_dict(d: dict) -> SweepSpec:
    """The spec :func:`spec_to_dict` wrote (JSON lists back to tuples)."""
    return SweepSpec(**{**d, "seeds": d["seeds"] if isinstance(d["seeds"], int) else tuple(d["seeds"]),
                        "sets": tuple(d.get("sets", ()))})


def sweep_fields(spec: SweepSpec, *, audit: int = 0, ray: Optional[str] = None,
                 max_batch: int = DASHBOARD_BATCH, attack: int = 0, threads: int = 0) -> dict:
    """What the job record of sweeping ``spec`` holds for its launcher and worker; ``threads``: the
    host's ``worker_threads`` (0: no ceiling), the most torch threads its worker may take."""
    return {"key": spec_key(spec, audit, attack), "spec": spec_to_dict(spec), "audit": audit, "attack": attack,
            "ray": ray, "threads": threads, "max_batch": max_batch, "done": 0, "total": spec.count()}


def rows_path(store_dir, key: str) -> Path:
    """Where the sweep of ``key`` writes its rows: ``<store>/sweeps/<key>.json``."""
    folder = Path(store_dir) / "sweeps"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.json"


def sweep_main(store_dir: str, job_id: str) -> None:
    """Worker process: train the sweep of job ``job_id`` (each point audited with its record's
    ``audit`` draws per input, 0 = no audit), rewriting its rows file and its record's progress
    after every row; it stops after the batch in progress when its stop flag is set. Its torch
    threads are the one policy's (:mod:`fedcore.threads`), within the record's ``threads`` ceiling
    (the host's ``worker_threads``), as a run worker's are."""
    from ..runner.store import FAILED, FINISHED, STOPPED, JobStore
    from ..runner.worker import lower_priority
    from .runner import run_sweep

    store = JobStore(store_dir)
    record = store.get_job_dict(job_id)
    lower_priority(NICE, record.get("threads") or 0)
    rows: list = []
    try:
        spec = spec_from_dict(record["spec"])
        store.update_job(job_id, total=spec.count(), done=0, phase="checking every point")
        points = checked_points(spec)  # a point that cannot run fails the sweep now, not minutes in
        store.update_job(job_id, phase=None)
        for row in run_sweep(points, max_batch=record["max_batch"], audit=record["audit"],
                             attack=record.get("attack", 0), should_stop=lambda: yield_or_stop(store, job_id)):
            rows.append(row)
            write_atomic(rows_path(store_dir, record["key"]), dumps_frontier(rows))
            store.update_job(job_id, done=len(rows))
        store.update_job(job_id, status=STOPPED if len(rows) < spec.count() else FINISHED, finished=time.time())
    except Exception as exc:  # noqa: BLE001  (the page shows it; the worker must say why it ended)
        store.update_job(job_id, status=FAILED, error=str(exc) if isinstance(exc, FedcoreError)
                         else f"{type(exc).__name__}: {exc}", finished=time.time())
    finally:
        store.close()


def checked_points(spec: SweepSpec) -> list:
    """Every point of ``spec``, checked (:func:`checked_groups`), in one list."""
    return [p for group in checked_groups(spec) for p in group]


def checked_groups(spec: SweepSpec) -> list[list]:
    """The groups of ``spec`` (:meth:`~fedcore.sweep.spec.SweepSpec.groups`: a method's points),
    calibrated, each point prepared once (data split, model, mechanism and aggregator built: no
    training) so that a point that cannot run raises before any trains: a
    :class:`~fedcore.errors.FedcoreError` naming the point, e.g. ``dp_fedavg ε=0.01 seed 0:
    privacy.epsilon: got 0.01; is too small to reach ...``. The page's sweep job and the CLI's
    ``sweep`` both check this way."""
    from ..engine.setup import prepare

    checked = []
    for group in spec.groups():  # a method's points, their budgets solved (equal privacy)
        for point in group:
            try:
                prepare(point.config.replace(device="cpu"))
            except FedcoreError as exc:
                raise FedcoreError(f"{point.label}: {exc}") from None
        checked.append(list(group))
    return checked


def yield_or_stop(store, job_id: str) -> bool:
    """Between two rounds of a batch (or two points): wait while the job manager paused the sweep
    for another visitor's job (fair share, :func:`fedcore.runner.tempo.between_rounds`), then
    whether it was asked to stop (by its owner, an admin, or the manager when its owner left)."""
    from ..runner.tempo import between_rounds

    between_rounds(store, job_id, lambda: store.stop_requested(job_id))
    return store.stop_requested(job_id)


def launch(store, record: dict):
    """The manager's launcher of a local sweep (its record's ``entry``): the rows start empty."""
    from functools import partial

    from ..runner.launchers import ProcessLauncher, spawn

    rows_path(store.directory, record["key"]).unlink(missing_ok=True)
    proc = spawn(sweep_main, str(store.directory), record["id"], name=f"fedcore-{record['id'].replace(':', '-')}")
    return ProcessLauncher(proc, partial(store.request_stop, record["id"]))


def start_sweep(manager, spec: SweepSpec, *, owner: Optional[str] = None, audit: int = 0,
                ray: Optional[str] = None, max_batch: int = DASHBOARD_BATCH, attack: int = 0) -> str:
    """Queue ``spec`` as ``owner``'s job (each point audited with ``audit`` draws per input and
    attacked with ``attack`` shadow runs, :mod:`fedcore.sweep.attack`; on the
    Ray cluster at ``ray`` when given) and return its key (:func:`spec_key`); a sweep that
    finished, or is queued or training, returns at once. Raises
    :class:`~fedcore.runner.limits.LimitError` naming the host limit it exceeds."""
    from ..runner.jobs import Job
    from ..runner.limits import check_sweep
    from ..runner.store import ACTIVE, FINISHED
    from .audit import check_trials

    if attack:
        from ..attacks.membership import check_shadows

        check_shadows(attack)
    fields = sweep_fields(spec, audit=check_trials(audit), ray=ray, max_batch=max_batch, attack=attack,
                          threads=(manager.limits.worker_threads or 0) if manager.limits is not None else 0)
    key, total = fields["key"], fields["total"]  # invalid specs failed in SweepSpec(); points are built later
    if sweep_status(manager, key).status in (FINISHED, *ACTIVE):
        return key
    if manager.limits is not None:
        check_sweep(total, manager.limits)
    entry = "fedcore.distributed.jobs:launch" if ray else "fedcore.sweep.job:launch"
    manager.submit(Job(sweep_id(key), "sweep", entry, owner, label=f"sweep of {total} runs",
                       seconds=total * SECONDS_PER_RUN, fields=fields, pausable=not ray))
    return key


def sweep_status(manager, key: str) -> JobRecord:
    """The sweep's job record (:meth:`~fedcore.runner.jobs.Jobs.job_record`)."""
    return manager.job_record(sweep_id(key))


def sweep_rows(manager, key: str) -> list[dict]:
    """The rows finished so far (empty before the first batch ends)."""
    try:
        return json.loads(rows_path(manager.store_dir, key).read_text(encoding="utf-8"))["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
