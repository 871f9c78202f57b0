"""Train a sweep's points and turn each finished run into a frontier row.

``run_sweep(points, batched=True)`` yields one row per point as soon as that point's run
ends. Batched (the default): points whose runs can share one vmap (same data, model and
local training; :func:`fedcore.engine.lockstep.batch_key`) train together in lockstep,
``max_batch`` runs at a time, and their rows come out when the batch ends. Unbatched:
one ``iter_run`` after another (the reference, and the benchmark's baseline). With
``audit`` draws, each row is audited before it comes out (:mod:`.audit`).
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator, Optional

from .rows import make_row
from .spec import SweepPoint

MAX_BATCH = 24
"""Runs per lockstep batch: on CPU larger batches stop paying off (the vmap's activations
leave the caches), and a smaller batch lets the first rows appear sooner."""


def point_row(point: SweepPoint, final_accuracy: Optional[float], headline: Optional[float], threat: str,
              seconds: float, batched: bool = False, caveat: str = "", aggregated_rounds: Optional[int] = None,
              epsilon_pld: Optional[float] = None, accountant: str = "") -> dict:
    """The frontier row of ``point`` (``headline`` None or inf = ∞)."""
    threat = threat or ("none" if point.config.privacy.mechanism == "none" else "")
    return make_row(point.method, point.epsilon, point.seed, final_accuracy, headline, threat, seconds,
                    config_hash=point.config.config_hash(), rounds=point.config.rounds, batched=batched,
                    reference=point.reference, match=point.match, knob=point.knob, caveat=caveat,
                    aggregated_rounds=aggregated_rounds, epsilon_pld=epsilon_pld, accountant=accountant)


def row_of_run(point: SweepPoint, run, seconds: Optional[float] = None) -> Optional[dict]:
    """The frontier row of ``point`` from its run's :class:`~fedcore.events.RunState` (``seconds``
    default: the run's own elapsed time); None when the run did not finish."""
    if run.status != "finished":
        return None
    last = run.last_round
    return point_row(point, run.end.final_accuracy, last and last.epsilon_headline_run, run.threat_model,
                     run.end.elapsed if seconds is None else seconds, caveat=run.caveat,
                     aggregated_rounds=run.aggregated_rounds, epsilon_pld=run.end.epsilon_pld,
                     accountant=last.accountant if last else "")


def run_one(point: SweepPoint, should_stop: Callable[[], bool] = lambda: False) -> Optional[dict]:
    """Train ``point`` alone with :func:`fedcore.engine.iter_run`; None if it was stopped."""
    from ..engine import iter_run
    from ..events import summarize

    t0 = time.perf_counter()
    return row_of_run(point, summarize(iter_run(point.config, should_stop=should_stop)), time.perf_counter() - t0)


def run_sweep(points: Iterable[SweepPoint], *, batched: bool = True, max_batch: int = MAX_BATCH,
              should_stop: Callable[[], bool] = lambda: False, audit: int = 0, attack: int = 0) -> Iterator[dict]:
    """Yield one row per point as it finishes (see the module doc); stops early if asked.

    ``audit`` > 0: each row also gets an audited ε lower bound (``audit`` draws per input;
    :func:`fedcore.sweep.audit.audited`) before it is yielded. ``attack`` > 0: each row also gets
    what an attacker recovers (``attack`` shadow runs for membership; :mod:`.attack`).
    """
    points = list(points)
    rows = _trained(points, batched, max_batch, should_stop)
    if audit:
        from .audit import audited

        rows = audited(rows, points, audit, should_stop)
    if attack:
        from .attack import attack_columns
        from .rows import with_columns

        rows = with_columns(rows, points, lambda cfg: attack_columns(cfg, attack), should_stop)
    yield from rows


def run_groups(groups: Iterable[list[SweepPoint]], **kw) -> Iterator[dict]:
    """:func:`run_sweep` over each group of :meth:`SweepSpec.groups` in turn (a group's points are
    built, e.g. calibrated, only when the previous group has trained)."""
    for group in groups:
        yield from run_sweep(group, **kw)


def _trained(points: list[SweepPoint], batched: bool, max_batch: int,
             should_stop: Callable[[], bool]) -> Iterator[dict]:
    if not batched:
        for point in points:
            if should_stop():
                return
            row = run_one(point, should_stop)
            if row is None:
                return
            yield row
        return
    from ..engine.lockstep import lockstep_batches, run_lockstep

    for chunk in lockstep_batches(points, max_batch, lambda point: point.config):
        if should_stop():
            return
        t0 = time.perf_counter()
        results = run_lockstep([p.config for p in chunk], should_stop=should_stop)
        if results is None:
            return
        share = (time.perf_counter() - t0) / len(chunk)
        for point, res in zip(chunk, results):
            yield point_row(point, res.final_accuracy, res.headline, res.threat_model, share,
                            batched=len(chunk) > 1, caveat=res.caveat, aggregated_rounds=res.aggregated_rounds,
                            epsilon_pld=res.epsilon_pld, accountant=res.accountant)
