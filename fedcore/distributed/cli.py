"""``--ray [ADDRESS]`` for ``python -m fedcore sweep`` and ``python -m fedcore reproduce``.

The sub-commands parse and validate their arguments as always, then hand over here:

    python -m fedcore sweep --preset demo --epsilons 1,10 --seeds 3 --out frontier.json --ray
    python -m fedcore sweep ... --ray auto                 # the cluster this machine is in
    python -m fedcore sweep ... --ray ray://head:10001     # a cluster elsewhere (Ray Client)
    python -m fedcore reproduce ldp_fl --quick --ray 10.0.0.5:6379

Output is what the local command prints and writes. Exit codes: 0 all points finished,
1 some runs failed after their retry (named on stderr; the finished ones are written),
2 bad input or an unreachable cluster (one line), 130 cancelled with Ctrl-C.
"""
from __future__ import annotations

import sys

CPUS_ENV = "FEDCORE_RAY_CPUS_PER_TASK"
"""CPUs each task asks for (default 1; torch uses that many threads in the task)."""


def cpus_per_task() -> float:
    import os

    from ..errors import FedcoreError

    raw = os.environ.get(CPUS_ENV, "").strip() or "1"
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value <= 1024:
        raise FedcoreError(f"{CPUS_ENV}={raw!r}: must be a number of CPUs in (0, 1024]")
    return value


def failure_report(failed: list[dict]) -> None:
    """Each failed task on stderr: its error and the runs it held."""
    for record in failed:
        print(f"FAILED after a retry: {len(record['runs'])} run(s): {'; '.join(record['runs'])} "
              f"-- {record['error']}", file=sys.stderr, flush=True)


def sweep_on_ray(args, spec, points) -> int:
    """The ``sweep`` sub-command's ``--ray`` path (arguments already validated)."""
    from ..sweep.lines import point_line
    from ..sweep.rows import summary_table
    from .sweep import RaySweep

    sweep = RaySweep(points, address=args.ray, out=args.out, batched=not args.one_by_one, cpus=cpus_per_task())
    events = sweep.run()
    shown = 0
    try:
        for kind, item in events:
            if kind == "started":
                shown = item["skipped"]
                print(f"ray: {item['points']} point(s) in {item['tasks']} task(s) on {item['CPU']:g} CPU(s), "
                      f"{item['GPU']:g} GPU(s); {item['skipped']} already in {args.out}", flush=True)
            elif kind == "row":
                shown += 1
                print(point_line(shown, len(points), item), flush=True)
            else:
                failure_report([item])
    except KeyboardInterrupt:
        events.close()
        print(f"\ncancelled: {len(sweep.rows)} of {len(points)} points kept in {args.out}", file=sys.stderr)
        return 130
    rows = sweep.ordered_rows()
    if sweep.skipped or sweep.dropped:
        print(f"skipped {sweep.skipped} point(s) already in {args.out}"
              + (f"; dropped {sweep.dropped} row(s) of other configs" if sweep.dropped else ""))
    print()
    if rows:
        print(summary_table(rows))
    print(f"\nwrote {len(rows)} rows to {args.out}")
    if sweep.failed:
        runs = sum(len(f["runs"]) for f in sweep.failed)
        print(f"{len(sweep.failed)} task(s) failed after a retry ({runs} run(s), named above); "
              "rerun the same command to train only those", file=sys.stderr)
        return 1
    return 0


def reproduce_on_ray(args, extra: dict, tables) -> int:
    """The ``reproduce`` sub-command's ``--ray`` path."""
    from .reproduce import reproduce_on_ray as run

    try:
        result = run(args.paper, address=args.ray, quick=args.quick, seeds=args.seeds, out=args.out,
                     tables=tables, extra=extra or None, cpus=cpus_per_task(),
                     log=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("\ncancelled: finished runs are kept for the next run", file=sys.stderr)
        return 130
    if result.failed:
        failure_report(result.failed)
        return 1
    return 0
