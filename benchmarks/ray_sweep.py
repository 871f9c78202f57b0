"""Benchmark: the same ε sweep locally and on a local Ray instance; prints the overhead.

    python -m benchmarks.ray_sweep [--methods ...] [--epsilons 1,10] [--seeds 2]
        [--set KEY=VALUE ...] [--cpus 2] [--one-by-one]

1. local: :func:`fedcore.sweep.runner.run_sweep` in this process (lockstep batches);
2. Ray: :class:`~fedcore.distributed.sweep.RaySweep` on a fresh local instance with
   ``--cpus`` CPUs (one task per batch, 1 CPU each); Ray's start-up is timed apart.

Prints the wall times, Ray's overhead (sweep on Ray - local, and with the start-up), the
tasks, whether every accuracy matched, and the load average before and after (the
machine may be shared: the figures are only comparable at a similar load).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--methods", default="ldp_fl,pldp_b,hw_dpfl,kdp_fl,dp_fedavg")
    p.add_argument("--epsilons", default="1,10")
    p.add_argument("--seeds", default="2")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    p.add_argument("--one-by-one", action="store_true", help="one task per point instead of per batch")
    args = p.parse_args(argv)

    import ray

    from fedcore.sweep import SweepSpec
    from fedcore.sweep.runner import run_sweep
    from fedcore.distributed.cluster import connect
    from fedcore.distributed.sweep import RaySweep

    spec = SweepSpec(preset=args.preset, methods=args.methods, epsilons=args.epsilons, seeds=args.seeds,
                     sets=tuple(args.set))
    points = spec.points()
    batched = not args.one_by_one
    load0 = os.getloadavg()
    print(f"sweep: {len(points)} runs ({args.methods}; ε {args.epsilons}; seeds {args.seeds}; "
          f"sets {args.set or '-'}); {'batched' if batched else 'one by one'}; torch threads local: default")
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} on {os.cpu_count()} CPUs")

    t0 = time.perf_counter()
    local = list(run_sweep(points, batched=batched))
    t_local = time.perf_counter() - t0
    print(f"local:            {t_local:7.2f} s")

    t0 = time.perf_counter()
    connect("local", num_cpus=args.cpus)
    t_init = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        sweep = RaySweep(points, out=os.path.join(tmp, "frontier.json"), batched=batched)
        t0 = time.perf_counter()
        first = None
        for kind, _ in sweep.run():
            if kind == "row" and first is None:
                first = time.perf_counter() - t0
        t_ray = time.perf_counter() - t0
        rows = sweep.ordered_rows()
    ray.shutdown()
    same = {r["config_hash"]: r["accuracy"] for r in rows} == {r["config_hash"]: r["accuracy"] for r in local}
    tasks = len(sweep.dispatcher.jobs)
    print(f"ray start-up:     {t_init:7.2f} s  (local instance, {args.cpus} CPUs)")
    print(f"ray sweep:        {t_ray:7.2f} s  ({tasks} tasks; first row after {first or 0:.2f} s)")
    print(f"overhead:         {t_ray - t_local:+7.2f} s sweep only ({t_ray / t_local:.2f}x), "
          f"{t_ray + t_init - t_local:+.2f} s with start-up")
    print(f"same accuracies:  {same}  ({len(rows)} rows, {len(sweep.failed)} failed tasks)")
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    return 0 if same and not sweep.failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
