"""KDP-FL: DP-SGD clients, Kalman-filtered server aggregation (seed 003; METHODS section 4).

Clients run standard DP-SGD (``dp_sgd``, default ``placement="step"``): per-sample clipping to
norm M and N(0, z^2 M^2) on every local step's sum of clipped gradients, z from an RDP
accountant for the run's (eps, delta) (the literal Eq. 3, noise once per round on the
client's result, is ``placement="round"``). ``dp_sgd``'s ``rounds`` option says over how
many rounds the noise is calibrated: ``all`` (default, every one of the T rounds) or
``participation`` (the rounds a client takes part in; the reproduction's KDP-FL rows use it).
The server runs a per-coordinate Kalman filter with R = the upload's real noise variance and
Q = 10 R (``kalman``) and averages the filtered client results. The paper: 100 clients, 20
per round (``participation=0.2``), B = 32, lambda = 0.05, E = 5 local iterations; the
reproduction's reading raises lambda to 0.5 (``fedcore.papers.kdp_fl.KDP_LR``) so that
clipping alone costs little against no privacy.
"""
from __future__ import annotations

from ..methods import register_method

register_method("kdp_fl", summary="KDP-FL: DP-SGD clients, per-coordinate Kalman filter on the server.",
                paper="KDP-FL (seed 003)",
                overrides={"privacy.mechanism": "dp_sgd", "privacy.aggregator": "kalman"})
