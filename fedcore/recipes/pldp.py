"""PLDP-FL's three aggregation rules on IID data (seed 000, Sec. 3-5; METHODS section 1).

Every client perturbs its element-wise clipped update with the ``gaussian`` mechanism
(sigma_i from its personal eps_i over R rounds); the server then applies

========  =================  ==================================================
method    aggregator         rule
========  =================  ==================================================
pldp_a    ``mean``           A: arithmetic mean of the uploads
pldp_b    ``weighted``       B: weights alpha_i = rho_i / sum_j rho_j, rho_i = 1/sigma_i
pldp_c    ``probabilistic``  C: select clients with P_i = rho_i / sum_j rho_j > omega
========  =================  ==================================================

and two ablations (the project's, not the paper's): ``pldp_b_ivw`` weights by
1/sigma_i^2 (the minimum-variance weights), ``pldp_c_max`` normalizes rule C's P_i by the
largest rho_j instead of the sum.

The rules only differ under *personalized* budgets: set ``privacy.epsilon`` to one value
per client (paper: e.g. {1, 5, 10} for 3 MNIST clients). The non-IID variant swaps the
mechanism for ``ldp_sign`` (``--set privacy.mechanism=ldp_sign``).
"""
from __future__ import annotations

from ..methods import register_method

PAPER = "PLDP-FL (seed 000)"
_RULES = {
    "pldp_a": ("mean", "PLDP-FL rule A: personalized Gaussian noise, arithmetic mean."),
    "pldp_b": ("weighted", "PLDP-FL rule B: personalized Gaussian noise, mean weighted by 1/sigma_i."),
    "pldp_c": ("probabilistic", "PLDP-FL rule C: personalized Gaussian noise, clients selected with P_i ~ 1/sigma_i."),
}

for _name, (_aggregator, _summary) in _RULES.items():
    register_method(_name, summary=_summary, paper=PAPER,
                    overrides={"privacy.mechanism": "gaussian", "privacy.aggregator": _aggregator})

register_method("pldp_b_ivw", summary="Ablation B-IVW of PLDP-FL rule B: weights ~ 1/sigma_i^2 (inverse variance).",
                paper=PAPER, overrides={"privacy.mechanism": "gaussian", "privacy.aggregator": "weighted",
                                        "privacy.aggregator_options": {"weights": "inverse_variance"}})
register_method("pldp_c_max", summary="Ablation C-max of PLDP-FL rule C: P_i = rho_i / max_j rho_j.",
                paper=PAPER, overrides={"privacy.mechanism": "gaussian", "privacy.aggregator": "probabilistic",
                                        "privacy.aggregator_options": {"normalize": "max"}})
