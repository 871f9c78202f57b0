"""The ``audit`` subcommand: ``python -m fedcore audit --preset NAME [--set ...] [--trials N]``.

Prints the paper's claimed eps, the accountant's eps and the audited lower bound (with its
confidence), and writes them as JSON (:meth:`fedcore.audit.run.AuditResult.to_dict`).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from ..errors import ConfigError


def add_audit_parser(sub) -> argparse.ArgumentParser:
    from .run import KINDS

    p = sub.add_parser("audit", help="empirical eps lower bound next to the accountant's and the paper's eps",
                       description="Audit a configuration's privacy: local mechanisms by a distinguishing test "
                                   "on one report, central / record-level ones by canaries in one training run.")
    p.add_argument("--preset", help="start from a named preset (see `list`)")
    p.add_argument("--config", help="JSON file with config fields")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field")
    p.add_argument("--trials", type=int, default=20000, help="draws per input of the distinguishing audit")
    p.add_argument("--canaries", type=int, default=200, help="canaries in the one-run audit (half inserted)")
    p.add_argument("--kind", default="auto", choices=KINDS, help="which audit (auto: from the threat model)")
    p.add_argument("--unit", choices=("client", "record"), help="canary unit (default: from the threat model)")
    p.add_argument("--dim", type=int, help="parameters of the audited report (default: the model's)")
    p.add_argument("--client", type=int, help="client whose budget is audited (default: the largest)")
    p.add_argument("--seed", type=int, default=0, help="seed of the audit's draws")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound")
    p.add_argument("--out", default="audit.json", help="JSON file to write (default audit.json)")
    p.set_defaults(func=cmd_audit)
    return p


def _fmt(x) -> str:
    return "—" if x is None else ("∞" if math.isinf(x) else f"{x:.4g}")


def cmd_audit(args) -> int:
    from ..layering import build_config
    from .run import audit_run

    for name, value, low in (("--trials", args.trials, 8), ("--canaries", args.canaries, 20)):
        if value < low:
            raise ConfigError(name, value, f"must be an integer >= {low}")
    cfg = build_config(args.preset, args.config, args.set or [])
    result = audit_run(cfg, trials=args.trials, canaries=args.canaries, kind=args.kind, unit=args.unit,
                       dim=args.dim, client=args.client, seed=args.seed, confidence=args.confidence)
    r = result
    print(f"audit of {cfg.method or cfg.privacy.mechanism} ({r.mechanism}, threat model {r.threat_model}): "
          f"{r.kind}; scope: {r.scope}; delta = {r.delta:.3g}")
    claim = f"{_fmt(r.paper_claim)}  [{r.paper_claim_label}]" if r.paper_claim is not None else "— (none stated)"
    print(f"  paper's claim      eps = {claim}")
    print(f"  accountant (upper) eps = {_fmt(r.accountant_epsilon)}  [{r.accountant_basis}]")
    ceiling = f"; the most these draws can show is {_fmt(r.ceiling)}" if r.ceiling is not None else ""
    estimate = f"; {r.estimate_basis}: {_fmt(r.audited_estimate)}" if r.audited_estimate is not None else ""
    print(f"  audited (lower)    eps >= {_fmt(r.audited_epsilon)}  with {r.confidence:.0%} confidence "
          f"({r.kind}{ceiling}{estimate})")
    print(f"  {r.verdict()}  ({r.seconds:.1f} s)")
    payload = {"preset": args.preset, "config": cfg.to_dict(), **r.to_dict()}
    Path(args.out).write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    print(f"wrote {args.out}")
    return 0
