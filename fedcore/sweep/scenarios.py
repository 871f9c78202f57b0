"""Frontier scenarios: the settings in which each paper's idea makes a difference.

A method's idea only shows where its premise holds: PLDP-FL's rules differ only when
clients have different budgets, HW-DPFL's Hellinger weights only when label histograms
differ. A scenario names such a setting, the methods it compares and the idea it
exercises (``python -m fedcore sweep --scenario NAME``, one click on the Frontier page).

- ``iid``: the demo as it is: equal budgets, IID clients; compares the papers' noise
  mechanisms and threat models.
- ``personalized``: clients in ε tiers as in PLDP-FL's experiments (L/M/H = 10 %, 50 % and
  100 % of the column's ε, in fractions 30/40/30), where rules A, B, C and the B-IVW and
  C-max ablations weight or pick clients differently.
- ``mixed_noniid``: HW-DPFL's split (80 % IID clients, the rest two classes each), where
  the Hellinger weights are not uniform; HW-DPFL against the same noise averaged by FedAvg.

>>> SCENARIOS["personalized"].budgets(10.0, 10)
[1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 10.0, 10.0, 10.0]
>>> SCENARIOS["iid"].budgets(10.0, 4)
[10.0]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import ConfigError

DEFAULT_EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
"""The ε columns of a sweep whose scenario names none."""
DEFAULT_METHODS = ("ldp_fl", "pldp_b", "hw_dpfl", "kdp_fl", "dp_fedavg")
"""The five one-click private methods of the dashboard (one per paper)."""


@dataclass(frozen=True)
class Scenario:
    """``sets``: ``--set`` overrides every run gets (after the method's recipe);
    ``tiers``: (fractions of the column's ε, shares of clients), None = one ε for all; ``epsilons``: the
    default columns, reaching where the scenario's idea shows (measured: docs/benchmarks.md, "Each paper's
    idea where it shows")."""

    title: str
    exercises: str
    methods: tuple[str, ...]
    sets: tuple[str, ...] = ()
    tiers: Optional[tuple[tuple[float, ...], tuple[float, ...]]] = None
    epsilons: tuple[float, ...] = DEFAULT_EPSILONS

    def budgets(self, epsilon: float, num_clients: int) -> list[float]:
        """The per-client ``privacy.epsilon`` of a point whose column is ``epsilon``."""
        if self.tiers is None:
            return [float(epsilon)]
        from ..budgets import tiered_epsilons

        levels, shares = self.tiers
        return tiered_epsilons(num_clients, [epsilon * f for f in levels], shares)


SCENARIOS: dict[str, Scenario] = {
    "iid": Scenario(
        "IID clients, one budget", "the papers' noise mechanisms and who each one trusts (all five papers)",
        DEFAULT_METHODS),
    "personalized": Scenario(
        "Personalized budgets in tiers", "PLDP-FL's aggregation rules A, B and C, and the B-IVW and C-max "
        "ablations: clients hold 10 %, 50 % or 100 % of the column's ε (30/40/30)",
        ("pldp_a", "pldp_b", "pldp_c", "pldp_b_ivw", "pldp_c_max"), tiers=((0.1, 0.5, 1.0), (0.3, 0.4, 0.3)),
        epsilons=(1.0, 10.0, 100.0, 1000.0, 10000.0)),
    "mixed_noniid": Scenario(
        "Mixed non-IID clients", "HW-DPFL's Hellinger weights: 80 % of clients IID, the rest two classes each; "
        "HW-DPFL against the same noise averaged by FedAvg", ("hw_dpfl", "hw_fedavg"),
        sets=("partition.kind=mixed",), epsilons=(1.0, 10.0, 100.0, 1000.0, 10000.0)),
}


def get_scenario(name: str) -> Scenario:
    """The scenario ``name``; a bad name is a :class:`ConfigError` listing the known ones."""
    if name not in SCENARIOS:
        raise ConfigError("scenario", name, "must be one of: " + ", ".join(SCENARIOS))
    return SCENARIOS[name]
