"""One paper table's rows x seeds: trained in lockstep against one by one, whole command.

    python -m benchmarks.reproduce_lockstep [--paper pldp --table digits_iid --seeds 3] [--quick]

Side by side in one run on this machine (issue 23): ``python -m fedcore reproduce PAPER --tables
TABLE --seeds N`` as a fresh process, once as it runs by default (the rows x seeds that share a
model, data and local training train together: :func:`fedcore.reproduce.run.train_lockstep`)
and once with ``--one-by-one``. Prints wall and CPU seconds of each whole command, the speed-up,
the largest difference between the two records' final accuracies (they should agree up to float
rounding), and the load average before and after each (the 2 cores are shared).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(args, out: Path, one_by_one: bool) -> dict:
    cmd = [sys.executable, "-m", "fedcore", "reproduce", args.paper, "--tables", args.table,
           "--seeds", str(args.seeds), "--out", str(out)] + (["--quick"] if args.quick else []) \
        + (["--one-by-one"] if one_by_one else [])
    load, c0, t0 = _load(), _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    (table,) = json.loads((out / f"{args.paper}.json").read_text())["tables"]
    finals = {(r["key"], s): f for r in table["rows"] for s, f in zip(r.get("seeds", []), r.get("finals", []))}
    return {"system": "one by one" if one_by_one else "lockstep", "command": " ".join(cmd[3:]), "wall_s": wall,
            "cpu_s": cpu, "load_before": load, "load_after": _load(), "finals": finals}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--paper", default="pldp")
    p.add_argument("--table", default="digits_iid")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="the table's quick settings")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        results = [run(args, Path(tmp) / "lockstep", False), run(args, Path(tmp) / "alone", True)]
    for r in results:
        print(f"{r['system']:<11} {len(r['finals'])} runs: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU-s "
              f"(load average {r['load_before']} -> {r['load_after']})  [{r['command']}]")
    a, b = results[0]["finals"], results[1]["finals"]
    diff = max(abs(a[k] - b[k]) for k in a)
    print(f"one by one / lockstep wall time: {results[1]['wall_s'] / results[0]['wall_s']:.2f}x; "
          f"largest final-accuracy difference: {diff:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
