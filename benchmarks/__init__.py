"""Benchmarks: fedcore's batched clients against a plain per-client loop and Flower.

``python -m fedcore bench [W1|W2|W3|W4|all|startup|frontier|scaling] [--systems fedcore,loop,flower]
[--device auto|cpu|cuda] [--out docs/benchmarks.md]`` runs the workloads of
:mod:`benchmarks.workloads` on each system (:mod:`~benchmarks.measure`,
:mod:`~benchmarks.flower_system`), ``--repeat`` times, and prints (and with ``--out``
writes) the medians, the ratios to fedcore and the issue's targets
(:mod:`~benchmarks.report`). See ``docs/benchmarks.md`` for the figures and commands.
This package is light to import; the systems load torch, and Flower, when they run.
"""
from __future__ import annotations

import argparse
import os
import sys

WORKLOAD_CHOICES = ("W1", "W2", "W3", "W4", "all", "startup", "frontier", "scaling")


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``python -m fedcore bench``."""
    p.add_argument("workloads", nargs="*", default=["W1"], metavar="WORKLOAD", choices=WORKLOAD_CHOICES,
                   help="W1 W2 W3 W4, all, startup (time to the demo's first round), frontier (an eps sweep "
                        "in lockstep batches vs one by one) or scaling (MNIST logreg at 100/1000/6000 clients "
                        "against the dense bound); default W1")
    p.add_argument("--systems", default="fedcore,loop,flower", help="comma-separated: fedcore,loop,flower")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1,
                   help="cores per system: torch threads for fedcore and the loop, concurrent one-thread "
                        "client actors for Flower (0: torch's default / all cores)")
    p.add_argument("--repeat", type=int, default=3, help="runs per system; medians are reported")
    p.add_argument("--quick", action="store_true", help="short variants only (W3-quick instead of W3)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field in every case")
    p.add_argument("--in-process", action="store_true",
                   help="run fedcore and the loop in this process (no process time or memory figures)")
    p.add_argument("--profile", action="store_true", help="profile one warm fedcore round per case")
    p.add_argument("--trace-dir", help="with --profile: also write Chrome traces here")
    p.add_argument("--flower-python", default=os.environ.get("FEDCORE_FLOWER_PYTHON", sys.executable),
                   help="interpreter with flwr installed (default: $FEDCORE_FLOWER_PYTHON, else this one)")
    p.add_argument("--out", help="write the tables into this markdown file, in a marked section")
