"""ULDP-FED's method and its ablations (seed 004, Table 2; METHODS section 5).

All six use the ``uldp_gaussian`` mechanism with the ``uldp`` aggregator, Poisson user
sampling with q = 0.1, C_0 = 2, r = 50 and, where it applies, beta = 0.06; the central
reading (each sampled user adds N(0, z^2 C_k^2 / |U^t|), z from dp-accounting for the
user-level budget: threat model *central*, trusted aggregator or secure aggregation) and
the automatic recall threshold (2 standard deviations below chance; the paper's 0.25 /
0.006 never / always fire, docs/reproduction.md). ``--set
privacy.mechanism_options.reading=local`` gives the literal per-user (local DP) reading.
The paper's budget is eps = 10 per user (also 8); the recipes leave ``privacy.epsilon``
to the user.

=============  =========  ===============
method         clipping   recall
=============  =========  ===============
dp_fedavg      fixed C_0  none
ddp_fedavg     decaying   none
sdp_fedavg     fixed C_0  sign (eq. 11)
cdp_fedavg     fixed C_0  cosine (eq. 13)
dsdp_fedavg    decaying   sign
dcdp_fedavg    decaying   cosine
=============  =========  ===============
"""
from __future__ import annotations

from ..methods import register_method

PAPER = "ULDP-FED (seed 004)"
_VARIANTS = {
    # name: (decay, recall, summary)
    "dp_fedavg": (False, "none", "DP-FedAvg: user-level Gaussian updates, fixed clip C0, no recall."),
    "ddp_fedavg": (True, "none", "DDP-FedAvg: clip C0*exp(-beta*k) decaying with participations."),
    "sdp_fedavg": (False, "sign", "SDP-FedAvg: fixed clip, recall stored updates by sign similarity."),
    "cdp_fedavg": (False, "cosine", "CDP-FedAvg: fixed clip, recall stored updates by cosine similarity."),
    "dsdp_fedavg": (True, "sign", "DSDP-FedAvg (ULDP-FED): decaying clip + sign-similarity recall."),
    "dcdp_fedavg": (True, "cosine", "DCDP-FedAvg (ULDP-FED): decaying clip + cosine-similarity recall."),
}


def uldp_overrides(decay: bool, recall: str) -> dict:
    """Config overrides of one ULDP-FED variant (central reading, automatic tau)."""
    mechanism = {"reading": "central", "clip0": 2.0, "beta": 0.06, "decay": decay, "noise": "auto",
                 "recall": recall, "max_participations": 50}
    return {"privacy.mechanism": "uldp_gaussian", "privacy.mechanism_options": mechanism,
            "privacy.aggregator": "uldp", "privacy.aggregator_options": {"max_participations": 50},
            "sampling": "poisson", "participation": 0.1}


for _name, (_decay, _recall, _summary) in _VARIANTS.items():
    register_method(_name, summary=_summary, paper=PAPER, overrides=uldp_overrides(_decay, _recall))
