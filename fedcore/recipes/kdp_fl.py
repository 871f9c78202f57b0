"""KDP-FL: DP-SGD clients, Kalman-filtered server aggregation (seed 003; METHODS section 4).

Clients train with per-sample clipping to norm M and add N(0, sigma^2 M^2) to their result
once (``dp_sgd``, sigma from an RDP accountant for the run's (eps, delta)); the server runs a
per-coordinate Kalman filter with R = the known noise variance and Q = 10 R (``kalman``)
and averages the filtered client results. The paper: 100 clients, 20 per round
(``participation=0.2``), B = 32, lambda = 0.05, E = 5 local iterations.
"""
from __future__ import annotations

from ..methods import register_method

register_method("kdp_fl", summary="KDP-FL: DP-SGD clients, per-coordinate Kalman filter on the server.",
                paper="KDP-FL (seed 003)",
                overrides={"privacy.mechanism": "dp_sgd", "privacy.aggregator": "kalman"})
