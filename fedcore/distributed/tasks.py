"""What one Ray task trains, and how a sweep is cut into tasks.

A sweep goes out as one task per *batch*: points whose runs share an architecture
(:func:`fedcore.engine.lockstep.batch_key`: same data, model, local training, device and
mechanism), at most ``max_batch`` of them, exactly the batches
:func:`fedcore.sweep.runner.run_sweep` trains locally. Inside the task the batch trains
through the same lockstep vmap (runs x clients in one stacked dimension), so a point
gives on the cluster the accuracy it gives on this machine. With ``batched=False``
every point is its own task and trains alone with ``iter_run``; its full event stream
then comes back too, for the run store.

A task asks Ray for ``cpus`` CPUs (torch uses at most that many threads inside it, as the one
thread policy chooses, :mod:`fedcore.threads`) and for one
GPU when its runs train on CUDA (``device = cuda``, or ``auto`` on a cluster with GPUs):
one task per GPU. Ray sets ``CUDA_VISIBLE_DEVICES`` for the task, so ``auto`` resolves to
the GPU it was given, and to the CPU in a task that asked for none.

The task functions take and return plain data (config dicts, rows, event dicts), so any
node with the requirements installed can run them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..errors import FedcoreError


@dataclass(frozen=True)
class Job:
    """One Ray task to run: ``fn(*args)`` with its resources; ``runs`` names its runs
    (what a failure report lists)."""

    key: str
    runs: tuple[str, ...]
    args: tuple
    num_cpus: float = 1.0
    num_gpus: float = 0.0


def bound_threads(threads: int) -> None:
    """At most ``threads`` torch threads inside the task (what it asked Ray for); the one thread
    policy chooses within them when the task prepares its runs (:func:`fedcore.threads.limit`)."""
    from ..threads import limit

    limit(threads)


def wants_gpu(cfg, cluster_gpus: float) -> bool:
    """Whether a run of ``cfg`` needs a GPU on this cluster (``device`` cuda, or auto with GPUs)."""
    return cfg.device == "cuda" or (cfg.device == "auto" and cluster_gpus > 0)


def resources(cfg, *, cpus: float, cluster_gpus: float) -> tuple[float, float]:
    """``(num_cpus, num_gpus)`` a task training runs of ``cfg`` asks for."""
    if cfg.device == "cuda" and cluster_gpus <= 0:
        raise FedcoreError("device: cuda, but the Ray cluster has no GPU; use --set device=auto or cpu")
    return float(cpus), (1.0 if wants_gpu(cfg, cluster_gpus) else 0.0)


def sweep_batches(points: Sequence, *, batched: bool = True, max_batch: int = 24) -> list[list]:
    """The sweep's points cut into tasks: lockstep batches in ``run_sweep``'s order
    (groups of one :func:`~fedcore.engine.lockstep.batch_key`, ``max_batch`` points at a
    time), or one point per task when ``batched`` is False."""
    if not batched:
        return [[p] for p in points]
    from ..engine.lockstep import lockstep_batches

    return lockstep_batches(points, max_batch, lambda point: point.config)


def point_payload(point) -> dict:
    """A sweep point as plain data for a task: every field (a row's ``reference``, ``match`` and
    ``knob`` come from the point, so a field left out here makes Ray rows differ from local ones)."""
    import dataclasses

    out = {f.name: getattr(point, f.name) for f in dataclasses.fields(point)}
    return {**out, "config": point.config.to_dict()}


def point_from_payload(item: dict):
    """The :class:`~fedcore.sweep.spec.SweepPoint` of :func:`point_payload`'s data.

    >>> from fedcore.layering import build_config
    >>> from fedcore.sweep.spec import SweepPoint
    >>> p = SweepPoint("dp_fedavg", None, 0, build_config("demo", None, []), "clip_only", "headline", 3.5)
    >>> point_from_payload(point_payload(p)) == p
    True
    """
    from ..config import RunConfig
    from ..sweep.spec import SweepPoint

    return SweepPoint(**{**item, "config": RunConfig.from_dict(item["config"])})


def sweep_job(batch: Sequence, *, batched: bool, cpus: float, cluster_gpus: float) -> Job:
    """The :class:`Job` that trains ``batch`` (points of one batch key)."""
    num_cpus, num_gpus = resources(batch[0].config, cpus=cpus, cluster_gpus=cluster_gpus)
    items = [point_payload(p) for p in batch]
    key = ",".join(p.config.config_hash() for p in batch)
    return Job(key, tuple(p.label for p in batch), (items, batched, num_cpus), num_cpus, num_gpus)


def train_sweep_batch(items: list[dict], batched: bool, threads: float) -> list[dict]:
    """Task body: train one batch of sweep points; ``[{"row": frontier row, "events":
    [event dicts] | None}]`` in the batch's order. Batched: one lockstep vmap
    (:func:`fedcore.sweep.runner.run_sweep`), no per-round events. A single point trained
    alone also returns its whole event stream."""
    bound_threads(threads)
    from ..sweep.runner import run_sweep

    points = [point_from_payload(item) for item in items]
    if batched or len(points) != 1:
        rows = list(run_sweep(points, batched=batched, max_batch=max(1, len(points))))
        if len(rows) != len(points):
            raise RuntimeError(f"the batch stopped after {len(rows)} of {len(points)} runs")
        return [{"row": row, "events": None} for row in rows]
    return [train_alone(points[0])]


def train_alone(point) -> dict:
    """One point through ``iter_run``: its frontier row and every event as a dict."""
    import time

    from ..engine import iter_run
    from ..events import summarize, to_dict
    from ..sweep.runner import row_of_run

    t0 = time.perf_counter()
    run = summarize(iter_run(point.config))
    row = row_of_run(point, run, time.perf_counter() - t0)
    if row is None:
        raise RuntimeError(f"{point.label}: run {run.status}: {getattr(run.end, 'error', '')}")
    return {"row": row, "events": [to_dict(e) for e in run.events]}


def train_reproduction_run(config: dict, threads: float) -> dict:
    """Task body: one run of a paper reproduction (:func:`fedcore.reproduce.run.train`):
    ``{"rounds", "accuracy" (per round), "final", "seconds"}``."""
    bound_threads(threads)
    from ..config import RunConfig
    from ..reproduce.run import train

    return train(RunConfig.from_dict(config))


def failure_line(exc: BaseException, limit: int = 200) -> str:
    """One readable line for a task that failed: the original exception of a task error,
    Ray's own first line for a worker that died."""
    cause: Optional[BaseException] = getattr(exc, "cause", None)
    source = cause if isinstance(cause, BaseException) else exc
    lines = [ln.strip() for ln in str(source).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    name = type(source).__name__
    if isinstance(source, FedcoreError):
        return text[:limit]
    return f"{name}: {text}"[:limit] if text else name
