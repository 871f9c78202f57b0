"""Runs in the experiment trackers researchers already use: MLflow and TensorBoard.

``--track mlflow`` / ``--track tensorboard`` on ``run``, ``sweep`` and ``reproduce`` (and
:func:`fedcore.run`'s ``track=``). A run logs every round's accuracy, loss and ε spent (the run's
headline ``epsilon_headline`` and each client's ``epsilon_client_<i>``) at step = round, its config
as params (dotted names, as ``--set`` writes them), its threat model, caveat, config hash and
headline accountant as tags, and its event file (JSON lines) as the artifact ``events.jsonl``.
A sweep logs one run per row, a reproduction one run per table row (metrics: the row's mean, std
and headline ε), each with the output file as artifact. An ε of ∞ (nothing noised) is no metric:
the tag ``epsilon_headline`` then reads ``inf``.

- ``mlflow``: MLflow's own default store (``sqlite:///mlflow.db`` in the working folder since
  MLflow 3, which ``mlflow ui`` opens), or ``MLFLOW_TRACKING_URI`` where set, or ``mlflow=URI``;
  MLflow's ``Default`` experiment (a bare ``mlflow.search_runs()`` finds the run) unless
  ``MLFLOW_EXPERIMENT_NAME`` names one.
- ``tensorboard``: event files under ``runs/`` (``tensorboard=DIR`` for another folder), one
  sub-folder per run; ``tensorboard --logdir runs`` shows them.

The libraries are optional: ``pip install -r requirements-tracking.txt``; a missing one is a
one-line refusal before anything trains.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path
from typing import Iterable, Optional

from .errors import FedcoreError

KINDS = {"mlflow": "mlflow", "tensorboard": "tensorboard"}
"""Each tracker and the module it needs."""


def parse_track(specs: Iterable[str] | str | None) -> list[tuple[str, str]]:
    """``["mlflow", "tensorboard=logs"]`` -> ``[("mlflow", ""), ("tensorboard", "logs")]``, each
    tracker's library checked importable (a refusal names the requirements file).

    >>> parse_track(None)
    []
    >>> parse_track("wandb")
    Traceback (most recent call last):
    ...
    fedcore.errors.FedcoreError: --track wandb: must be mlflow or tensorboard (mlflow=URI, tensorboard=DIR)
    """
    import importlib.util

    out = []
    for spec in [specs] if isinstance(specs, str) else list(specs or ()):
        kind, _, where = str(spec).partition("=")
        if kind.strip() not in KINDS:
            raise FedcoreError(f"--track {spec}: must be mlflow or tensorboard (mlflow=URI, tensorboard=DIR)")
        if importlib.util.find_spec(KINDS[kind.strip()]) is None:
            raise FedcoreError(f"--track {spec}: {KINDS[kind.strip()]} is not installed; "
                               "pip install -r requirements-tracking.txt")
        out.append((kind.strip(), where.strip()))
    return out


def flat_params(config: dict) -> dict[str, str]:
    """The config as ``{dotted name: text}`` (options dicts as JSON), as ``--set`` writes them."""
    from .config import flatten

    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in flatten(config).items()}


def round_metrics(event) -> dict[str, float]:
    """A round event's accuracy, loss, run headline ε and each client's headline ε (finite ones)."""
    values = {"accuracy": event.accuracy, "loss": event.loss, "epsilon_headline": event.epsilon_headline_run}
    values.update({f"epsilon_client_{i}": e for i, e in enumerate(event.epsilon_headline)})
    return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


class MlflowSink:
    """One tracked item as an MLflow run (:class:`mlflow.MlflowClient`: no process-wide active run)."""

    def __init__(self, where: str = ""):
        from mlflow import MlflowClient

        self.client = MlflowClient(where or None)
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or "Default"   # where a bare mlflow.search_runs() looks
        found = self.client.get_experiment_by_name(name)
        self.experiment = found.experiment_id if found else self.client.create_experiment(name)

    def open(self, name: str, params: dict, tags: dict) -> None:
        from mlflow.entities import Param, RunTag

        self.run = self.client.create_run(self.experiment, run_name=name).info.run_id
        self.client.log_batch(self.run, params=[Param(k, str(v)[:6000]) for k, v in params.items()],
                              tags=[RunTag(k, str(v)[:5000]) for k, v in tags.items()])

    def metrics(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client.log_batch(self.run, metrics=[Metric(k, v, stamp, step) for k, v in values.items()])

    def close(self, status: str, tags: dict, artifacts: Iterable[Path]) -> None:
        for k, v in tags.items():
            self.client.set_tag(self.run, k, str(v))
        for path in artifacts:
            self.client.log_artifact(self.run, str(path))
        self.client.set_terminated(self.run, "FINISHED" if status == "finished" else "FAILED"
                                   if status == "failed" else "KILLED")


class TensorBoardSink:
    """One tracked item as a TensorBoard run folder: scalars, the config as text, the artifacts copied in."""

    def __init__(self, where: str = ""):
        self.root = Path(where or "runs")

    def open(self, name: str, params: dict, tags: dict) -> None:
        from torch.utils.tensorboard import SummaryWriter

        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        self.writer = SummaryWriter(log_dir=str(self.root / f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}"))
        self.params = params
        self.writer.add_text("config", "\n".join(f"    {k} = {v}" for k, v in params.items()))
        self.writer.add_text("tags", "\n".join(f"    {k} = {v}" for k, v in tags.items()))

    def metrics(self, values: dict[str, float], step: int) -> None:
        for k, v in values.items():
            self.writer.add_scalar(k, v, step)

    def close(self, status: str, tags: dict, artifacts: Iterable[Path]) -> None:
        self.writer.add_text("result", "\n".join(f"    {k} = {v}" for k, v in {"status": status, **tags}.items()))
        for path in artifacts:
            shutil.copy(path, Path(self.writer.log_dir) / Path(path).name)
        self.writer.close()


SINKS = {"mlflow": MlflowSink, "tensorboard": TensorBoardSink}


class RunTracker:
    """Feeds one run's events (:mod:`fedcore.events`) to the trackers of ``specs``
    (:func:`parse_track`): :meth:`event` for each, :meth:`close` with the event file at the end."""

    def __init__(self, specs: list[tuple[str, str]]):
        self.sinks = [SINKS[kind](where) for kind, where in specs]
        self.last = None

    def event(self, event) -> None:
        from .events import RoundEvent, RunStarted

        if isinstance(event, RunStarted):
            config = event.config
            name = f"{config.get('method') or config['privacy']['mechanism']} {event.config_hash}"
            tags = {"config_hash": event.config_hash, "threat_model": event.threat_model,
                    "caveat": event.caveat, "device": event.device, "fedcore.kind": "run"}
            for sink in self.sinks:
                sink.open(name, flat_params(config), tags)
        elif isinstance(event, RoundEvent):
            self.last = event
            for sink in self.sinks:
                sink.metrics(round_metrics(event), event.round)

    def close(self, end, accountant: str, events_file: Optional[Path]) -> None:
        headline = self.last.epsilon_headline_run if self.last else None
        final = {"final_accuracy": end.final_accuracy} if end.final_accuracy is not None else {}
        tags = {"status": end.status, "epsilon_headline": "inf" if headline is None else repr(headline),
                "epsilon_accountant": accountant}
        for sink in self.sinks:
            if final:
                sink.metrics(final, end.rounds_done)
            sink.close(end.status, tags, [events_file] if events_file else [])


def track_rows(specs: list[tuple[str, str]], rows: list[dict], artifact: Optional[Path], kind: str,
               params: dict) -> int:
    """Log ``rows`` (a sweep's frontier rows or a reproduction's table rows, flattened by the
    caller) one run each: ``params`` and each row's text fields as params, its numbers as metrics."""
    for row in rows:
        numbers = {k: float(v) for k, v in row.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
        texts = {k: v for k, v in row.items() if k not in numbers and not isinstance(v, (list, dict))}
        name = " ".join(str(row.get(k)) for k in ("method", "paper", "table", "row", "epsilon", "reference", "seed")
                        if row.get(k) not in (None, ""))
        for kind_, where in specs:
            sink = SINKS[kind_](where)
            sink.open(name or kind, {**params, **texts}, {"fedcore.kind": kind})
            sink.metrics(numbers, 0)
            sink.close("finished", {}, [artifact] if artifact else [])
    return len(rows)


def reproduction_rows(record: dict) -> list[dict]:
    """A reproduction record's table rows that ran as flat rows: paper, table, row, preset, mean, std,
    gain and the largest headline ε over its seeds (None: ∞ or not recorded)."""
    out = []
    for table in record.get("tables", []):
        for row in (r for r in table.get("rows", []) if r.get("mean") is not None):
            eps = [e for e in row.get("epsilon_headline") or [] if e is not None]
            out.append({"paper": record.get("paper"), "table": table.get("key"), "row": row.get("key"),
                        "preset": row.get("preset"), "mode": record.get("mode"), "mean": row.get("mean"),
                        "std": row.get("std"), "gain": row.get("gain"),
                        "epsilon_headline": max(eps) if eps else None})
    return out
