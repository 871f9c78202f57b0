"""The ``audit`` subcommand: ``python -m fedcore audit --preset NAME [--set ...] [--trials N]``.

Prints the paper's claimed eps, the accountant's eps and the audited lower bound (with its
confidence), and writes them as JSON (:meth:`fedcore.audit.run.AuditResult.to_dict`).

Every number is bounded and checked before any work (:func:`check_args`): a bad one is one
line and exit 2, never a traceback or an allocation the machine cannot hold; an option the
chosen audit does not use (``--trials`` / ``--dim`` on a canary audit, ``--canaries`` /
``--unit`` on a distinguishing one) is refused rather than ignored; ``--out`` is checked to be
writable before the audit starts.
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
    p.add_argument("--trials", type=int, help=f"draws per input of the distinguishing audit (default {DEFAULT_TRIALS}; "
                                                f"{MIN_TRIALS} to {MAX_TRIALS:,})")
    p.add_argument("--canaries", type=int, help=f"canaries in the one-run audit, half inserted (default "
                                                f"{DEFAULT_CANARIES}; {MIN_CANARIES} to {MAX_CANARIES:,})")
    p.add_argument("--kind", default="auto", choices=KINDS, help="which audit (auto: from the threat model)")
    p.add_argument("--unit", choices=("client", "record"), help="canary unit (default: from the threat model)")
    p.add_argument("--dim", type=int, help=f"parameters of the audited report (default: the model's; at most {MAX_DIM:,})")
    p.add_argument("--client", type=int, help="client whose budget is audited (default: the largest)")
    p.add_argument("--seed", type=int, default=0, help="seed of the audit's draws")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound")
    p.add_argument("--out", default="audit.json", help="JSON file to write (default audit.json)")
    p.set_defaults(func=cmd_audit)
    return p


DEFAULT_TRIALS, MIN_TRIALS, MAX_TRIALS = 20000, 8, 100_000_000
DEFAULT_CANARIES, MIN_CANARIES, MAX_CANARIES = 200, 20, 10_000
MAX_DIM = 100_000_000
MAX_SEED = 2**32 - 1
MAX_CANARY_NUMBERS = 250_000_000
"""canaries x model parameters at most: the canary directions are drawn as one float64 matrix
(2 GB at this bound)."""


def check_args(args, cfg) -> tuple[str, int, int]:
    """Bounds on every number of ``args`` and the options the audit of ``cfg`` will use, checked
    before any data is loaded; ``(kind, trials, canaries)`` with the defaults filled in.
    Raises :class:`ConfigError` naming the option."""
    from ..data import dataset_facts
    from ..models import model_parameters
    from .distinguish import MAX_ELEMENTS, PROBES
    from .run import threat_model_of

    for name, value, low, high in (("--trials", args.trials, MIN_TRIALS, MAX_TRIALS),
                                   ("--canaries", args.canaries, MIN_CANARIES, MAX_CANARIES),
                                   ("--dim", args.dim, 1, MAX_DIM), ("--seed", args.seed, 0, MAX_SEED),
                                   ("--client", args.client, 0, cfg.num_clients - 1)):
        if value is not None and not low <= value <= high:
            raise ConfigError(name, value, f"must be an integer in [{low:,}, {high:,}]")
    if not (0.5 <= args.confidence < 1):       # NaN too
        raise ConfigError("--confidence", args.confidence, "must be a number in [0.5, 1)")
    kind = args.kind
    if kind == "auto":
        local = threat_model_of(cfg) == "local"
        kind = "distinguishing" if local and cfg.privacy.mechanism in PROBES else "canary"
    unused = (("--trials", args.trials), ("--dim", args.dim)) if kind == "canary" else \
        (("--canaries", args.canaries), ("--unit", args.unit))
    for name, value in unused:
        if value is not None:
            raise ConfigError(name, value, f"is not used by the {kind} audit this configuration gets "
                                           f"(mechanism {cfg.privacy.mechanism}); drop it, or pick the audit "
                                           "with --kind")
    trials = DEFAULT_TRIALS if args.trials is None else args.trials
    canaries = DEFAULT_CANARIES if args.canaries is None else args.canaries
    facts = dataset_facts(cfg.dataset)
    params = args.dim or (model_parameters(cfg.model, facts.input_shape, facts.num_classes) if facts else None)
    if params and kind == "distinguishing" and 2 * trials * params > MAX_ELEMENTS:
        raise ConfigError("--trials", trials, f"x {params:,} parameters is more than one audit draws "
                          f"({MAX_ELEMENTS:.0e} numbers); lower --trials or audit a smaller report with --dim")
    if params and kind == "canary" and canaries * params > MAX_CANARY_NUMBERS:
        raise ConfigError("--canaries", canaries, f"x {params:,} model parameters is more canary numbers than "
                          f"this audit holds ({MAX_CANARY_NUMBERS:.1e}); lower --canaries")
    _check_writable(args.out)
    return kind, trials, canaries


def _check_writable(path: str) -> None:
    """``path`` can be written (tried: an existing file opened for appending, else created and
    removed), or ConfigError naming ``--out``: before the audit, not after it."""
    out = Path(path)
    try:
        if out.exists():
            if out.is_dir():
                raise IsADirectoryError(21, "a folder")
            with open(out, "a"):
                pass
        else:
            with open(out, "x"):
                pass
            out.unlink()
    except OSError as exc:
        raise ConfigError("--out", path, f"must be a file this user can write ({exc.strerror or 'cannot write'})") \
            from None


def _fmt(x) -> str:
    return "—" if x is None else ("∞" if math.isinf(x) else f"{x:.4g}")


def cmd_audit(args) -> int:
    from ..layering import build_config
    from .run import audit_run

    cfg = build_config(args.preset, args.config, args.set or [])
    kind, trials, canaries = check_args(args, cfg)
    result = audit_run(cfg, trials=trials, canaries=canaries, kind=kind, unit=args.unit,
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
