"""The other axis of a frontier point: what an attacker gets (``sweep --attack``, the Frontier
page's "Attack each point").

Each finished point's config is attacked with :func:`fedcore.attacks.run.attack_run` (the
point retrained with the attack watch, then LiRA with ``shadows`` shadow runs), and the row gets
:data:`ATTACK_KEYS`: ``reidentified`` (analytic inversion), ``matched`` (the informed
adversary), their ``reidentified_chance`` and ``reidentified_cap`` (the cap the point's ε
proves), ``mia_auc``, ``mia_tpr_at_1pct_fpr`` and its ``mia_cap_tpr_at_1pct_fpr``, the
``attacker`` drawn, and ``attack_above_cap`` (a bug when true). Reference rows are attacked too:
no privacy is where the attack does best.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ..errors import FedcoreError

DEFAULT_SHADOWS = 16
"""Shadow runs per point when ``--attack`` gives none (``attack`` alone uses 64)."""
ATTACK_KEYS = ("attacker", "reidentified", "matched", "reidentified_chance", "reidentified_cap", "mia_auc",
               "mia_tpr_at_1pct_fpr", "mia_cap_tpr_at_1pct_fpr", "attack_above_cap", "attack_seconds")


def attack_columns(cfg, shadows: int) -> dict:
    """The attack's columns for one frontier row (strict JSON: None where there is no number)."""
    from ..attacks.run import attack_run

    try:
        r = attack_run(cfg, shadows=shadows)
    except FedcoreError as exc:
        return {**dict.fromkeys(ATTACK_KEYS), "attack_error": str(exc)}
    rec, mia = r["reconstruction"], r["membership"] or {}
    return {"attacker": rec["key"], "reidentified": rec["reidentified"], "matched": rec["matched"],
            "reidentified_chance": rec["chance"], "reidentified_cap": rec["dp_cap"], "mia_auc": mia.get("auc"),
            "mia_tpr_at_1pct_fpr": mia.get("tpr_at_1pct_fpr"),
            "mia_cap_tpr_at_1pct_fpr": mia.get("dp_cap_tpr_at_1pct_fpr"), "attack_above_cap": r["above_cap"],
            "attack_seconds": r["seconds"]}


def attacked(rows: Iterable[dict], points: Iterable, shadows: int,
             should_stop: Callable[[], bool] = lambda: False) -> Iterator[dict]:
    """Each row of ``rows`` with its attack's columns (the point found by the row's ``config_hash``)."""
    by_hash = {p.config.config_hash(): p for p in points}
    for row in rows:
        if should_stop():
            return
        yield {**row, **attack_columns(by_hash[row["config_hash"]].config, shadows)}
