"""The ``reproduce`` subcommand of ``python -m fedcore`` (see :mod:`fedcore.reproduce.run`)."""
from __future__ import annotations

import argparse

from ..errors import FedcoreError


def add_reproduce_parser(sub) -> argparse.ArgumentParser:
    from .presets import PAPERS

    p = sub.add_parser("reproduce", help="run a paper's headline experiments over seeds; paper vs ours",
                       description="Train a paper's presets with repeated seeds on the real data, write "
                                   "<out>/<paper>.json and <out>/<paper>.md (paper vs ours, mean ± std) "
                                   "and check the paper's ordering claims.")
    p.add_argument("paper", choices=sorted(PAPERS), help="which paper")
    p.add_argument("--quick", action="store_true",
                   help="CPU-sized: reduced rounds / clients / data, fewer tables and seeds; "
                        "results are labelled 'quick (CPU, reduced)'")
    p.add_argument("--seeds", type=int, help="repetitions per experiment (default: the paper's, fewer with --quick)")
    p.add_argument("--out", default="assets/reproduction", help="folder for <paper>.json and <paper>.md")
    p.add_argument("--tables", help="comma-separated table keys to run (default: all, or the quick ones)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field in every run, e.g. --set rounds=2")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="train the runs as Ray tasks: a local instance, or 'auto' / HOST:PORT / ray://HOST:PORT")
    p.set_defaults(func=cmd_reproduce)
    return p


def cmd_reproduce(args) -> int:
    from ..config import parse_value
    from .run import check_request, reproduce

    extra = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FedcoreError(f"--set {item[:60]!r}: expected key=value, e.g. --set rounds=2")
        extra[key.strip()] = parse_value(value.strip(), None)
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    # every setting, every run's config and --out checked before any training (local or Ray)
    check_request(args.paper, quick=args.quick, seeds=args.seeds, out=args.out, tables=tables, extra=extra or None)
    if getattr(args, "ray", None):
        from ..distributed.cli import reproduce_on_ray
        return reproduce_on_ray(args, extra, tables)
    reproduce(args.paper, quick=args.quick, seeds=args.seeds, out=args.out, tables=tables, extra=extra or None,
              log=lambda line: print(line, flush=True))
    return 0
