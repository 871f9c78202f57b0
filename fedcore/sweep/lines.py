"""The line printed for each finished sweep point (the local and the Ray sweep print the same)."""
from __future__ import annotations

from ..accounting.headline import format_epsilon
from .rows import REFERENCE_LABELS, reference_of


def point_line(i: int, total: int, row: dict) -> str:
    """The line printed when a point finishes."""
    eps = REFERENCE_LABELS[reference_of(row)] if row["epsilon"] is None else f"ε={row['epsilon']:g}"
    acc = "-" if row["accuracy"] is None else f"{row['accuracy']:.4f}"
    width = len(str(total))
    return (f"[{i:>{width}}/{total}] {row['method']:<12} {eps:<11} seed {row['seed']:<3} acc {acc}  "
            f"headline ε {format_epsilon(row['epsilon_accountant'])} ({row['threat_model']})  "
            f"{row['seconds']:.2f}s" + (f"  [{row['caveat'].split(':')[0]}]" if row.get("caveat") else "")
            + attack_text(row))


def attack_text(row: dict) -> str:
    """``  attack: re-identified 12% (cap 30%), MIA TPR@1%FPR 2.0% (cap 2.7%)`` for an attacked row."""
    if "reidentified_cap" not in row:
        return ""
    if row.get("attack_error"):
        return f"  attack failed: {row['attack_error']}"
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    flag = "  ABOVE THE CAP" if row.get("attack_above_cap") else ""
    return (f"  attack ({row['attacker']}): matched {pct(row['matched'])} (chance {pct(row['reidentified_chance'])}, "
            f"cap {pct(row['reidentified_cap'])}), MIA TPR@1%FPR {pct(row['mia_tpr_at_1pct_fpr'])} "
            f"(cap {pct(row['mia_cap_tpr_at_1pct_fpr'])})"
            + ("" if row.get("worst_tpr_at_1pct_fpr") is None else f", worst-case record {pct(row['worst_tpr_at_1pct_fpr'])}")
            + flag)
