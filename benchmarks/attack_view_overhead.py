"""What the Playground's live attack view costs (issue 40 §8): CPU seconds of a preset's run without and
with the worker's watch (:func:`fedcore.attacks.watch.live_watch`), in interleaved pairs.

    python -m benchmarks.attack_view_overhead [--pairs 7] [--presets demo,attack_digits]

Per preset: one warm-up of each, then ``pairs`` pairs whose order alternates (plain first, then watched
first), each timed with ``time.process_time`` (this process's CPU seconds: another program's load moves
it far less than wall time), one torch thread. Prints the medians, the median of the pairs' ratios and
the 1-minute load average before and after. Target: the view adds at most 20 %.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def cpu_seconds(preset: str, watch: bool) -> float:
    """CPU seconds of one run of ``preset`` (its events folded as the dashboard does), with or without the view."""
    from fedcore.attacks.watch import live_watch
    from fedcore.engine import iter_run
    from fedcore.events import summarize
    from fedcore.layering import build_config

    cfg = build_config(preset, None, [])
    t0 = time.process_time()
    summarize(iter_run(cfg, watch=live_watch if watch else None))
    return time.process_time() - t0


def measure(preset: str, pairs: int) -> dict:
    cpu_seconds(preset, True), cpu_seconds(preset, False)      # warm: imports, the data's cache
    load = os.getloadavg()[0]
    plain, watched = [], []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        got = {w: cpu_seconds(preset, w) for w in order}
        plain.append(got[False])
        watched.append(got[True])
    ratios = [w / p for p, w in zip(plain, watched)]
    return {"preset": preset, "plain": statistics.median(plain), "watched": statistics.median(watched),
            "overhead": statistics.median(ratios) - 1, "low": min(ratios) - 1, "high": max(ratios) - 1,
            "load": (load, os.getloadavg()[0])}


def main(argv=None) -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--presets", default="demo,attack_digits")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for preset in args.presets.split(","):
        m = measure(preset, args.pairs)
        print(f"{preset}: {m['plain']:.3f} CPU-s plain, {m['watched']:.3f} CPU-s with the attack view: "
              f"{100 * m['overhead']:+.0f} % (pairs {100 * m['low']:+.0f} to {100 * m['high']:+.0f} %; target <= +20 %); "
              f"load {m['load'][0]:.2f} -> {m['load'][1]:.2f}", flush=True)


if __name__ == "__main__":
    main()
