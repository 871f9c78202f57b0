"""``python -m fedcore attack``: what a realistic attacker gets from a run, beside its ε's cap.

    python -m fedcore attack --preset demo --set local.steps=1 --set local.batch_size=1 --json
    python -m fedcore attack --preset demo --set method=ldp_fl --set privacy.epsilon=1   # ε = 1 spent, proven

``privacy.epsilon`` is read as in ``sweep``: with ``--match headline`` (the default, equal
privacy) the method's budget is solved so the run's headline ε equals it; with ``--match
target`` it is the method's own knob. ``--json`` prints one object (:mod:`fedcore.attacks.run`).
Bad input: one line and exit 2, as on every command.
"""
from __future__ import annotations

import argparse
import json
from typing import Optional

from ..errors import FedcoreError


def add_attack_parser(sub) -> argparse.ArgumentParser:
    """Register the ``attack`` sub-command on ``sub``."""
    from ..sweep.spec import MATCHES

    p = sub.add_parser("attack", help="reconstruction and membership attacks on one configuration, beside the caps its ε proves",
                       description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="demo", help="start from this preset (default demo)")
    p.add_argument("--config", help="JSON file with config fields")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field")
    p.add_argument("--match", default="headline", choices=list(MATCHES),
                   help="headline (default): solve the budget so the proven ε equals privacy.epsilon; "
                        "target: privacy.epsilon is the method's own knob")
    p.add_argument("--shadows", type=int, default=64, help="shadow runs for membership inference (default 64)")
    p.add_argument("--no-membership", action="store_true", help="skip membership inference")
    p.add_argument("--budget", type=float, default=2.0,
                   help="seconds of gradient matching per image, for models without a linear first layer (default 2)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_attack)
    return p


def attack_config(preset, config_file, sets, match: str):
    """The config to attack: layered as ``run`` does, its budget solved under ``--match headline``."""
    from ..layering import build_config, read_config_file, refuse_unused_epsilon

    cfg = build_config(preset, config_file, list(sets or ()))
    refuse_unused_epsilon(cfg, sets)
    privacy = read_config_file(config_file).get("privacy") if config_file else None
    # a file that names ε without saying "mechanism": "none" itself (a whole exported config says it) meant that ε
    if isinstance(privacy, dict) and "epsilon" in privacy and "mechanism" not in privacy \
            and cfg.privacy.mechanism == "none":
        raise FedcoreError(f"--config {config_file}: privacy.epsilon {privacy['epsilon']}: "
                           f"{cfg.method or 'this config'} adds no noise (privacy.mechanism none), so no ε applies; drop it or pick a private "
                           "method, e.g. \"method\": \"dp_fedavg\"")
    if match != "headline" or cfg.privacy.mechanism == "none":
        return cfg
    from ..equal_privacy import match_headline

    return match_headline(cfg, max(cfg.privacy.epsilons(cfg.num_clients))).config


def attacked(preset, config_file, sets, match: str, shadows: Optional[int], budget: float, check=None) -> dict:
    """What ``attack --json`` prints (and :func:`fedcore.attack` returns): :func:`.run.attack_run` on
    :func:`attack_config`'s config (``shadows`` None: no membership inference; ``check(cfg)`` may refuse
    it first), with ``epsilon_per_client``: ``[{"client", "set", "spent"}]``, each client's ε as set and
    its headline ε spent (None = ∞)."""
    from ..layering import build_config
    from .membership import check_shadows
    from .run import attack_run

    if shadows is not None:
        check_shadows(shadows)
    if not 0 < budget <= 600:
        raise FedcoreError(f"--budget {budget}: must be seconds in (0, 600]")
    budgets = build_config(preset, config_file, list(sets or ())).privacy
    cfg = attack_config(preset, config_file, sets, match)
    if check is not None:
        check(cfg)
    result = attack_run(cfg, shadows=shadows, budget_s=budget)
    spent = result.pop("epsilon_headline_per_client")
    result["epsilon_per_client"] = [{"client": i, "set": float(e), "spent": h}
                                    for i, (e, h) in enumerate(zip(budgets.epsilons(cfg.num_clients), spent))]
    return result


def cmd_attack(args) -> int:
    result = attacked(args.preset, args.config, args.set, args.match, None if args.no_membership else args.shadows,
                      args.budget)
    print(json.dumps(result, allow_nan=False) if args.json else "\n".join(report_lines(result)))
    return 0


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def report_lines(r: dict) -> list[str]:
    """The human-readable report of :func:`fedcore.attacks.run.attack_run`'s result."""
    from ..accounting.headline import format_epsilon
    from .registry import of_kind

    lines = [f"threat model: {r['threat_model']}; headline ε {format_epsilon(r['epsilon_headline'])}; "
             f"accuracy {r['accuracy'] if r['accuracy'] is None else round(r['accuracy'], 4)}"]
    for a in r.get("attackers", ()):
        bound = "bounded by the run's ε" if a["bounded"] else "not bounded by any ε"
        lines.append(f"\n{a['who']} ({bound}) receives {a['received']}.")
        if not a["trials"]:
            lines.append("  no update reached it")
            continue
        found = ", ".join(f"{_pct(a[x.result])} ({x.name})" for x in of_kind("reconstruction") if x.result)
        lines.append(f"  re-identified {found} over {a['trials']} updates; chance {_pct(a['chance'])}, at most "
                     f"{_pct(a['dp_cap'])} proven (ε {format_epsilon(a.get('cap_epsilon'))} for its game: "
                     f"{a.get('cap_game_words') or 'none'}; the whole run's {format_epsilon(a.get('run_cap_epsilon'))})")
        if a.get("psnr_db") is not None:
            lines.append(f"  PSNR {a['psnr_db']:.1f} dB; labels recovered {_pct(a['labels_recovered'])} "
                         f"(chance {_pct(a['label_chance'])}); {a['images_used']:.1f} images per update")
        if a["above_cap"]:
            lines.append("  ABOVE THE CAP: the mechanism adds less noise than its accounting says (a bug)")
    m = r.get("membership")
    for key, head in (("membership", "membership (LiRA, {shadows} shadow runs, {pairs} guesses): AUC {auc:.3f}; "),
                      ("rmia", "membership (RMIA, the same shadow runs): AUC {auc:.3f}; "),
                      ("worst_case", "worst-case record (one upload, {pairs} draws): ")):
        x = r.get(key)
        if x:
            allows = {k: "" if key == "rmia" else f" (ε allows {_pct(x[f'dp_cap_{k}'])})" for k in ("tpr_at_1pct_fpr", "tpr_at_0_1pct_fpr")}
            lines.append(("\n" if key == "membership" else "") + head.format(**x) + f"TPR at 1 % FPR {_pct(x['tpr_at_1pct_fpr'])}"
                         f"{allows['tpr_at_1pct_fpr']}, at 0.1 % FPR {_pct(x['tpr_at_0_1pct_fpr'])}{allows['tpr_at_0_1pct_fpr']}"
                         + ("; ABOVE THE CAP (a bug)" if x["above_cap"] else ""))
    if not r.get("worst_case") and m and r.get("worst_case_note"):
        lines.append(f"worst-case record: not played here; {r['worst_case_note']}")
    spent = [c for c in r.get("epsilon_per_client") or [] if c["spent"] is not None]
    if len({c["set"] for c in spent}) > 1:
        lines.append("\nε per client, set → spent: " + ", ".join(
            f"{format_epsilon(c['set'])} → {format_epsilon(c['spent'])}" for c in spent))
    lines.append(f"\n{r['seconds']:.1f} s")
    return lines
