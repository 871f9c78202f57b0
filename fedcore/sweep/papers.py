"""The papers' reported accuracies that belong on a frontier (:mod:`fedcore.papers`).

A paper point matches a sweep when the sweep's preset is one of the rows of a paper's
table (e.g. ``ldp_fl_mnist_eps1``): every row of that table with a reported accuracy
becomes a point, at the ε the paper states (its *claim*, not our headline ε; the page
labels it so), or as a no-privacy line when the row adds no noise.
"""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=64)
def _points(preset: str) -> tuple:
    from ..resolve import preset_config
    from ..papers import PAPERS

    out = []
    for paper in PAPERS.values():
        for table in paper.tables:
            if preset not in {row.preset for row in table.rows}:
                continue
            for row in table.rows:
                if row.paper is None:
                    continue
                cfg = preset_config(row.preset)
                private = cfg.privacy.mechanism != "none"
                eps = cfg.privacy.epsilon
                if private and len(set(eps)) != 1:
                    continue  # personalized budgets have no single ε to place
                out.append({"method": cfg.method or row.label, "epsilon": float(eps[0]) if private else None,
                            "accuracy": float(row.paper), "label": f"{paper.title} — {row.label}",
                            "source": paper.source})
    return tuple(out)


def paper_points(preset: str) -> list[dict]:
    """``[{"method", "epsilon" (None = no privacy), "accuracy", "label", "source"}]`` for ``preset``."""
    return [dict(p) for p in _points(preset)]
