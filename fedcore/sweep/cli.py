"""``python -m fedcore sweep``: an ε sweep to ``frontier.json``.

    python -m fedcore sweep --preset demo [--methods ldp_fl,pldp_b] \\
        --epsilons 0.1,0.3,1,3,10,30,100 --seeds 3 [--set KEY=VALUE ...] --out frontier.json

Every point is calibrated and built before the first trains (:func:`.job.checked_groups`, the
page's check). Prints one line per finished point, then the mean ± std table. Invalid input
(a point that cannot run included) exits 2 with one line naming the field (``fedcore.cli.main``'s
error handling).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import FedcoreError
from .lines import point_line


def add_sweep_parser(sub) -> argparse.ArgumentParser:
    """Register the ``sweep`` sub-command on ``sub`` (an argparse sub-parsers object)."""
    from .attack import DEFAULT_SHADOWS
    from .audit import DEFAULT_TRIALS
    from .scenarios import SCENARIOS
    from .spec import DEFAULT_EPSILONS, MATCHES

    p = sub.add_parser("sweep", help="accuracy vs ε for several methods and seeds -> frontier.json",
                       description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="demo", help="start every method from this preset (default demo)")
    p.add_argument("--methods", default="",
                   help="comma-separated methods (default: the scenario's; iid: ldp_fl,pldp_b,hw_dpfl,kdp_fl,dp_fedavg)")
    p.add_argument("--scenario", default="iid", choices=list(SCENARIOS),
                   help="where each paper's idea matters: " + "; ".join(f"{k}: {v.title}" for k, v in SCENARIOS.items()))
    p.add_argument("--match", default="headline", choices=list(MATCHES),
                   help="headline: solve each method's budget so its proven (headline) ε equals the column's ε "
                        "(equal privacy); target: write the column's ε into privacy.epsilon, each method reading "
                        "it its own way (default %(default)s)")
    p.add_argument("--epsilons", default=None,
                   help="comma-separated target ε values (default: the scenario's; iid: "
                        + ",".join(f"{e:g}" for e in DEFAULT_EPSILONS) + "; personalized and mixed_noniid: "
                        + ",".join(f"{e:g}" for e in SCENARIOS["personalized"].epsilons) + ")")
    p.add_argument("--seeds", default="3", help="number of seeds (from the config's seed up) or a list, e.g. 0,1,2")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field in every run")
    p.add_argument("--no-reference", action="store_true", help="skip the no-privacy and clip-only reference rows")
    p.add_argument("--one-by-one", action="store_true",
                   help="train the points one after another instead of in lockstep batches")
    p.add_argument("--out", default="frontier.json", help="output file (default %(default)s)")
    p.add_argument("--audit", nargs="?", type=int, const=DEFAULT_TRIALS, metavar="TRIALS",
                   help=f"add an audited ε lower bound to every point (default {DEFAULT_TRIALS} draws per input; slow)")
    p.add_argument("--attack", nargs="?", type=int, const=DEFAULT_SHADOWS, metavar="SHADOWS",
                   help="attack every point: reconstruction from its updates and membership inference with "
                        f"SHADOWS shadow runs (default {DEFAULT_SHADOWS})")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="train the batches as Ray tasks: a local instance, or 'auto' / HOST:PORT / ray://HOST:PORT")
    p.set_defaults(func=cmd_sweep)
    return p


def cmd_sweep(args) -> int:
    from ..attacks.membership import check_shadows
    from .audit import check_trials
    from .job import checked_groups
    from .rows import rows_to_resume, summary_table, write_frontier
    from .runner import run_groups
    from .spec import SweepSpec

    spec = SweepSpec(preset=args.preset, methods=args.methods, epsilons=args.epsilons, seeds=args.seeds,
                     sets=tuple(args.set or ()), reference=not args.no_reference, match=args.match,
                     scenario=args.scenario)
    audit = 0 if args.audit is None else check_trials(args.audit, zero_ok=False)
    attack = 0 if args.attack is None else check_shadows(args.attack)
    if (audit or attack) and getattr(args, "ray", None):
        raise FedcoreError(f"--{'audit' if audit else 'attack'}: not with --ray (the cluster's tasks train only); "
                           "run it here")
    folder = Path(args.out).resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise FedcoreError(f"--out {args.out}: cannot write to the folder {folder}")
    kept = {r.get("config_hash"): r for r in rows_to_resume(args.out)}  # refused here, before any training
    total = spec.count()
    refs = " + no privacy, clip only" if spec.reference else ""
    print(f"sweep: {total} runs ({', '.join(spec.methods)}; {spec.match} ε "
          f"{','.join(f'{e:g}' for e in spec.epsilons)}{refs}; scenario {spec.scenario})"
          f"{f'; each audited with {audit} draws per input' if audit else ''}"
          f"{f'; each attacked ({attack} shadow runs)' if attack else ''}"
          + ("; each method's budget is solved for before its runs" if spec.match == "headline" else ""), flush=True)
    groups = checked_groups(spec)  # every point calibrated and built: one that cannot run exits 2 before any trains
    if getattr(args, "ray", None):
        from ..distributed.cli import sweep_on_ray
        return sweep_on_ray(args, spec, [p for group in groups for p in group])
    rows: list[dict] = []

    def to_train(groups):  # each group's points not in --out yet; the rows of those that are join `rows`
        for group in groups:
            rows.extend(kept.pop(h) for h in [p.config.config_hash() for p in group] if h in kept)
            yield [p for p in group if p.config.config_hash() not in done]

    done = set(kept)
    for row in run_groups(to_train(groups), batched=not args.one_by_one, audit=audit, attack=attack):
        rows.append(row)
        print(point_line(len(rows), total, row), flush=True)
        write_frontier(args.out, rows + list(kept.values()))  # not yet reached: kept until the end
    skipped = len(done) - len(kept)
    if skipped or kept:
        print(f"skipped {skipped} point(s) already in {args.out}"
              + (f"; dropped {len(kept)} row(s) of other configs" if kept else ""))
    write_frontier(args.out, rows)
    print()
    print(summary_table(rows))
    print(f"\nwrote {len(rows)} rows to {args.out}")
    return 0
