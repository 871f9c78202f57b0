"""RDP of the (subsampled) Gaussian mechanism through Google's dp-accounting library.

Pure functions, no state (the Opacus lesson): :func:`gaussian_rdp` gives the RDP curve
of one step, :func:`rdp_epsilon` converts an accumulated curve into (eps, delta)-DP.
Noise multipliers are rounded to 6 significant digits for caching; that changes the
curve far below the precision any figure is shown with. dp-accounting (and the scipy it
pulls in, about a second) is imported on first use, so runs without Gaussian noise never
load it.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

ORDERS = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024],
                  dtype=np.float64)
"""dp-accounting's ``DEFAULT_RDP_ORDERS``, written out so importing this module stays cheap."""


@lru_cache(maxsize=4096)
def _gaussian_rdp_cached(noise_multiplier: float, sample_rate: float) -> tuple:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    acc = rdp_lib.RdpAccountant(orders=ORDERS)
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sample_rate < 1.0:
        event = dp_accounting.PoissonSampledDpEvent(sample_rate, event)
    acc.compose(event, 1)
    return tuple(acc.rdp)


def gaussian_rdp(noise_multiplier: float, sample_rate: float = 1.0) -> np.ndarray:
    """RDP at :data:`ORDERS` of one (Poisson-subsampled) Gaussian step with multiplier z."""
    z = float(f"{noise_multiplier:.6g}")
    return np.array(_gaussian_rdp_cached(z, float(sample_rate)))


def rdp_epsilons(rdp: np.ndarray, delta) -> np.ndarray:
    """``(eps, delta_i)`` of every row of ``rdp [N, len(ORDERS)]``, each with its own ``delta [N]``.

    Vectorised form of dp-accounting's ``compute_epsilon`` (Canonne, Kamath & Steinke
    2020, Prop. 12), term for term: a row of zeros gives 0, an infinite row gives inf.
    """
    rdp = np.atleast_2d(np.asarray(rdp, np.float64))
    delta = np.broadcast_to(np.asarray(delta, np.float64), (rdp.shape[0],)).reshape(-1, 1)
    a = ORDERS[None, :]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        eps = rdp + np.log1p(-1 / a) - np.log(delta * a) / (a - 1)
        eps = np.where(np.isnan(eps), np.inf, eps)
        eps = np.where(rdp < 0, 0.0, eps)
        eps = np.where((rdp >= 0) & (delta ** 2 + np.expm1(-rdp) > 0), 0.0, eps)
    return np.maximum(0.0, eps.min(axis=1))


def rdp_epsilon(rdp: np.ndarray, delta: float) -> float:
    """Smallest eps over the orders such that the RDP curve gives (eps, delta)-DP."""
    if not np.any(rdp):
        return 0.0
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    return float(rdp_lib.compute_epsilon(ORDERS, rdp, delta)[0])
