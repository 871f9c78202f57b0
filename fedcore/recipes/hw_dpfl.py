"""HW-DPFL: Gaussian noise per round, Hellinger-weighted aggregation (seed 002; METHODS section 3).

Clients add N(0, sigma_k^2 I) to their uploaded model once per round (``hw_gaussian``:
sigma_k from Theorem 1, or ``--set privacy.mechanism_options.noise=level`` with
``sigma`` in {0.2, 0.5, 1} as in the paper's experiments); the server weights each upload
by the similarity of the client's label histogram to the uniform distribution,
tau_k ~ 1 - H_k (``hellinger``). The paper's setting is non-IID: 80 % IID clients, the
rest with few classes (``--set partition.kind=mixed``).
"""
from __future__ import annotations

from ..methods import register_method

register_method("hw_dpfl", summary="HW-DPFL: Gaussian noise per round, weights from label-histogram Hellinger distance.",
                paper="HW-DPFL (seed 002)",
                overrides={"privacy.mechanism": "hw_gaussian", "privacy.aggregator": "hellinger"})
register_method("hw_fedavg", summary="HW-DPFL's noise averaged by plain FedAvg: the paper's DP-FedAvg baseline.",
                paper="HW-DPFL (seed 002)",
                overrides={"privacy.mechanism": "hw_gaussian", "privacy.aggregator": "fedavg"})
