"""KDP-FL server: Kalman-filtered aggregation of DP-SGD uploads (seed 003, Sec. 3.2.2-3.2.3).

Every coordinate of the update has a scalar Kalman filter whose state x is the true
(noise-free) update; the state persists across rounds with identity dynamics:

    predict:  x^- = x,   P^- = P + Q
    update with an upload z of noise variance R:
              K = P^- / (P^- + R),   x = x^- + K (z - x^-),   P = (1 - K) P^-

R_c = ``Upload.noise_std[c]**2`` is the DP noise variance client c added (KDP-FL:
sigma^2 M^2 in gradient units; here in the units of the uploaded update). The paper sets
R = 0.1 Q "to avoid a singular matrix", hence the default ``q_over_r = 10``: Q = 10 * mean_c R_c
over the round's uploaders (the paper's sentence "Q ~ N(0, sigma^2 M^2 I)" would instead
make R = 0.1 sigma^2 M^2; both readings give gains close to 1). ``process_variance > 0``
sets Q directly instead. Q, R and P are the same for every coordinate (the DP noise is
isotropic), so P and K are scalars and x is a ``[d]`` vector: the filter is vectorised over
coordinates, and the only loop is over the round's m uploads, on scalars.

What "the filtered client results are averaged" (w_{t+1} = w_t - (lambda/C) sum_c g~_c, i.e.
in update units delta = (1/C) sum_c g~_c) means, option ``fusion``:

- ``"per_client"`` (default): Algorithm 2 filters each client's result "in parallel"
  against the same prediction: g~_c = x^- + K_c (z_c - x^-) with K_c = P^- / (P^- + R_c);
  delta = mean_c g~_c = x^- + mean_c K_c (z_c - x^-). The state becomes x = delta,
  P = (1 - mean_c K_c) P^-. With equal R_c this is exactly the paper's diagonal filter
  (one filter per client slot, H = identity), and it is independent of client order.
- ``"sequential"``: the state assimilates the uploads one after another with the update
  equations above (the textbook multi-measurement filter); the filtered result of client c
  is the state after z_c, and delta is the state after the last upload (the
  minimum-variance fusion of prior and uploads). Averaging the intermediate states
  instead would weight the first client up to ~m/2 times more than the last (order bias
  and more variance than a plain mean), so it is not offered.

x starts at 0 and P at ``initial_variance`` (default 0: the first prediction's variance is Q).
Noise-free uploads (``noise_std`` None, R = 0) pass through unchanged (K = 1).
The reported weights are each upload's effective coefficient in delta (they sum to 1 minus
the weight on the prediction x^-). Signal ``kalman_gain``: the mean gain of the round.
Sign uploads are rejected: the filter models a real-valued update plus Gaussian noise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..constraints import Choice, Interval, setting
from .base import Aggregate, Aggregator
from .registry import AGGREGATORS

if TYPE_CHECKING:
    import torch

FUSIONS = ("per_client", "sequential")


def kalman_gain(prior_variance: float, noise_variance: float) -> float:
    """K = P^- / (P^- + R); 1 when both are 0 (a noise-free upload is taken as it is)."""
    total = prior_variance + noise_variance
    return prior_variance / total if total > 0 else 1.0


def kalman_coefficients(prior_variance: float, noise_variances: list[float],
                        fusion: str) -> tuple[list[float], list[float], float]:
    """Coefficients of one round: ``(a, gains, P_post)`` with delta = a[0] x^- + sum_c a[c+1] z_c.

    ``prior_variance`` is P^- (after the predict step); ``noise_variances`` the R_c.
    """
    m = len(noise_variances)
    if fusion == "per_client":
        gains = [kalman_gain(prior_variance, r) for r in noise_variances]
        mean_gain = sum(gains) / m
        return [1.0 - mean_gain] + [k / m for k in gains], gains, (1.0 - mean_gain) * prior_variance
    coef, p, gains = [1.0] + [0.0] * m, prior_variance, []
    for c, r in enumerate(noise_variances):
        k = kalman_gain(p, r)
        coef = [(1.0 - k) * a for a in coef]
        coef[c + 1] += k
        p = (1.0 - k) * p
        gains.append(k)
    return coef, gains, p


@AGGREGATORS.register("kalman", summary="Per-coordinate Kalman filter over the noisy uploads, then the mean.",
                      paper="KDP-FL (seed 003), Sec. 3.2.3")
class KalmanAggregator(Aggregator):
    """State ``state_`` [d] (estimated true update) and ``variance_`` (scalar P) persist."""

    needs_linkable = True   # each upload's R_c must be tied to it
    accepts_sign = False
    sign_incompatibility = ("the Kalman filter estimates a real-valued update observed through additive "
                            "Gaussian noise of known variance R; a +-1 sign upload has no such noise model")

    @dataclass(frozen=True)
    class Options:
        """``q_over_r``: Q / R (paper: R = 0.1 Q, so 10). ``process_variance``: Q itself if > 0.
        ``initial_variance``: P before round 1. ``fusion``: "per_client" or "sequential"."""

        q_over_r: float = setting(10.0, Interval(float, 0, None, closed="neither"), "Q / R (the paper: R = 0.1 Q, so 10)")
        process_variance: float = setting(0.0, Interval(float, 0, None), "Q itself; 0 = derive Q from q_over_r")
        initial_variance: float = setting(0.0, Interval(float, 0, None), "P before round 1")
        fusion: str = setting("per_client", Choice(FUSIONS), "per_client or sequential fusion of the uploads")

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self.state_: Optional[torch.Tensor] = None
        self.variance_: float = options.initial_variance

    def aggregate(self, upload, round) -> Aggregate:
        import torch  # here, not at the top: resolving a config that names this loads no torch

        z = upload.values
        m, d = z.shape
        if self.state_ is None:
            self.state_ = torch.zeros(d, dtype=z.dtype, device=z.device)
        r = ([0.0] * m if upload.noise_std is None
             else (upload.noise_std.double() ** 2).cpu().tolist())
        q = self.options.process_variance or self.options.q_over_r * sum(r) / m
        coef, gains, self.variance_ = kalman_coefficients(self.variance_ + q, r, self.options.fusion)
        a = torch.tensor(coef, dtype=z.dtype, device=z.device)
        delta = a[0] * self.state_ + a[1:] @ z
        self.state_ = delta
        return Aggregate(delta, a[1:], [],
                         {"kalman_gain": sum(gains) / m, "kalman_variance": self.variance_})
