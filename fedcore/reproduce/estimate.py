"""A rough duration of a run before it starts ("~2 min"), for the preset picker.

    seconds ~ rounds x (samples each round trains on) x (FLOPs of one sample's forward and
              backward pass) / the model's FLOP/s  +  overheads (steps, rounds, accounting,
              evaluations, loading the data)

The FLOPs per sample of every (model, dataset) pair come from ``torch.utils.flop_counter``
(:func:`count_train_flops`). ``python -m fedcore.reproduce.estimate`` counts them and the
estimate of every preset, and keeps both in ``train_flops.json`` beside this module, so that
the dashboard labels 165 presets without importing torch or building 165 configs at start-up
(tests recount some pairs and recompute every preset's estimate: a stale table fails them).
The constants are calibrated on the stored reproduction records: for every trained row,
tests/test_estimate_records.py checks the estimate within 2x of the seconds it took alone on
a 2-core CPU (its wall-clock scaled by its recorded load average, :func:`alone_seconds`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

CPU_FLOPS = 1.2e11
"""Training FLOP/s on batched (vmapped) local steps: LDP-FL's full MNIST table (10 rounds of 100
clients x 600 images through a 16 MFLOP CNN, evaluated every round) took about 95 s per run on
the idle 2-core CPU."""
MODEL_FLOPS = {"cnn_uldp": 1.2e10, "cnn_kdp": 2.2e10}
"""Training FLOP/s of models far below :data:`CPU_FLOPS` under the vmap over clients: cnn_uldp's
unpadded 5x5 convolutions with 10 and 20 channels (HW-DPFL's, KDP-FL's and ULDP-FED's tables,
corrected for the load they ran under); cnn_kdp, whose 32-to-64-channel 5x5 convolution is most
of its FLOPs (KDP-FL's full F-MNIST presets, 2 rounds on one thread: no privacy 22.5 s a round,
DP-SGD 30 s, of which about 11 s is the evaluation on 10,000 images)."""
STEP_S = 0.01
"""Seconds per local step of a round (the round's clients in one vmapped call): kernel and
Python overhead, which dominates small models."""
PER_SAMPLE_FACTOR = 1.3
"""Per-sample gradients (DP-SGD, HW-DPFL's per-step noise) cost this many times a batch gradient
(HW-DPFL's and KDP-FL's clip-only rows against their no-privacy rows, corrected for load)."""
ACCOUNT_S = 0.15
"""Seconds to compose one client's Poisson-subsampled Gaussian (dp-accounting's RDP at every
order), once per client that takes part (cached after): DP-SGD with noise, whose sample rate
B / n differs between clients."""
EVAL_SAMPLE_S = 1.0e-4
"""Seconds per test sample of an evaluation, besides its FLOPs (batching, metrics)."""
LOAD_S = 3.0
"""Loading a dataset from its files (MNIST's gzip'd arrays)."""
ROUND_OVERHEAD_S = 0.05
"""Seconds per round besides training: ledger, events (the demo's rounds)."""
MECHANISM_ROUND_S = {"uldp_gaussian": 1.2}
"""Seconds per round a mechanism costs besides training, where measured: ULDP-FED's user-level
Gaussian with its stored-update history, recall check and per-round accounting (its full-setting
DP-FedAvg row: 300 rounds in 840 s, of which training 6,000 images a round is about 1.3 s)."""
CORES = 2
"""Cores of the CPU the estimates are for: a run that shared them with a 1-minute load average L
got about CORES / L of them (:func:`alone_seconds`)."""
PER_SAMPLE = {"dp_sgd", "hw_gaussian"}
TABLE = Path(__file__).with_name("train_flops.json")


def count_train_flops(model: str, input_shape: tuple[int, ...], classes: int) -> int:
    """FLOPs of one sample's forward and backward pass through ``model`` (torch's counter)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ..models import build_model

    net = build_model(model, tuple(input_shape), classes)
    with FlopCounterMode(display=False) as counter:
        net(torch.zeros(1, *input_shape)).sum().backward()
    return int(counter.get_total_flops())


@lru_cache(maxsize=1)
def _table() -> dict:
    try:
        return json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def flops_table() -> dict[str, int]:
    """``{"model/dataset": FLOPs per sample}`` from :data:`TABLE` (empty when missing)."""
    return _table().get("flops", {})


def preset_seconds() -> dict[str, float]:
    """``{preset: rough seconds}`` from :data:`TABLE` (what :func:`rough_seconds` gives)."""
    return _table().get("presets", {})


def rough_seconds(cfg) -> Optional[float]:
    """Order-of-magnitude seconds of ``cfg`` on one core of a 2-core CPU; None when unknown.

    ``rounds x (samples trained x FLOPs x [per-sample factor] / rate + steps x STEP_S + overhead)
    + evaluations x test samples x (FLOPs / 3 / rate + EVAL_SAMPLE_S) + LOAD_S``, with the
    model's rate (:data:`MODEL_FLOPS`, else :data:`CPU_FLOPS`), plus DP-SGD's accounting of
    each client that takes part (:data:`ACCOUNT_S`).
    """
    parts = _parts(cfg)
    return None if parts is None else sum(parts)


def _parts(cfg) -> Optional[tuple[float, float]]:
    """:func:`rough_seconds` of ``cfg`` as ``(shared, own)``: what the runs of one lockstep batch
    pay once (loading the data; per round ``steps x STEP_S``, every step one vmapped call for
    the whole batch, and :data:`ROUND_OVERHEAD_S`; per evaluated test sample
    :data:`EVAL_SAMPLE_S`) and what each run pays itself (its training and evaluation FLOPs,
    its mechanism's per-round cost, DP-SGD's accounting)."""
    import math

    from ..data import dataset_facts

    facts, flops = dataset_facts(cfg.dataset), flops_table().get(f"{cfg.model}/{cfg.dataset}")
    if facts is None or flops is None:
        return None
    total = facts.train_size
    samples = min(cfg.train_size, total) if cfg.train_size else total
    clients = max(1, round(cfg.participation * cfg.num_clients))
    local = cfg.local
    if local.steps:
        steps, per_client = local.steps, local.steps * local.batch_size
    else:
        n = samples / cfg.num_clients
        steps, per_client = local.epochs * math.ceil(n / local.batch_size), local.epochs * n
    mechanism = cfg.privacy.mechanism
    factor = PER_SAMPLE_FACTOR if mechanism in PER_SAMPLE else 1.0
    rate = MODEL_FLOPS.get(cfg.model, CPU_FLOPS)
    test = min(cfg.test_size, facts.test_size) if cfg.test_size else facts.test_size
    evals = cfg.rounds // max(1, cfg.eval_every) + (1 if cfg.rounds % max(1, cfg.eval_every) else 0)
    own = cfg.rounds * (clients * per_client * flops * factor / rate + MECHANISM_ROUND_S.get(mechanism, 0.0))
    if mechanism == "dp_sgd" and cfg.privacy.mechanism_options.get("noise_multiplier", -1) != 0:
        own += ACCOUNT_S * cfg.num_clients * (1 - (1 - clients / cfg.num_clients) ** cfg.rounds)
    own += evals * test * flops / 3 / rate
    shared = ((0.0 if cfg.dataset == "digits" else LOAD_S) + cfg.rounds * (steps * STEP_S + ROUND_OVERHEAD_S)
              + evals * test * EVAL_SAMPLE_S)
    return shared, own


def batch_seconds(configs: list) -> Optional[float]:
    """Rough seconds alone on the CPU of training ``configs`` as a reproduction or a sweep does:
    in lockstep batches (:func:`fedcore.engine.lockstep.lockstep_batches`, at most the sweep's
    ``MAX_BATCH`` runs), each batch paying the shared part of :func:`_parts` once (its longest
    run's) and every run its own part; a config met twice trains once. None when one is unknown.

    PLADP's quick digits table, 21 logreg runs in one batch: about 2 s, not 21 x 1.9 s (it took
    4.9 s at load average 12 on 2 cores, niced); HW-DPFL's quick table, 6 runs of a CNN in
    batches of 2 and 4: 74 s, mostly FLOPs (537 s at load average 10 to 12)."""
    from ..engine.lockstep import lockstep_batches
    from ..sweep.runner import MAX_BATCH

    unique = list({c.config_hash(): c for c in configs}.values())
    parts = {c.config_hash(): _parts(c) for c in unique}
    if any(p is None for p in parts.values()):
        return None
    return sum(max(parts[c.config_hash()][0] for c in chunk) + sum(parts[c.config_hash()][1] for c in chunk)
               for chunk in lockstep_batches(unique, MAX_BATCH))


MODEL_SPREAD = (0.5, 2.0)
"""How far a run may take from :func:`rough_seconds` alone: the calibration holds every stored
trained row within 2x (tests/test_estimate_records.py)."""
MEASURED_SPREAD = (0.8, 1.25)
"""How far the same work may take from a time measured on this machine, once rescaled to the
load (seeds, caches, the load moving within a minute)."""


def slowdown(load: float, cores: int, *, counted: bool = False) -> float:
    """How many times longer CPU-bound work takes beside a 1-minute load average ``load`` on
    ``cores`` cores than alone: it gets about ``cores / (load + itself)`` of them. ``counted``:
    ``load`` was read while the work ran (it is in it already).

    >>> slowdown(4.0, 2), slowdown(4.0, 2, counted=True), slowdown(0.2, 2)
    (2.5, 2.0, 1.0)
    """
    return max(1.0, (load + (0.0 if counted else 1.0)) / max(1, cores))


def host_load() -> tuple[Optional[tuple[float, ...]], int]:
    """This machine's 1-, 5- and 15-minute load averages (None where the platform has none)
    and its CPU count."""
    import os

    try:
        loads = tuple(round(x, 2) for x in os.getloadavg())
    except (AttributeError, OSError):
        loads = None
    return loads, max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class LoadRange:
    """Seconds some work will take on this machine now, ``low`` to ``high``, with the load
    average and cores it was scaled by (:func:`load_range`) and whether it rests on a time
    ``measured`` here rather than on the rough model."""

    low: float
    high: float
    load: Optional[float]
    cores: int
    measured: bool = False

    def label(self) -> str:
        """``"about 3–6 min on this machine now (load average 4.2 on 2 cores)"``."""
        where = ("on this machine now (load average unknown)" if self.load is None
                 else f"on this machine now (load average {self.load:.1f} on {self.cores} cores)")
        return f"about {range_label(self.low, self.high)} {where}"


def load_range(alone_s: float, *, loads: Optional[tuple[float, ...]] = None, cores: Optional[int] = None,
               spread: tuple[float, float] = MODEL_SPREAD, measured: bool = False) -> LoadRange:
    """The seconds that work taking ``alone_s`` alone on the CPU takes if it starts now, honest
    under load: from ``spread[0] x alone`` at the :func:`slowdown` of the lowest of the recent
    load averages (``loads``: 1, 5 and 15 minutes, default :func:`host_load`'s) to ``spread[1] x
    alone`` at the highest: the load moves while it trains, and the estimate itself is rough
    (:data:`MODEL_SPREAD`; :data:`MEASURED_SPREAD` for a time measured here).

    >>> r = load_range(60.0, loads=(3.0, 2.0, 1.0), cores=2)
    >>> r.low, r.high, r.label()
    (30.0, 240.0, 'about 30 s – 4 min on this machine now (load average 3.0 on 2 cores)')
    """
    if loads is None or cores is None:
        here, n = host_load()
        loads, cores = (loads if loads is not None else here), (cores or n)
    known = [x for x in (loads or ()) if x is not None]
    low = alone_s * spread[0] * (slowdown(min(known), cores) if known else 1.0)
    high = alone_s * spread[1] * (slowdown(max(known), cores) if known else 1.0)
    return LoadRange(low, high, known[0] if known else None, cores, measured)


def range_label(low: float, high: float) -> str:
    """Two durations in one unit where they share it: ``"4–26 s"``, ``"2–6 min"``,
    ``"30 s – 4 min"``, ``"2–5 h"`` (whole numbers: the low end rounded down, the high end up,
    so that the range holds what it was given).

    >>> range_label(4.2, 26.0), range_label(170, 350), range_label(30, 240), range_label(2 * 3600, 4.5 * 3600)
    ('4–26 s', '2–6 min', '30 s – 4 min', '2–5 h')
    """
    import math

    def unit(seconds: float) -> tuple[str, int]:
        return next(((name, size) for name, size in (("h", 3600), ("min", 60)) if seconds >= 1.5 * size), ("s", 1))

    (lo_unit, lo_size), (hi_unit, hi_size) = unit(low), unit(high)
    lo, hi = max(1, math.floor(low / lo_size)), max(1, math.ceil(high / hi_size))
    if lo_unit == hi_unit:
        return f"{lo}–{max(lo, hi)} {hi_unit}"
    return f"{lo} {lo_unit} – {hi} {hi_unit}"


def alone_seconds(seconds: float, load: float, cores: int = CORES) -> float:
    """The seconds a run that took ``seconds`` under a 1-minute load average ``load`` (read while
    it ran) would have taken alone on ``cores`` cores (it got about ``cores / load`` of them).

    >>> alone_seconds(300.0, 6.0), alone_seconds(300.0, 1.0)
    (100.0, 300.0)
    """
    return seconds / slowdown(load, cores, counted=True)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _trained_rows(folder: Optional[Path] = None):
    """``(record, table, row, seconds, alone)`` of every row of the stored reproduction records
    that was trained on its own (not reused from another table: more than a second per seed;
    not in a lockstep batch with other runs, whose seconds are a share of the batch's; not at a
    lowered priority, ``nice`` > 0, which gets less than its share of a busy CPU): the
    median over those seeds of the seconds they took, and of :func:`alone_seconds` over the
    ones that recorded their load average (None when none did)."""
    from .results import results_dir

    for path in sorted((folder or results_dir()).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for table in record.get("tables", []):
            for row in table.get("rows", []):
                if not row.get("finals"):
                    continue
                n = len(row["finals"])
                per_seed = row.get("seconds_per_seed") or [row.get("seconds", 0.0) / n] * n
                runs = [(t, la) for t, la, k, nice in zip(per_seed, row.get("load_average") or [None] * n,
                                                          row.get("lockstep") or [1] * n, row.get("nice") or [0] * n)
                        if k == 1 and nice == 0]   # a niced run got less than its share of the CPU
                alone = [alone_seconds(t, la) for t, la in runs if la is not None]
                if runs and _median([t for t, _ in runs]) > 1.0:
                    yield record, table, row, _median([t for t, _ in runs]), _median(alone) if alone else None


def measured_runs(folder: Optional[Path] = None) -> list[tuple[str, object, float, Optional[float]]]:
    """``(paper, RunConfig, seconds per seed, alone on the CPU or None)`` of every trained row
    of the stored records (:func:`_trained_rows`)."""
    from ..config import RunConfig

    return [(record["paper"], RunConfig.from_dict(row["config"]), seconds, alone)
            for record, _table, row, seconds, alone in _trained_rows(folder) if "config" in row]


def measured_preset_seconds(folder: Optional[Path] = None) -> dict[str, float]:
    """``{preset: seconds per seed}`` measured by the stored reproduction records at the
    preset's own settings (tables of mode ``full (paper settings)`` with no overrides; the
    median over seeds trained on their own), what the Papers page shows before the estimate:
    the seconds alone on the CPU (:func:`alone_seconds`), so only from runs that recorded their
    load average (a wall-clock under an unknown load can be several times the run's own)."""
    return {row["preset"]: alone for record, table, row, _seconds, alone in _trained_rows(folder)
            if alone is not None and row.get("preset")
            and (table.get("mode") or record.get("mode")) == "full (paper settings)"}


def rough_label(seconds: Optional[float]) -> str:
    """``"~5 s"``, ``"~3 min"``, ``"~2 h"`` (one significant figure); ``""`` when unknown.

    >>> rough_label(4.2), rough_label(170), rough_label(9000), rough_label(None)
    ('~4 s', '~3 min', '~2 h', '')
    """
    if seconds is None:
        return ""
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= 1.5 * size:
            return f"~{seconds / size:.0f} {unit}"
    return f"~{max(seconds, 1):.0f} s"


def estimate_presets() -> dict[str, float]:
    """:func:`rough_seconds` of every registered preset (rounded to 3 significant figures)."""
    from ..catalog import PRESETS
    from ..resolve import preset_config

    out = {}
    for name in PRESETS.names():
        seconds = rough_seconds(preset_config(name))
        if seconds is not None:
            out[name] = float(f"{seconds:.3g}")
    return out


def write_table() -> dict:
    """Count every registered model on every registered dataset it accepts, estimate every
    preset, and write both to :data:`TABLE`."""
    from ..catalog import DATASETS, MODELS

    flops = {}
    for model in MODELS.names():
        for entry in DATASETS.entries():
            try:
                flops[f"{model}/{entry.name}"] = count_train_flops(model, entry.facts.input_shape,
                                                                   entry.facts.num_classes)
            except Exception:  # noqa: BLE001  (an image model on tabular data: not a pair)
                continue
    _table.cache_clear()
    TABLE.write_text(json.dumps({"flops": flops}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _table.cache_clear()
    table = {"flops": flops, "presets": estimate_presets()}
    TABLE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _table.cache_clear()
    return table


if __name__ == "__main__":
    table = write_table()
    for key, value in table["flops"].items():
        print(f"{key:28s} {value / 1e6:12.3f} MFLOP per sample")
    print(f"{len(table['presets'])} presets estimated; wrote {TABLE}")
