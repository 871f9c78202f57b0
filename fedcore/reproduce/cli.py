"""The ``reproduce`` subcommand of ``python -m fedcore`` (see :mod:`fedcore.reproduce.run`)."""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from ..constraints import shorten
from ..errors import FedcoreError


def add_reproduce_parser(sub) -> argparse.ArgumentParser:
    from ..papers import PAPERS

    p = sub.add_parser("reproduce", help="run a paper's headline experiments over seeds; paper vs ours",
                       description="Train a paper's presets with repeated seeds on the real data, write "
                                   "<out>/<paper>.json and <out>/<paper>.md (paper vs ours, mean ± std) "
                                   "and check the paper's ordering claims.")
    p.add_argument("paper", nargs="?", choices=sorted(PAPERS), help="which paper (not with --report)")
    p.add_argument("--report", action="store_true",
                   help="regenerate the generated parts of docs/reproduction.md from the stored records "
                        "(tables, seeds, settings, verdicts); trains nothing")
    p.add_argument("--check", action="store_true",
                   help="with --report: write nothing, exit 1 when docs/reproduction.md differs from what "
                        "the records generate")
    p.add_argument("--accounting", action="store_true",
                   help="with a paper: fill in the headline ε of the stored rows that lack it by replaying "
                        "each seed's accounting without training (needs the rows' dataset); trains nothing")
    p.add_argument("--doc", default=None, help="with --report: the document (default docs/reproduction.md)")
    p.add_argument("--quick", action="store_true",
                   help="CPU-sized: reduced rounds / clients / data, fewer tables and seeds; "
                        "results are labelled 'quick (CPU, reduced)'")
    p.add_argument("--seeds", type=int, help="repetitions per experiment (default: the paper's, fewer with --quick)")
    p.add_argument("--out", default="assets/reproduction", help="folder for <paper>.json and <paper>.md")
    p.add_argument("--tables", help="comma-separated table keys to run (default: all, or the quick ones)")
    p.add_argument("--rows", help="comma-separated row keys to run in those tables (default: all; the "
                                  "others keep what the record holds)")
    p.add_argument("--one-by-one", action="store_true",
                   help="train each run alone (default: a table's rows x seeds that share a model, data and "
                        "local training train together in lockstep, as a sweep's points do; same results)")
    p.add_argument("--no-resume", action="store_true",
                   help="retrain rows / seeds the record already holds for the same configuration")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field in every run, e.g. --set rounds=2")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="train the runs as Ray tasks: a local instance, or 'auto' / HOST:PORT / ray://HOST:PORT")
    p.set_defaults(func=cmd_reproduce)
    return p


def cmd_report(args) -> int:
    from . import document

    doc = Path(args.doc) if args.doc else document.DOC
    folder = Path(args.out) if args.out != "assets/reproduction" else None
    if not doc.is_file():
        raise FedcoreError(f"--doc {str(doc)!r}: no such file")
    if args.check:
        stale = document.check(doc, folder)
        if stale:
            print(f"{doc}: out of date with the records in blocks: {', '.join(stale)} "
                  "(run: python -m fedcore reproduce --report)")
            return 1
        print(f"{doc}: up to date with the records")
        return 0
    changed = document.write(doc, folder)
    print(f"{doc}: regenerated" + (f" ({', '.join(changed)} changed)" if changed else " (no change)"))
    return 0


def cmd_reproduce(args) -> int:
    from ..config import parse_value

    if args.report:
        if args.paper:
            raise FedcoreError("--report regenerates the document from every paper's records; name no paper")
        return cmd_report(args)
    if args.check:
        raise FedcoreError("--check goes with --report")
    if not args.paper:
        from ..papers import PAPERS

        raise FedcoreError("name a paper (" + ", ".join(sorted(PAPERS)) + ") or use --report")
    if args.accounting:
        from .run import replay_accounting

        filled = replay_accounting(args.paper, args.out, log=lambda line: print(line, flush=True))
        print(f"{args.paper}: {filled} row(s) given their headline ε; run `python -m fedcore reproduce --report` "
              "to update docs/reproduction.md")
        return 0

    extra = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FedcoreError(f"--set {item[:60]!r}: expected key=value, e.g. --set rounds=2")
        extra[key.strip()] = parse_value(value.strip(), None)
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    rows = None
    if getattr(args, "rows", None) is not None:
        rows = [r.strip() for r in args.rows.split(",") if r.strip()]
        if not rows:
            raise FedcoreError(f"--rows {shorten(args.rows)!r}: names no row; give comma-separated row keys "
                               "(leave --rows out for every row)")
    with folders_kept_if_used(args.out):
        return _reproduce(args, extra, tables, rows)


@contextlib.contextmanager
def folders_kept_if_used(out):
    """Around a command that may create the folder ``out``: the folders it created are removed again
    when it ends with them empty (a refused command, a Ray cluster that cannot be reached: no litter)."""
    created, folder = [], Path(out).absolute()
    while not folder.exists() and folder != folder.parent:
        created.append(folder)
        folder = folder.parent
    try:
        yield
    finally:
        for path in created:  # the deepest first; only an empty one goes
            with contextlib.suppress(OSError):
                path.rmdir()


def _reproduce(args, extra: dict, tables, rows) -> int:
    from .run import check_request, reproduce

    # every setting, every run's config and --out checked before any training (local or Ray)
    check_request(args.paper, quick=args.quick, seeds=args.seeds, out=args.out, tables=tables, extra=extra or None,
                  rows=rows)
    if getattr(args, "ray", None):
        from ..distributed.cli import reproduce_on_ray
        return reproduce_on_ray(args, extra, tables)
    reproduce(args.paper, quick=args.quick, seeds=args.seeds, out=args.out, tables=tables, extra=extra or None,
              log=lambda line: print(line, flush=True), rows=rows, resume=not args.no_resume,
              lockstep=not args.one_by_one)
    return 0
