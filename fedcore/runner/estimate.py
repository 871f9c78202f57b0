"""A rough duration of a run before it starts ("~2 min"), for the preset picker.

    seconds ~ rounds x (samples each round trains on) x (FLOPs of one sample's forward and
              backward pass) / CPU_FLOPS  +  rounds x ROUND_OVERHEAD_S

The FLOPs per sample of every (model, dataset) pair come from ``torch.utils.flop_counter``
(:func:`count_train_flops`). ``python -m fedcore.runner.estimate`` counts them and the
estimate of every preset, and keeps both in ``train_flops.json`` beside this module, so that
the dashboard labels 165 presets without importing torch or building 165 configs at start-up
(tests recount some pairs and recompute every preset's estimate: a stale table fails them). The result is an order of
magnitude for a 2-core CPU, not a promise: DP-SGD's per-sample gradients, the accountant and
evaluation are folded into the two constants.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

CPU_FLOPS = 8.0e10
"""Training FLOP/s on batched (vmapped) local steps: LDP-FL's full MNIST table (10 rounds of 100
clients x 600 images through a 16 MFLOP CNN) took about 100 s per run on the idle 2-core CPU."""
STEP_S = 0.01
"""Seconds per local step of a round (the round's clients in one vmapped call): kernel and
Python overhead, which dominates small models."""
PER_SAMPLE_FACTOR = 2.5
"""Per-sample gradients (DP-SGD, HW-DPFL's per-step noise) cost this many times a batch gradient
(measured: clip-only rows against no-privacy rows of the same table, 2.0-2.2x, small CNN)."""
EVAL_SAMPLE_S = 1.0e-4
"""Seconds per test sample of an evaluation, besides its FLOPs (batching, metrics)."""
LOAD_S = 3.0
"""Loading a dataset from its files (MNIST's gzip'd arrays)."""
ROUND_OVERHEAD_S = 0.05
"""Seconds per round besides training: ledger, events (the demo's rounds)."""
MECHANISM_ROUND_S = {"uldp_gaussian": 3.0}
"""Seconds per round a mechanism costs besides training, where measured: ULDP-FED's user-level
Gaussian with its stored-update history, recall check and per-round accounting (a full-setting
round took about 3.5 s on one core, of which its 6,000 images' training is about 0.2 s)."""
TEST_SIZES = {"digits": 360, "mnist": 10_000, "fashion_mnist": 10_000, "cifar10": 10_000, "covertype": 30_000}
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

    ``rounds x (samples trained x FLOPs x [per-sample factor] / CPU_FLOPS + steps x STEP_S + overhead)
    + evaluations x test samples x (FLOPs / 3 / CPU_FLOPS + EVAL_SAMPLE_S) + LOAD_S``.
    """
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
    factor = PER_SAMPLE_FACTOR if cfg.privacy.mechanism in PER_SAMPLE else 1.0
    overhead = ROUND_OVERHEAD_S + MECHANISM_ROUND_S.get(cfg.privacy.mechanism, 0.0)
    train = cfg.rounds * (clients * per_client * flops * factor / CPU_FLOPS + steps * STEP_S + overhead)
    test = min(cfg.test_size, TEST_SIZES.get(cfg.dataset, 10_000)) if cfg.test_size else \
        TEST_SIZES.get(cfg.dataset, 10_000)
    evals = cfg.rounds // max(1, cfg.eval_every) + (1 if cfg.rounds % max(1, cfg.eval_every) else 0)
    load = 0.0 if cfg.dataset == "digits" else LOAD_S
    return load + train + evals * test * (flops / 3 / CPU_FLOPS + EVAL_SAMPLE_S)


def _trained_rows(folder: Optional[Path] = None):
    """``(record, table, row, seconds per seed)`` of every row of the stored reproduction records
    that was trained (not reused from another table: more than a second per seed, the median
    over its seeds)."""
    from ..reproduce.results import results_dir

    for path in sorted((folder or results_dir()).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for table in record.get("tables", []):
            for row in table.get("rows", []):
                if not row.get("finals"):
                    continue
                per_seed = row.get("seconds_per_seed") or [row.get("seconds", 0.0) / len(row["finals"])]
                seconds = sorted(per_seed)[len(per_seed) // 2]
                if seconds > 1.0:
                    yield record, table, row, seconds


def measured_runs(folder: Optional[Path] = None) -> list[tuple[str, object, float]]:
    """``(paper, RunConfig, seconds per seed)`` of every trained row of the stored records."""
    from ..config import RunConfig

    return [(record["paper"], RunConfig.from_dict(row["config"]), seconds)
            for record, _table, row, seconds in _trained_rows(folder) if "config" in row]


def measured_preset_seconds(folder: Optional[Path] = None) -> dict[str, float]:
    """``{preset: seconds per seed}`` measured by the stored reproduction records at the
    preset's own settings (tables of mode ``full (paper settings)`` with no overrides; the
    median over seeds; rows reused from another table are left out), what the Papers page
    shows before the FLOP model's estimate. Wall-clock on the machine that ran them, under
    whatever load it had (each new run records its load average)."""
    return {row["preset"]: seconds for record, table, row, seconds in _trained_rows(folder)
            if row.get("preset") and (table.get("mode") or record.get("mode")) == "full (paper settings)"}


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
