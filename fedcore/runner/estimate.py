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

CPU_FLOPS = 1.0e10
"""FLOP/s a round achieves on the 2-core CPU (bench scaling: 1000 MNIST logreg clients)."""
ROUND_OVERHEAD_S = 0.05
"""Seconds per round besides training: evaluation, ledger, events (the demo's rounds)."""
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
    """Order-of-magnitude seconds of ``cfg`` on a 2-core CPU; None when unknown."""
    from .limits import DATASET_FACTS

    facts, flops = DATASET_FACTS.get(cfg.dataset), flops_table().get(f"{cfg.model}/{cfg.dataset}")
    if facts is None or flops is None:
        return None
    total = facts[0]
    samples = min(cfg.train_size, total) if cfg.train_size else total
    clients = max(1, round(cfg.participation * cfg.num_clients))
    local = cfg.local
    per_client = local.steps * local.batch_size if local.steps else local.epochs * samples / cfg.num_clients
    return cfg.rounds * (clients * per_client * flops / CPU_FLOPS + ROUND_OVERHEAD_S)


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
    from ..catalog import MODELS
    from .limits import DATASET_FACTS

    flops = {}
    for model in MODELS.names():
        for dataset, (_, shape, classes) in DATASET_FACTS.items():
            try:
                flops[f"{model}/{dataset}"] = count_train_flops(model, shape, classes)
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
