"""``python -m benchmarks.setup_profile --device cuda --set ...``: what a run pays before its first round.

Issue 41: on a fresh H100 host, W3's round 1 came 13.6 s after the run started, against 1.7 s on a warm
H200. This times, in one fresh process, each step of :func:`fedcore.engine.setup.prepare` and round 1 on
their own, and prints one JSON line of wall seconds: ``import_torch``, ``import_fedcore`` (the CLI's
registries), ``device_start`` (the CUDA context and a first kernel; 0 on CPU), ``load_dataset`` (parse, or
read the cache beside the files, and copy to the device), ``prepare`` (the rest of the setup: split,
partition, model, mechanism and aggregator, the noise calibration among them) and ``round_1`` (the first
round event: first calls, CUDA graph capture, the curve workers' start), with the settings (``--set``,
as ``fedcore run`` takes them).
"""
from __future__ import annotations

import argparse
import json
import time

T0 = time.perf_counter()


def main(argv=None, since: float | None = None) -> dict:
    """Time each step from ``since`` (the script's first line when run as a script; this call otherwise)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", action="append", default=[], help="a setting, as `fedcore run --set` takes it")
    p.add_argument("--device", default="auto")
    args = p.parse_args(argv)
    start = time.perf_counter() if since is None else since
    marks, t = {}, start

    def mark(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        marks[name] = now - t
        t = now

    import torch
    mark("import_torch")
    import fedcore.catalog  # noqa: F401 -- the registries, as the CLI loads them
    from fedcore.data import load_dataset
    from fedcore.engine import iter_run
    from fedcore.engine.device import resolve_device
    from fedcore.engine.setup import prepare
    from fedcore.events import RoundEvent
    from fedcore.layering import build_config
    mark("import_fedcore")
    cfg = build_config(None, None, [*args.set, f"device={args.device}"])
    device = resolve_device(cfg.device)
    if device.type == "cuda":
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize()
    mark("device_start")
    load_dataset(cfg.dataset, device=device)   # kept in the process: prepare() reads it again at no cost
    mark("load_dataset")
    setup = prepare(cfg)
    mark("prepare")
    for event in iter_run(cfg, setup=setup):
        if isinstance(event, RoundEvent):
            break
    if device.type == "cuda":
        torch.cuda.synchronize()
    mark("round_1")
    marks.update(total=time.perf_counter() - start, device=str(device), settings=args.set)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in marks.items()}), flush=True)
    return marks


if __name__ == "__main__":
    main(since=T0)
