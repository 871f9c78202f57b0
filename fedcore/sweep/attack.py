"""The other axis of a frontier point: what an attacker gets (``sweep --attack``, the Frontier
page's "Attack each point").

Each finished point's config is attacked with :func:`fedcore.attacks.run.attack_run` (the
point retrained with the attack watch, then LiRA with ``shadows`` shadow runs), and the row gets
:data:`ATTACK_KEYS` (:func:`attack_columns`): each attack's success beside the cap the point's ε
proves for its game, that cap's ε and game, and ``attack_above_cap`` (a bug when true); ``worst_*``
is the worst-case record's membership in one upload (local threat model only,
:mod:`fedcore.attacks.worst_case`). Reference rows are attacked too: no privacy is where the attack does best.

For the membership ROC on log-log axes (:data:`ROC_KEYS`): ``mia_roc`` and ``rmia_roc`` (LiRA's and
RMIA's ``roc_log`` thinned to :data:`ROC_POINTS` log-spaced corners), ``mia_cap_curve`` (the cap at
:data:`fedcore.attacks.membership.CURVE_FPR`), TPR at 0.1 % FPR and its cap, RMIA's TPRs and AUC;
:func:`membership_of` turns a row back into the ``{"membership", "rmia"}`` blocks a ROC figure draws.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from ..errors import FedcoreError

DEFAULT_SHADOWS = 16
"""Shadow runs per point when ``--attack`` gives none (``attack`` alone uses 64)."""
ATTACK_KEYS = ("attacker", "reidentified", "matched", "reidentified_chance", "reidentified_cap", "mia_auc",
               "mia_tpr_at_1pct_fpr", "mia_cap_tpr_at_1pct_fpr", "worst_tpr_at_1pct_fpr", "worst_cap_tpr_at_1pct_fpr",
               "reidentified_cap_game", "reidentified_cap_epsilon", "mia_cap_game", "mia_cap_epsilon",
               "worst_cap_epsilon", "attack_above_cap", "attack_seconds")
ROC_KEYS = ("mia_tpr_at_0_1pct_fpr", "mia_cap_tpr_at_0_1pct_fpr", "mia_roc", "mia_cap_curve", "rmia_auc",
            "rmia_tpr_at_0_1pct_fpr", "rmia_tpr_at_1pct_fpr", "rmia_roc", "mia_shadows", "mia_pairs")
"""The membership ROC's columns (module doc), added beside :data:`ATTACK_KEYS`."""
ROC_POINTS = 48


def attack_columns(cfg, shadows: int) -> dict:
    """The attack's columns for one frontier row (strict JSON: None where there is no number)."""
    from ..attacks.run import attack_run

    try:
        r = attack_run(cfg, shadows=shadows)
    except FedcoreError as exc:
        return {**dict.fromkeys(ATTACK_KEYS), **dict.fromkeys(ROC_KEYS), "attack_error": str(exc)}
    rec, mia, worst = r["reconstruction"], r["membership"] or {}, r["worst_case"] or {}
    return {**roc_columns(mia, r["rmia"] or {}), "attacker": rec["key"], "reidentified": rec["reidentified"], "matched": rec["matched"],
            "reidentified_chance": rec["chance"], "reidentified_cap": rec["dp_cap"], "mia_auc": mia.get("auc"),
            "mia_tpr_at_1pct_fpr": mia.get("tpr_at_1pct_fpr"),
            "mia_cap_tpr_at_1pct_fpr": mia.get("dp_cap_tpr_at_1pct_fpr"),
            "worst_tpr_at_1pct_fpr": worst.get("tpr_at_1pct_fpr"),
            "worst_cap_tpr_at_1pct_fpr": worst.get("dp_cap_tpr_at_1pct_fpr"),
            "reidentified_cap_game": rec.get("cap_game"), "reidentified_cap_epsilon": rec.get("cap_epsilon"),
            "mia_cap_game": mia.get("cap_game"), "mia_cap_epsilon": mia.get("cap_epsilon"),
            "worst_cap_epsilon": worst.get("cap_epsilon"), "attack_above_cap": r["above_cap"],
            "attack_seconds": r["seconds"]}


def _thin(roc: dict, points: int = ROC_POINTS) -> Optional[dict]:
    """``roc`` (``{"fpr", "tpr"}``, FPR ascending) at about ``points`` log-spaced FPRs (the last corner not
    above each, and the reported levels), 4 significant digits; None for none."""
    import math

    import numpy as np

    from ..attacks.membership import LEVELS

    fpr, tpr = np.asarray(roc.get("fpr") or []), np.asarray(roc.get("tpr") or [])
    if not len(fpr):
        return None
    low = fpr[fpr > 0].min() if (fpr > 0).any() else 1.0
    grid = np.concatenate([np.logspace(math.log10(low), 0.0, points), LEVELS])
    keep = np.unique(np.concatenate([[0, len(fpr) - 1], np.clip(np.searchsorted(fpr, grid, side="right") - 1, 0, None)]))
    return {"fpr": [float(f"{v:.4g}") for v in fpr[keep]], "tpr": [float(f"{v:.4g}") for v in tpr[keep]]}


def roc_columns(mia: dict, rmia: dict) -> dict:
    """The :data:`ROC_KEYS` of one attacked point, from its LiRA and RMIA blocks (the attack JSON's)."""
    curve = (mia.get("cap_curve") or {}).get("tpr")
    return {"mia_tpr_at_0_1pct_fpr": mia.get("tpr_at_0_1pct_fpr"),
            "mia_cap_tpr_at_0_1pct_fpr": mia.get("dp_cap_tpr_at_0_1pct_fpr"),
            "mia_roc": _thin(mia.get("roc_log") or mia.get("roc") or {}),
            "mia_cap_curve": [float(f"{v:.4g}") for v in curve] if curve else None,
            "rmia_auc": rmia.get("auc"), "rmia_tpr_at_0_1pct_fpr": rmia.get("tpr_at_0_1pct_fpr"),
            "rmia_tpr_at_1pct_fpr": rmia.get("tpr_at_1pct_fpr"),
            "rmia_roc": _thin(rmia.get("roc_log") or rmia.get("roc") or {}),
            "mia_shadows": mia.get("shadows"), "mia_pairs": mia.get("pairs")}


def membership_of(row: dict) -> Optional[dict]:
    """``{"membership": ..., "rmia": ...}`` of an attacked row with :data:`ROC_KEYS`, in the keys of
    :class:`fedcore.attacks.membership.Membership` that a ROC figure and its table read; None without them."""
    from ..attacks.membership import CURVE_FPR

    if not row.get("mia_roc"):
        return None
    cap = {"cap_curve": {"fpr": list(CURVE_FPR), "tpr": row["mia_cap_curve"]}} if row.get("mia_cap_curve") else {}
    common = {"dp_cap_tpr_at_0_1pct_fpr": row.get("mia_cap_tpr_at_0_1pct_fpr"),
              "dp_cap_tpr_at_1pct_fpr": row.get("mia_cap_tpr_at_1pct_fpr"), "cap_epsilon": row.get("mia_cap_epsilon"),
              "cap_game": row.get("mia_cap_game"), "shadows": row.get("mia_shadows"), "pairs": row.get("mia_pairs"), **cap}
    out = {"membership": {**common, "roc_log": row["mia_roc"], "auc": row.get("mia_auc"),
                          "tpr_at_0_1pct_fpr": row.get("mia_tpr_at_0_1pct_fpr"),
                          "tpr_at_1pct_fpr": row.get("mia_tpr_at_1pct_fpr")}}
    if row.get("rmia_roc"):
        out["rmia"] = {**common, "roc_log": row["rmia_roc"], "auc": row.get("rmia_auc"),
                       "tpr_at_0_1pct_fpr": row.get("rmia_tpr_at_0_1pct_fpr"),
                       "tpr_at_1pct_fpr": row.get("rmia_tpr_at_1pct_fpr")}
    return out


def attack_summary(rows: Iterable[dict]) -> list[dict]:
    """The seed means of the attacked rows, one per (method, column ε, reference): ``headline``,
    ``matched``, ``reidentified``, ``chance``, ``cap`` (re-identification's) and its ``cap_epsilon``,
    ``mia_tpr``, ``mia_cap``, ``mia_cap_epsilon``, ``mia_auc``, ``worst_tpr``, ``worst_cap``,
    ``above_cap`` (any seed) and ``n`` (seeds); the Frontier's attack panels."""
    groups: dict = {}
    for r in rows:
        if r.get("reidentified_cap") is None:
            continue
        groups.setdefault((r["method"], r["epsilon"], r.get("reference") or ""), []).append(r)

    def mean(items, key):
        values = [float(i[key]) for i in items if i.get(key) is not None]
        return sum(values) / len(values) if values else None

    out = []
    for (method, eps, ref), items in groups.items():
        out.append({"method": method, "epsilon": eps, "reference": ref, "threat_model": items[0]["threat_model"],
                    "headline": mean(items, "epsilon_accountant"), "matched": mean(items, "matched"),
                    "reidentified": mean(items, "reidentified"), "chance": mean(items, "reidentified_chance"),
                    "cap": mean(items, "reidentified_cap"), "mia_tpr": mean(items, "mia_tpr_at_1pct_fpr"),
                    "mia_cap": mean(items, "mia_cap_tpr_at_1pct_fpr"), "mia_auc": mean(items, "mia_auc"),
                    "worst_tpr": mean(items, "worst_tpr_at_1pct_fpr"),
                    "worst_cap": mean(items, "worst_cap_tpr_at_1pct_fpr"),
                    "cap_epsilon": mean(items, "reidentified_cap_epsilon"),
                    "mia_cap_epsilon": mean(items, "mia_cap_epsilon"),
                    "above_cap": any(i.get("attack_above_cap") for i in items), "n": len(items)})
    return out


STORED = Path(__file__).resolve().parents[2] / "assets" / "frontier" / "attacks.json"
"""The attacked frontier shipped with the app (the Frontier page shows it until a sweep is attacked)."""
STORED_COMMAND = ("python -m fedcore sweep --preset demo --attack 16 --match headline --epsilons 1,10,100,1000,10000 "
                  "--seeds 2 --set local.steps=1 --set local.batch_size=1 --out assets/frontier/attacks.json")


def stored_rows() -> list[dict]:
    """The rows of :data:`STORED` ([] when it cannot be read)."""
    import json

    try:
        return list(json.loads(STORED.read_text(encoding="utf-8"))["rows"])
    except (OSError, ValueError, KeyError, TypeError):
        return []
