"""A paper's quick reproduction as a job of the one job manager, for the Papers page.

Modelled on a sweep (:mod:`fedcore.sweep.job`): the dashboard never trains in its script
thread. :func:`start_reproduction` checks the request here (the tables whose dataset this host
offers and holds run; the others are left out, named; a host limit any run exceeds, or an
estimate past ``max_run_seconds``, refuses it with a :class:`~fedcore.runner.limits.LimitError`
naming the limit) and submits it to :class:`fedcore.runner.Jobs` (same queue, owners, Stop and
``max_active_per_owner`` as runs and sweeps) as one niced process that runs
:func:`fedcore.reproduce.run.reproduce` with ``quick=True`` (lockstep batches, as the CLI). The
record goes to ``<store>/reproductions/<key>/<paper>.json`` (and ``.md``), written after every
row, never into ``assets/``: the shipped records stay as they are. The job record
``reproduce:<key>`` says its status and progress (``done`` of ``total`` runs); Stop ends it
after the lockstep batch in progress (the manager terminates it after its grace period, the
rows written so far kept); a table that cannot train here fails the job with the loader's
message when nothing else ran. The page polls :func:`reproduction_status` and
:func:`reproduction_record`.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..errors import FedcoreError

if TYPE_CHECKING:
    from ..runner.record import JobRecord

JOB_KIND = "reproduce"
WORKER_START_S = 3.0
"""Seconds before the first run trains: the worker process starts and imports torch and the
engine (1.4 s on this 2-core machine at load average 3.7, files cached; part of the wait)."""


class Stopped(Exception):
    """Raised inside :func:`~fedcore.reproduce.run.reproduce` (through its memo) when the job was
    asked to stop: what it wrote so far stays."""


@dataclass
class Plan:
    """What a quick reproduction of ``paper`` trains on this host: its tables (keys, in the
    paper's order), seeds, every run's config (seed set, each config once) and the tables
    left out with why (``{table key: reason}``: a dataset not offered or not here)."""

    paper: str
    tables: list[str]
    seeds: int
    rows: Optional[list[str]] = None
    configs: list = field(default_factory=list)
    left_out: dict = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Runs that train (a config two tables share trains once)."""
        return len(self.configs)

    def alone_seconds(self) -> Optional[float]:
        """Rough seconds alone on the CPU (:func:`fedcore.reproduce.estimate.batch_seconds`)."""
        from .estimate import batch_seconds

        return batch_seconds(self.configs)


def plan(paper_key: str, *, tables: Optional[list[str]] = None, rows: Optional[list[str]] = None,
         seeds: Optional[int] = None, limits=None) -> Plan:
    """The quick reproduction of ``paper_key`` (its quick tables, or ``tables``; ``rows``: only
    these rows; ``seeds``: the paper's quick seeds by default) as this host would train it.

    A table whose dataset ``limits`` do not offer, or that cannot load here (offline, no files),
    is left out with the reason; a run over any other host limit raises its
    :class:`~fedcore.runner.limits.LimitError`; no table left raises
    :class:`~fedcore.runner.limits.HostUnavailable` naming why each was left out. Invalid
    names raise :class:`~fedcore.errors.FedcoreError` (or ``KeyError`` for an unknown paper)."""
    import tempfile

    from ..data.root import public_message
    from ..runner.limits import HostLimits, HostUnavailable, LimitError, check_host, check_limits, offered_datasets
    from .run import check_request, row_configs

    with tempfile.TemporaryDirectory() as scratch:  # check_request checks a folder it could write
        paper, chosen, n = check_request(paper_key, quick=True, seeds=seeds, out=scratch, tables=tables, rows=rows)
    out = Plan(paper.key, [], n, rows)
    seen = {}
    for table in chosen:
        configs = list(row_configs(table, quick=True, rows=rows).values())
        if not configs:
            continue   # none of ``rows`` is in this table
        if not offered_datasets(limits or HostLimits(), [table.dataset]):
            offered = limits is None or limits.datasets is None or table.dataset in limits.datasets
            out.left_out[table.key] = f"needs {table.dataset}, " + (
                "whose files are not on this server" if offered else "which this server does not offer")
            continue
        for cfg in configs:
            try:
                check_host(cfg)
                if limits is not None:
                    check_limits(cfg, limits)
            except LimitError as exc:
                raise LimitError(exc.limit, f"{paper.key} / {table.key}: {str(exc).rsplit(' (host limit', 1)[0]}") \
                    from None
            except HostUnavailable as exc:
                raise HostUnavailable(f"{paper.key} / {table.key}: {public_message(exc)}") from None
        out.tables.append(table.key)
        for cfg in configs:
            for seed in range(n):
                run = cfg.replace(seed=seed)
                seen.setdefault(run.config_hash(), run)
    out.configs = list(seen.values())
    if not out.tables:
        why = "; ".join(f"{k}: {v}" for k, v in out.left_out.items()) or "it has no quick tables"
        raise HostUnavailable(f"{paper.title}: none of its quick tables can train on this server ({why})")
    return out


def reproduction_key(paper: str, tables: Optional[list[str]] = None, rows: Optional[list[str]] = None,
                     seeds: Optional[int] = None) -> str:
    """``paper`` for its quick reproduction as the page starts it; ``paper-<8 hex>`` for one
    restricted to ``tables`` / ``rows`` / ``seeds`` (each its own record and job)."""
    if not (tables or rows or seeds):
        return paper
    canon = json.dumps({"tables": tables, "rows": rows, "seeds": seeds}, sort_keys=True)
    return f"{paper}-{hashlib.sha256(canon.encode()).hexdigest()[:8]}"


def reproduction_id(key: str) -> str:
    """The job id of the reproduction of ``key`` (for ``Jobs.status`` / ``stop``)."""
    return f"{JOB_KIND}:{key}"


def record_dir(store_dir, key: str) -> Path:
    """Where the reproduction of ``key`` writes ``<paper>.json`` and ``.md``:
    ``<store>/reproductions/<key>/``."""
    return Path(store_dir) / "reproductions" / key


def reproduction_fields(p: Plan, key: str, *, estimate: Optional[float] = None, threads: int = 0) -> dict:
    """What the job record of reproducing ``p`` as ``key`` holds for its launcher, worker and page
    (``estimate_s``: the seconds expected when it was queued; ``threads``: the host's ``worker_threads``
    ceiling, 0 for none, as a sweep's record holds it)."""
    return {"key": key, "paper": p.paper, "tables": p.tables, "rows": p.rows, "seeds": p.seeds,
            "left_out": p.left_out, "estimate_s": estimate, "threads": threads, "done": 0, "total": p.total}


class Progress(dict):
    """:func:`~fedcore.reproduce.run.reproduce`'s memo (config hash -> result) in the job: it is
    asked before every run (alone, or of a lockstep batch) whether that run is known, so it is
    where the job waits while the manager paused it for another visitor's job and stops when
    asked (:func:`fedcore.sweep.job.yield_or_stop`, raising :class:`Stopped`); every result put
    in it is a run trained, counted into the record's ``done``."""

    def __init__(self, store, job_id: str):
        super().__init__()
        self.store, self.job_id = store, job_id

    def __contains__(self, key) -> bool:
        if dict.__contains__(self, key):
            return True   # trained already: reading it back costs nothing, stopping here would lose it
        from ..sweep.job import yield_or_stop

        if yield_or_stop(self.store, self.job_id):
            raise Stopped()
        return False

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.store.update_job(self.job_id, done=len(self))


def reproduction_main(store_dir: str, job_id: str) -> None:
    """Worker process: the quick reproduction of job ``job_id``, its record written to
    :func:`record_dir` after every row and its progress after every run; ``stopped`` when
    asked, ``failed`` with a readable error when nothing could train (e.g. its dataset failed
    to load) or on any error."""
    from ..runner.store import FAILED, FINISHED, STOPPED, JobStore
    from ..runner.worker import lower_priority
    from ..sweep.job import NICE
    from .run import paper_named, reproduce

    store = JobStore(store_dir)
    record = store.get_job_dict(job_id)
    lower_priority(NICE, record.get("threads") or 0)  # as a sweep's worker: the page's runs stay responsive
    try:
        paper = paper_named(record["paper"])   # the paper's defaults as None: its command reads as the CLI's
        tables = None if record["tables"] == [t.key for t in paper.tables if t.in_quick] else record["tables"]
        seeds = None if record["seeds"] == paper.quick_seeds else record["seeds"]
        done = reproduce(paper.key, quick=True, seeds=seeds, tables=tables, rows=record["rows"],
                         out=record_dir(store_dir, record["key"]), log=lambda line: None, memo=Progress(store, job_id))
        ran = [t for t in done["tables"] if t["status"] == "ran"]
        if ran:
            store.update_job(job_id, status=FINISHED, finished=time.time())
        else:
            store.update_job(job_id, status=FAILED, finished=time.time(),
                             error="; ".join(f"{t['title']}: {t['status']}" for t in done["tables"]))
    except Stopped:
        store.update_job(job_id, status=STOPPED, finished=time.time(), reason="stopped by the user")
    except Exception as exc:  # noqa: BLE001  (the page shows it; the worker must say why it ended)
        from ..data.root import public_message

        store.update_job(job_id, status=FAILED, error=public_message(exc) if isinstance(exc, FedcoreError)
                         else f"{type(exc).__name__}: {public_message(exc)}", finished=time.time())
    finally:
        store.close()


def launch(store, record: dict):
    """The manager's launcher of a reproduction (its record's ``entry``): it starts afresh (an
    earlier record of the same key is removed) in a niced process that stops when asked."""
    from functools import partial

    from ..runner.launchers import ProcessLauncher, spawn

    shutil.rmtree(record_dir(store.directory, record["key"]), ignore_errors=True)
    proc = spawn(reproduction_main, str(store.directory), record["id"],
                 name=f"fedcore-{record['id'].replace(':', '-')}")
    return ProcessLauncher(proc, partial(store.request_stop, record["id"]))


def reproduction_estimate(manager, key: str, p: Plan):
    """How long the reproduction ``p`` (as ``key``) takes if it starts now, a
    :class:`~fedcore.reproduce.estimate.LoadRange` (None when the rough model does not know a run):
    the last one of ``key`` this server finished, its seconds rescaled from the load it ran
    under (the median load average its runs recorded) to the load now; else the rough model
    (:meth:`Plan.alone_seconds`), with its wider spread. Both count the worker's start."""
    import statistics

    from .estimate import MEASURED_SPREAD, alone_seconds, host_load, load_range
    from ..runner.store import FINISHED

    loads, cores = host_load()
    last = reproduction_status(manager, key)
    record = reproduction_record(manager.store_dir, key, p.paper) if last.status == FINISHED else None
    if (record is not None and last.get("started") and last.get("finished")
            and [t["key"] for t in record["tables"]] == p.tables):   # the same work as now
        ran_under = [la for t in record["tables"] for r in t["rows"] for la in (r.get("load_average") or [])
                     if la is not None]
        took = last.get("finished") - last.get("started")
        alone = alone_seconds(took, statistics.median(ran_under), cores) if ran_under else took
        return load_range(alone, loads=loads, cores=cores, spread=MEASURED_SPREAD, measured=True)
    alone = p.alone_seconds()
    return None if alone is None else load_range(alone + WORKER_START_S, loads=loads, cores=cores)


def check_duration(paper: str, estimate, limits) -> None:
    """Raise :class:`~fedcore.runner.limits.LimitError` (``max_run_seconds``) when even the low end
    of ``estimate`` (:func:`reproduction_estimate`) is past the host's limit per job: the manager
    would stop it there, so it is refused before it starts."""
    from ..runner.limits import LimitError

    cap = limits.max_run_seconds if limits is not None else None
    if cap is not None and estimate is not None and estimate.low > cap:
        raise LimitError("max_run_seconds", f"the quick reproduction of {paper} would take {estimate.label()}; "
                         f"this server stops a job after {cap:g} s")


def start_reproduction(manager, paper: str, *, owner: Optional[str] = None, tables: Optional[list[str]] = None,
                       rows: Optional[list[str]] = None, seeds: Optional[int] = None) -> str:
    """Queue the quick reproduction of ``paper`` (:func:`plan`) as ``owner``'s job and return its
    key; one queued or training returns at once (a finished one trains again: a new record,
    dated). Raises :class:`~fedcore.runner.limits.LimitError` naming the host limit it exceeds
    (``max_run_seconds`` when even the low end of :func:`reproduction_estimate` under the
    current load is past it: the manager would stop it there) or
    :class:`~fedcore.runner.limits.HostUnavailable`."""
    from ..runner.jobs import Job
    from ..runner.store import ACTIVE

    key = reproduction_key(paper, tables, rows, seeds)
    if reproduction_status(manager, key).status in ACTIVE:
        return key
    p = plan(paper, tables=tables, rows=rows, seeds=seeds, limits=manager.limits)
    estimate = reproduction_estimate(manager, key, p)
    check_duration(paper, estimate, manager.limits)
    seconds = estimate and (estimate.low * estimate.high) ** 0.5   # the queue's guess: the range's middle
    ceiling = (manager.limits.worker_threads or 0) if manager.limits is not None else 0
    manager.submit(Job(reproduction_id(key), JOB_KIND, "fedcore.reproduce.job:launch", owner,
                       label=f"quick reproduction of {paper} ({p.total} runs)", seconds=seconds,
                       fields=reproduction_fields(p, key, estimate=seconds, threads=ceiling), pausable=True))
    return key


def reproduction_status(manager, key: str) -> JobRecord:
    """The reproduction's job record (:meth:`~fedcore.runner.jobs.Jobs.job_record`)."""
    return manager.job_record(reproduction_id(key))


def reproduction_record(store_dir, key: str, paper: str) -> Optional[dict]:
    """The record the reproduction of ``key`` wrote so far (None before its first row)."""
    from .results import load

    return load(paper, record_dir(store_dir, key))
