"""One benchmark run in a fresh process, so that its memory and start-up are its own.

``python -m benchmarks.worker SYSTEM CONFIG.json RESULT.json [--profile] [--trace FILE]``

SYSTEM is ``fedcore`` (batched engine), ``loop`` (plain per-client loop) or ``flower``.
Writes a :class:`~benchmarks.measure.Measurement` as JSON; exits with
:data:`~benchmarks.measure.SKIPPED` and a one-line reason when the system cannot run
here (Flower not installed).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    p.add_argument("system", choices=("fedcore", "loop", "flower"))
    p.add_argument("config")
    p.add_argument("result")
    p.add_argument("--profile", action="store_true", help="also profile one warm round")
    p.add_argument("--trace", help="write that round's Chrome trace here")
    args = p.parse_args(argv)

    import torch

    from fedcore.config import RunConfig
    from .measure import SKIPPED, run_engine

    cfg = RunConfig.from_json(Path(args.config).read_text())
    if args.system == "flower":
        from .flower_system import FlowerUnavailable, run_flower

        try:
            m = run_flower(cfg)
        except FlowerUnavailable as exc:
            print(f"flower skipped: {exc}", flush=True)
            return SKIPPED
    else:
        trainer = "batched" if args.system == "fedcore" else "loop"
        m = run_engine(cfg, trainer)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        m.peak_gpu_mb = torch.cuda.max_memory_allocated() / 2**20
    if args.system != "flower" and (args.profile or args.trace):
        from .roofline import profile_round

        m.profile = profile_round(cfg, trainer, args.trace)
    Path(args.result).write_text(json.dumps(m.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
