"""RDP of the (subsampled) Gaussian mechanism: the one home of the RDP maths.

Pure functions, no state (the Opacus lesson): :func:`gaussian_rdp` gives the RDP curve of
one step through Google's dp-accounting (what the ledger composes), :class:`SampledGaussianRdp`
the same curve at integer orders as a vectorised series (to calibrate many groups at once),
:func:`rdp_epsilons` converts curves into (eps, delta)-DP. Multipliers are rounded to
:data:`DIGITS` significant digits for caching, far below the precision any figure is shown
with. dp-accounting (and the scipy it pulls in, about a second) is imported on first use,
so runs without Gaussian noise never load it.

A curve costs dp-accounting 0.1-0.2 s at the fractional orders. A run whose multipliers change
every round (ULDP-FED's central reading: a new multiplier most rounds) spent more time there than
training (W3-quick on CPU: 0.70 s of accounting, 0.55 s of training per round; on an H100 the
accounting is most of a round). So curves are also kept on disk (:func:`curve_cache`, diskcache,
shared by every process of the host): a run, a sweep or a reproduction whose multipliers another
run met already reads them back.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

ORDERS = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024],
                  dtype=np.float64)
"""dp-accounting's ``DEFAULT_RDP_ORDERS``, written out so importing this module stays cheap."""
INT_ORDERS = np.array([a for a in ORDERS if a == int(a) and 2 <= a <= 256], dtype=np.float64)
"""The integer orders up to 256, where :class:`SampledGaussianRdp`'s series is exact."""
DIGITS = 6
"""Significant digits a noise multiplier keeps before its curve is computed (and cached)."""


def rounded_multiplier(noise_multiplier: float) -> float:
    """The multiplier whose curve :func:`gaussian_rdp` (and so the ledger) uses.

    >>> rounded_multiplier(10.36354004)
    10.3635
    """
    return float(f"{noise_multiplier:.{DIGITS}g}")


CACHE_ENV = "FEDCORE_RDP_CACHE"
"""Folder of the curves kept on disk (``off``: none); default ``$XDG_CACHE_HOME/fedcore/rdp``."""
CURVE_VERSION = "1"
"""Part of every key on disk: change it when the way a curve is computed changes."""


@lru_cache(maxsize=1)
def curve_cache():
    """The on-disk store of curves (a ``diskcache.Cache``), or None when it is off or cannot be opened
    (a read-only home): then every curve is computed, as before."""
    where = os.environ.get(CACHE_ENV) or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                                             / "fedcore" / "rdp")
    if where == "off":
        return None
    try:
        import hashlib
        from importlib.metadata import version

        import diskcache

        cache = diskcache.Cache(where, size_limit=2 ** 28)
        orders = hashlib.sha1(ORDERS.tobytes()).hexdigest()[:10]
        cache.key_prefix = f"{CURVE_VERSION}|{version('dp-accounting')}|{orders}|"
        return cache
    except Exception:   # noqa: BLE001 -- an unusable folder only costs the speed
        return None


def curve_key(cache, noise_multiplier: float, sample_rate: float) -> str:
    """The curve cache's key of the subsampled Gaussian ``(noise_multiplier, sample_rate)``."""
    return f"{cache.key_prefix}{noise_multiplier!r}|{sample_rate!r}"


@lru_cache(maxsize=4096)
def _gaussian_rdp_cached(noise_multiplier: float, sample_rate: float) -> tuple:
    cache = curve_cache()
    key = curve_key(cache, noise_multiplier, sample_rate) if cache is not None else ""
    try:
        kept = cache.get(key) if cache is not None else None
    except Exception:   # noqa: BLE001
        kept = None
    if kept is not None and len(kept) == len(ORDERS):
        return tuple(kept)
    curve = _compute_curve(noise_multiplier, sample_rate)
    try:
        if cache is not None:
            cache.set(key, list(curve))
    except Exception:   # noqa: BLE001
        pass
    return curve


def _compute_curve(noise_multiplier: float, sample_rate: float, pieces: int = 1, piece: int = 0) -> tuple:
    """The curve at :data:`ORDERS` through dp-accounting; with ``pieces`` > 1, only at the orders
    ``ORDERS[piece::pieces]`` (dp-accounting computes each order on its own, so the pieces of a curve
    put back together are the whole curve, bit for bit: :mod:`.curve_workers` computes them side by side)."""
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    acc = rdp_lib.RdpAccountant(orders=ORDERS[piece::pieces] if pieces > 1 else ORDERS)
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sample_rate < 1.0:
        event = dp_accounting.PoissonSampledDpEvent(sample_rate, event)
    acc.compose(event, 1)
    return tuple(acc.rdp)


def gaussian_rdp(noise_multiplier: float, sample_rate: float = 1.0) -> np.ndarray:
    """RDP at :data:`ORDERS` of one (Poisson-subsampled) Gaussian step with multiplier z."""
    return np.array(_gaussian_rdp_cached(rounded_multiplier(noise_multiplier), float(sample_rate)))


def rdp_epsilons(rdp: np.ndarray, delta, orders: np.ndarray = ORDERS) -> np.ndarray:
    """``(eps, delta_i)`` of every row of ``rdp [N, len(orders)]``, each with its own ``delta [N]``.

    Vectorised form of dp-accounting's ``compute_epsilon`` (Canonne, Kamath & Steinke
    2020, Prop. 12), term for term: a row of zeros gives 0, an infinite row gives inf.
    """
    rdp = np.atleast_2d(np.asarray(rdp, np.float64))
    delta = np.broadcast_to(np.asarray(delta, np.float64), (rdp.shape[0],)).reshape(-1, 1)
    a = np.asarray(orders, np.float64)[None, :]
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


class SampledGaussianRdp:
    """RDP ``[G, len(orders)]`` of one Poisson(``q [G]``)-subsampled Gaussian step, for any
    multipliers ``z [G]``, at integer ``orders`` (Mironov, Talwar & Zhang 2019, Sec. 3.3)::

        A_alpha = sum_{i=0}^{alpha} C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 z^2))
        RDP(alpha) = ln(A_alpha) / (alpha - 1)

    The terms that do not depend on ``z`` are computed once; orders are split into blocks
    so that each sums only ``i <= alpha``. Matches dp-accounting at these orders.
    """

    def __init__(self, q: np.ndarray, orders: np.ndarray = INT_ORDERS):
        from scipy.special import gammaln  # on first use: keeps `import fedcore` cheap

        q = np.atleast_1d(np.asarray(q, np.float64))
        self.orders = orders
        self.blocks = []
        for sel in (orders <= 64, orders > 64):
            if not sel.any():
                continue
            a = orders[sel][:, None]
            i = np.arange(int(a.max()) + 1, dtype=np.float64)
            inside = i <= a
            with np.errstate(divide="ignore", invalid="ignore"):
                log_comb = gammaln(a + 1) - gammaln(i + 1) - gammaln(np.where(inside, a - i, 0) + 1)
                log_q, log_1mq = np.log(q)[:, None, None], np.log1p(-q)[:, None, None]
                rest = np.where(a - i > 0, (a - i) * log_1mq, 0.0)          # q = 1: only i = alpha
                terms = np.where(inside, log_comb + i * log_q + rest, -np.inf)
            self.blocks.append((sel, terms, (i * i - i) / 2))

    def __call__(self, z) -> np.ndarray:
        from scipy.special import logsumexp

        z = np.atleast_1d(np.asarray(z, np.float64))
        out = np.empty((len(z), len(self.orders)))
        inv = 1.0 / (z[:, None, None] ** 2)
        for sel, terms, quad in self.blocks:
            out[:, sel] = logsumexp(terms + quad * inv, axis=-1) / (self.orders[sel] - 1)
        return out
