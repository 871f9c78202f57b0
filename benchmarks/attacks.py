"""What the attacks cost, side by side in one run (issue 28's targets, whole commands on this CPU).

    python -m benchmarks.attacks [--repeats 3]

1. One client's reconstruction on digits for logreg and MLP: the analytic inversion plus the
   informed adversary's candidate gradients of that client's images (what the Playground's view
   runs per client and round), best of ``repeats``; target <= 1 s.
2. Membership inference (LiRA) on the demo with 64 shadow runs, trained in lockstep; target <= 30 s.
3. The demo run (20 rounds) without and with the live attack view (the worker's
   ``live_watch``), alternated ``repeats`` times, best of each; target <= +20 %.

Prints the load average before and after (the two cores are shared).
"""
from __future__ import annotations

import argparse
import os
import time


def one_client(model: str, repeats: int) -> float:
    """Seconds for one client's reconstruction and informed match at round 1 of the demo."""
    import torch

    from fedcore.attacks.informed import candidate_updates, match_candidates
    from fedcore.attacks.inversion import first_linear, invert_linear
    from fedcore.attacks.metrics import nearest
    from fedcore.engine.flat import flatten
    from fedcore.engine.setup import prepare
    from fedcore.layering import build_config

    s = prepare(build_config("demo", None, [f"model={model}", "local.steps=1", "local.batch_size=1"]))
    rows = s.padded[0, : int(s.counts[0])]
    x, y = s.x_train[rows], s.y_train[rows]
    update = 0.5 * candidate_updates(s.model, s.params, x[:1], y[:1])[0]
    layer = first_linear(s.params)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        recon = invert_linear(update[None], layer)
        nearest(recon, x.reshape(len(x), -1))
        match_candidates(update, candidate_updates(s.model, s.params, x, y))
        best = min(best, time.perf_counter() - t0)
    del flatten, torch
    return best


def membership(shadows: int) -> tuple[float, float]:
    from fedcore.attacks.membership import lira
    from fedcore.layering import build_config

    t0 = time.perf_counter()
    m = lira(build_config("demo", None, []), shadows)
    return time.perf_counter() - t0, m.auc


def demo_run(watch: bool) -> float:
    from fedcore.attacks.watch import live_watch
    from fedcore.engine import iter_run
    from fedcore.events import summarize
    from fedcore.layering import build_config

    cfg = build_config("demo", None, [])
    t0 = time.perf_counter()
    summarize(iter_run(cfg, watch=live_watch if watch else None))
    return time.perf_counter() - t0


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--shadows", type=int, default=64)
    args = p.parse_args(argv)
    print(f"load average before: {os.getloadavg()}")
    for model in ("logreg", "mlp"):
        print(f"one client's reconstruction, {model}: {one_client(model, args.repeats):.4f} s (target <= 1 s)")
    seconds, auc = membership(args.shadows)
    print(f"membership inference, {args.shadows} shadow runs: {seconds:.2f} s (AUC {auc:.3f}; target <= 30 s)")
    demo_run(True)  # warm: imports, the data's cache
    plain, watched = [], []
    for _ in range(args.repeats):
        plain.append(demo_run(False))
        watched.append(demo_run(True))
    a, b = min(plain), min(watched)
    print(f"demo run (20 rounds): {a:.3f} s plain, {b:.3f} s with the attack view: +{100 * (b / a - 1):.0f} % "
          "(target <= +20 %)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
