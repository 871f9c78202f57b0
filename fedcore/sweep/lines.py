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
            f"{row['seconds']:.2f}s" + (f"  [{row['caveat'].split(':')[0]}]" if row.get("caveat") else ""))
