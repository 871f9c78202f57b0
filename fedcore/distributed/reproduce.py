"""``python -m fedcore reproduce PAPER --ray``: a paper's runs on Ray, the same report.

Every (table row, seed) run that :func:`fedcore.reproduce.run.reproduce` would train is
sent to the cluster first, one task per distinct config (a reproduction needs each run's
per-round accuracy curve, which the lockstep batches do not record, so these runs train
alone with ``iter_run``; they are the long ones, minutes to hours, so a task each costs
nothing measurable). As each run ends its result is appended to
``<out>/<paper>.runs.json`` (config hash -> result), so finished runs are never lost and
a rerun trains only the missing ones. Then ``reproduce`` itself runs with these results
as its memo and writes ``<out>/<paper>.json`` and ``.md`` exactly as locally.

A run that failed after its retry is named in the log; its table is recorded as
skipped with that line (the other tables are written as usual).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..errors import FedcoreError
from ..files import write_atomic
from .cluster import cluster_resources, connect
from .driver import Dispatcher
from .tasks import Job, resources, train_reproduction_run


@dataclass
class RayReproduction:
    record: dict
    failed: list = field(default_factory=list)
    trained: int = 0
    skipped: int = 0


class RayResults(Mapping):
    """``reproduce``'s memo: config hash -> result of a finished run; a run that failed on
    the cluster raises a :class:`FedcoreError` naming it (its table is marked skipped)."""

    def __init__(self, results: dict, failures: dict):
        self.results = results
        self.failures = failures

    def __getitem__(self, key):
        if key in self.failures:
            raise FedcoreError(self.failures[key])
        return self.results[key]

    def __contains__(self, key):
        return key in self.results or key in self.failures

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)

    def __setitem__(self, key, value):  # a run trained locally after all (not expected)
        self.results[key] = value


def planned_runs(paper_key: str, *, quick: bool, seeds: Optional[int], tables: Optional[list],
                 extra: Optional[dict]) -> dict:
    """``{config hash: (label, RunConfig)}`` of every run ``reproduce`` would train."""
    from ..reproduce.run import paper_named, row_configs

    paper = paper_named(paper_key)
    try:
        chosen = [paper.table(k) for k in tables] if tables else \
            [t for t in paper.tables if t.in_quick or not quick]
    except KeyError as exc:
        raise FedcoreError(f"--tables: {exc.args[0] if exc.args else exc}") from None
    n = seeds if seeds is not None else (paper.quick_seeds if quick else paper.seeds)
    if n < 1:
        raise FedcoreError(f"--seeds: got {n}; must be >= 1")
    runs = {}
    for table in chosen:
        try:
            configs = row_configs(table, quick=quick, extra=extra)
        except (FedcoreError, KeyError):
            continue  # reproduce records the table as skipped with its reason
        for key, cfg in configs.items():
            for seed in range(n):
                run = cfg.replace(seed=seed)
                runs.setdefault(run.config_hash(), (f"{table.key}/{key}/seed {seed}", run))
    return runs


def runs_file(out, paper_key: str) -> Path:
    return Path(out) / f"{paper_key}.runs.json"


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, results: dict) -> None:
    write_atomic(path, json.dumps(results))


def reproduce_on_ray(paper_key: str, *, address: Optional[str] = None, quick: bool = False,
                     seeds: Optional[int] = None, out="assets/reproduction", tables: Optional[list] = None,
                     extra: Optional[dict] = None, cpus: float = 1.0, num_cpus: Optional[int] = None,
                     task: Optional[Callable] = None, log: Callable[[str], None] = print) -> RayReproduction:
    """Train the paper's runs on Ray, then write its report (see the module doc)."""
    from ..reproduce.run import reproduce

    runs = planned_runs(paper_key, quick=quick, seeds=seeds, tables=tables, extra=extra)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = runs_file(out, paper_key)
    results = {h: r for h, r in _load(store).items() if h in runs}
    todo = {h: v for h, v in runs.items() if h not in results}
    connect(address, num_cpus=num_cpus)
    gpus = cluster_resources()["GPU"]
    jobs = []
    for h, (label, cfg) in todo.items():
        n_cpu, n_gpu = resources(cfg, cpus=cpus, cluster_gpus=gpus)
        jobs.append(Job(h, (label,), (cfg.to_dict(), n_cpu), n_cpu, n_gpu))
    log(f"ray: {len(jobs)} run(s) as {len(jobs)} task(s); {len(results)} already in {store}")
    failures = {}
    dispatcher = Dispatcher(task or train_reproduction_run, jobs)
    for outcome in dispatcher.outcomes():
        label = outcome.job.runs[0]
        if outcome.failed:
            failures[outcome.job.key] = f"run {label} failed on Ray after a retry: {outcome.error}"
            log(f"  FAILED {label}: {outcome.error}")
            continue
        results[outcome.job.key] = outcome.result
        _save(store, results)
        log(f"  {label}: accuracy {outcome.result['final']:.4f} ({outcome.result['seconds']:.1f}s)")
    record = reproduce(paper_key, quick=quick, seeds=seeds, out=out, tables=tables, extra=extra, log=log,
                       memo=RayResults(results, failures))
    failed = [{"runs": [runs[h][0]], "error": msg} for h, msg in failures.items()]
    return RayReproduction(record, failed, trained=len(jobs) - len(failures), skipped=len(runs) - len(jobs))
