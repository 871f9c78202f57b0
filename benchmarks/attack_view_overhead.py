"""What the Playground's live attack view costs (issue 40 §8, issue 55 §3): CPU seconds of a preset's run
without and with the worker's watch (:func:`fedcore.attacks.watch.live_watch`), in interleaved pairs.

    python -m benchmarks.attack_view_overhead [--pairs 7] [--presets demo,attack_digits] [--hold-ms 250]

Per preset: one warm-up of each, then ``pairs`` pairs whose order alternates (plain first, then watched
first), each counted in CPU seconds of the run's processes: this process's ``time.process_time`` (another
program's load moves it far less than wall time) plus what the accounting's curve workers spent on its
curves (:func:`fedcore.accounting.curve_workers.background_cpu_seconds`), one thread (torch and numpy's BLAS).
``--hold-ms``: the consumer keeps each round's event that long before asking for the next (as the
dashboard's slow motion does, :func:`fedcore.runner.tempo.between_rounds`), so the engine cannot batch
rounds: every round's attack record is built on its own. Prints the medians, the median of the pairs'
ratios, their spread and the 1-minute load average before and after. Target: the view adds at most 20 %.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def held(events, hold_s: float):
    """``events`` as a consumer that keeps each round's event ``hold_s`` seconds sees them (the last round
    is not held, as the worker's pacing skips it)."""
    from fedcore.events import RoundEvent, RunStarted

    total = None
    for event in events:
        if isinstance(event, RunStarted):
            total = event.config.get("rounds")
        yield event
        if hold_s > 0 and isinstance(event, RoundEvent) and event.round != total:
            time.sleep(hold_s)


def cpu_seconds(preset: str, watch: bool, hold_s: float = 0.0) -> float:
    """CPU seconds of one run of ``preset`` (its events folded as the dashboard does), with or without the
    view, its consumer keeping each event ``hold_s`` seconds."""
    from fedcore.accounting.curve_workers import background_cpu_seconds
    from fedcore.attacks.watch import live_watch
    from fedcore.engine import iter_run
    from fedcore.events import summarize
    from fedcore.layering import build_config

    cfg = build_config(preset, None, [])
    t0, b0 = time.process_time(), background_cpu_seconds()
    summarize(held(iter_run(cfg, watch=live_watch if watch else None), hold_s))
    return time.process_time() - t0 + background_cpu_seconds() - b0


def measure(preset: str, pairs: int, hold_s: float = 0.0) -> dict:
    cpu_seconds(preset, True), cpu_seconds(preset, False)      # warm: imports, the data's cache
    load = os.getloadavg()[0]
    plain, watched = [], []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        got = {w: cpu_seconds(preset, w, hold_s) for w in order}
        plain.append(got[False])
        watched.append(got[True])
    ratios = [w / p for p, w in zip(plain, watched)]
    return {"preset": preset, "hold_ms": round(1000 * hold_s), "pairs": pairs, "plain": statistics.median(plain),
            "watched": statistics.median(watched), "overhead": statistics.median(ratios) - 1,
            "low": min(ratios) - 1, "high": max(ratios) - 1, "load": (load, os.getloadavg()[0])}


def main(argv=None) -> None:
    from fedcore.threads import pin

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--presets", "--preset", default="demo,attack_digits",
                   help="comma-separated presets (default: demo,attack_digits)")
    p.add_argument("--hold-ms", type=float, default=0.0,
                   help="the consumer keeps each round's event this many ms (slow motion: no batching)")
    args = p.parse_args(argv)
    pin(1)   # one thread for torch and numpy's BLAS, as `python -m fedcore --threads 1` (fedcore.threads)
    for preset in args.presets.split(","):
        m = measure(preset, args.pairs, args.hold_ms / 1000)
        print(f"{preset} (hold {m['hold_ms']} ms, {m['pairs']} pairs): {m['plain']:.3f} CPU-s plain, "
              f"{m['watched']:.3f} CPU-s with the attack view: {100 * m['overhead']:+.1f} % "
              f"(pairs {100 * m['low']:+.0f} to {100 * m['high']:+.0f} %; target <= +20 %); "
              f"load {m['load'][0]:.2f} -> {m['load'][1]:.2f}", flush=True)


if __name__ == "__main__":
    main()
