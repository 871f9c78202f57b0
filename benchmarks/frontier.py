"""``python -m fedcore bench frontier``: an ε frontier in lockstep batches vs one run at a time.

The issue's figure: the dashboard's five one-click methods (``fedcore.sweep.DEFAULT_METHODS``)
x 7 target ε + the no-privacy reference (8 points per method) x 3 seeds = 120 runs on the
embedded demo (digits), target <= 30 s on a 2-core CPU. Both ways train the very same
points in one process after a warm-up (imports, the digits data, the first vmap), so the
figures are the training itself; wall time and process CPU time are both reported, with
the load average, because the 2 cores are shared. ``--quick``: 1 seed (40 runs).
"""
from __future__ import annotations

import os
import resource
import time

from .report import environment, write_section


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(points, batched: bool) -> tuple[float, float, list[dict]]:
    from fedcore.sweep.runner import run_sweep

    t0, c0 = time.perf_counter(), _cpu()
    rows = list(run_sweep(points, batched=batched))
    return time.perf_counter() - t0, _cpu() - c0, rows


def run_frontier_bench(args) -> int:
    import logging

    import torch

    from fedcore.engine.device import resolve_device
    from fedcore.sweep import SweepSpec
    from fedcore.sweep.runner import run_one

    logging.getLogger("absl").setLevel(logging.ERROR)  # dp-accounting's convergence notes
    if args.threads:  # 0: torch's default (every core)
        torch.set_num_threads(args.threads)
    seeds = 1 if args.quick else 3
    device = resolve_device(args.device).type
    spec = SweepSpec(preset="demo", seeds=seeds, sets=(f"device={device}", *(args.set or ())))
    points = spec.points()
    print(f"frontier: {len(points)} runs ({len(spec.methods)} methods x ({len(spec.epsilons)} ε + no privacy) "
          f"x {seeds} seeds) on the demo preset", flush=True)
    for method in spec.methods:  # imports (dp-accounting, torch.func), data, first vmaps: paid once
        first = next(p for p in points if p.method == method and p.epsilon is not None)
        run_one(type(first)(first.method, first.epsilon, first.seed, first.config.with_overrides({"rounds": 1})))
    load_before = os.getloadavg()
    batched = [_timed(points, True) for _ in range(max(1, args.repeat))]
    wall_b = sorted(b[0] for b in batched)[len(batched) // 2]
    cpu_b = sorted(b[1] for b in batched)[len(batched) // 2]
    print(f"lockstep batches: {wall_b:.1f} s wall, {cpu_b:.1f} s CPU (median of {len(batched)})", flush=True)
    wall_1, cpu_1, rows_1 = _timed(points, False)
    print(f"one by one:       {wall_1:.1f} s wall, {cpu_1:.1f} s CPU", flush=True)
    load_after = os.getloadavg()
    same = sorted((r["method"], r["epsilon"] or 0, r["seed"], r["accuracy"]) for r in batched[0][2]) == \
        sorted((r["method"], r["epsilon"] or 0, r["seed"], r["accuracy"]) for r in rows_1)
    lines = [
        f"Command: `python -m fedcore bench frontier{' --quick' if args.quick else ''} --repeat {args.repeat}"
        f"{f' --threads {args.threads}' if args.threads else ''}{f' --device {device}' if device != 'cpu' else ''}`",
        "",
        *[f"- {m}" for m in environment(device, args.threads, args.repeat, load_before, load_after)],
        f"- torch threads: {torch.get_num_threads()}",
        "",
        "| frontier | runs | wall s | CPU s | target |",
        "|---|---|---|---|---|",
        f"| lockstep batches (runs x clients in one vmap) | {len(points)} | {wall_b:.1f} | {cpu_b:.1f} | "
        f"{'≤ 30 s' if seeds == 3 else '-'} |",
        f"| one run after another (`iter_run`) | {len(points)} | {wall_1:.1f} | {cpu_1:.1f} | |",
        f"| ratio one-by-one / lockstep | | {wall_1 / wall_b:.2f}x | {cpu_1 / cpu_b:.2f}x | |",
        "",
        f"Same accuracies both ways: {'yes' if same else 'NO'} (every run, to the last digit).",
    ]
    text = "\n".join(lines)
    print()
    print(text)
    if args.out:
        write_section(args.out, f"frontier-{device}" + ("-quick" if args.quick else ""), text)
        print(f"\nwrote section 'frontier-{device}' of {args.out}")
    return 0
