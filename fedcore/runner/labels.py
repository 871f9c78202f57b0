"""Short human names for runs (the History list, chart legends, the Compare picker)."""
from __future__ import annotations

from ..config import RunConfig


def epsilon_summary(epsilon: tuple[float, ...] | list[float]) -> str:
    """``"ε=1"`` for one budget, ``"ε∈[1, 10]"`` for personalised budgets."""
    values = sorted(set(float(e) for e in epsilon))
    if len(values) == 1:
        return f"ε={values[0]:g}"
    return f"ε∈[{values[0]:g}, {values[-1]:g}]"


def run_label(cfg: RunConfig, *, with_seed: bool = True) -> str:
    """E.g. ``"fedavg · digits/logreg · 10 clients · 20 rounds · seed 0"``.

    The method name when a recipe is set, else ``mechanism+aggregator``; the budget is
    left out when the mechanism adds no noise (``none``).
    """
    p = cfg.privacy
    name = cfg.method or f"{p.mechanism}+{p.aggregator}"
    parts = [name, f"{cfg.dataset}/{cfg.model}", f"{cfg.num_clients} clients", f"{cfg.rounds} rounds"]
    if p.mechanism != "none":
        parts.insert(1, epsilon_summary(p.epsilon))
    if with_seed:
        parts.append(f"seed {cfg.seed}")
    return " · ".join(parts)
