"""RDP of the (subsampled) Gaussian mechanism: the one home of the RDP maths.

Pure functions, no state (the Opacus lesson): :func:`gaussian_rdp` gives the RDP curve of
one step (what the ledger composes), :func:`subsampled_gaussian_rdp` computes it: dp-accounting's
terms and stopping rule, every order at once (a few ulps from the library, which stays the reference:
``tests/test_rdp_vectorised.py``), :class:`SampledGaussianRdp` the same curve at integer orders for
many multipliers at once (to calibrate many groups), :func:`rdp_epsilons` converts curves into
(eps, delta)-DP. Multipliers are rounded to :data:`DIGITS` significant digits for caching, far below
the precision any figure is shown with. scipy is imported on first use.

dp-accounting computed a curve order by order in Python loops, 80 ms a curve; a run whose
multipliers change every round (ULDP-FED's central reading: a new multiplier most rounds) spent more
time there than training, which issue 41 moved to worker processes. Every order at once costs about
2 ms (issue 55 §2), so curves are computed where they are needed. They can also be kept on disk
(:func:`curve_cache`, diskcache, shared by every process of the host).
"""
from __future__ import annotations

import math
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
CURVE_VERSION = "2"
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
    """The curve at :data:`ORDERS` (with ``pieces`` > 1, only at ``ORDERS[piece::pieces]``, for
    :mod:`.curve_workers`: cut from the whole curve, so that the pieces put back together are it bit for bit):
    :func:`subsampled_gaussian_rdp`."""
    return tuple(subsampled_gaussian_rdp(noise_multiplier, sample_rate)[piece::pieces])


MAX_TERMS = 1000
"""dp-accounting's ``_MAX_STEPS_LOG_A_FRAC``: a fractional order whose series has not converged by then is
left out (infinite), as there."""


def subsampled_gaussian_rdp(z: float, q: float, orders: np.ndarray = ORDERS) -> np.ndarray:
    """RDP at ``orders`` of one Poisson(``q``)-subsampled Gaussian step of multiplier ``z``: dp-accounting's
    ``_compute_rdp_poisson_subsampled_gaussian`` term for term (Mironov, Talwar & Zhang 2019, Sec. 3.3; the
    same terms, the same stopping rule of the fractional orders' series), every order at once. It agrees
    with dp-accounting to a few ulps (``tests/test_rdp_vectorised.py``) at 1-2 ms a curve, where the
    library's order-by-order loops took 80 ms; without sampling (q = 1) it is the library's closed form
    ``alpha / (2 z^2)`` bit for bit."""
    orders = np.asarray(orders, np.float64)
    if q == 0:
        return np.zeros(len(orders))
    if z == 0:
        return np.full(len(orders), np.inf)
    if q >= 1.0:
        return orders / (2 * z ** 2)
    out = np.empty(len(orders))
    whole = orders == np.floor(orders)
    if whole.any():   # log A_alpha = log sum_i exp(terms_i + (i^2 - i) / (2 z^2)), the terms kept per q
        ints, inv = out[whole], 1.0 / z ** 2
        for sel, terms, quad in _int_orders(float(q), tuple(orders[whole])).blocks:
            x = terms[0] + quad * inv
            top = x.max(axis=1)
            ints[sel] = (np.log(np.exp(x - top[:, None]).sum(axis=1)) + top) / (orders[whole][sel] - 1)
        out[whole] = ints
    if (~whole).any():
        out[~whole] = _fractional_log_a(float(q), float(z), orders[~whole]) / (orders[~whole] - 1)
    return out


@lru_cache(maxsize=64)
def _int_orders(q: float, orders: tuple) -> "SampledGaussianRdp":
    return SampledGaussianRdp(np.array([q]), np.array(orders))


TERMS = (16, 64, 256, 512, MAX_TERMS)
"""Terms of the fractional orders' series computed for the orders not converged yet: most stop within 16
(z = 0.57, q = 0.1), those near 1 run to hundreds or never converge (dp-accounting gives up after
:data:`MAX_TERMS` too): :func:`_never_stops` proves the latter after the first block, so that only orders that may
still stop are summed on. The block at 512 stops W3's orders that converge by then: 11 % of a curve."""


def _fractional_log_a(q: float, sigma: float, alpha: np.ndarray) -> np.ndarray:
    """``log A_alpha`` at fractional orders ``alpha [F]`` (dp-accounting's ``_compute_log_a_frac``): the two
    series over i, summed up to the first i where both terms decrease and lie 30 below the running total.
    Each of :data:`TERMS` computes only the terms after the last one's, for the orders not stopped yet, and
    continues their running totals (a running log-sum adds in the same order either way)."""
    from scipy.special import log_ndtr

    out = np.full(len(alpha), np.inf)
    rows = np.arange(len(alpha))
    z0 = sigma ** 2 * math.log(1 / q - 1) + 0.5
    start, before = 0, None          # before: the remaining rows' last (s0, s1, total), to go on from
    for terms in TERMS:
        t0, t1, i, j = _fractional_terms(q, tuple(alpha), start, terms)
        t0, t1, j = t0[rows], t1[rows], j[rows]
        # the library's log(0.5) + log(erfc(x / sqrt 2)) = log ndtr(-x): its log 0.5 and log 2 cancel exactly
        s0 = t0 + (i * i - i) / (2 * sigma ** 2) + log_ndtr(-(i - z0) / (math.sqrt(2) * sigma) * 2 ** 0.5)
        s1 = t1 + (j * j - j) / (2 * sigma ** 2) + log_ndtr(-(z0 - j) / (math.sqrt(2) * sigma) * 2 ** 0.5)
        step = np.logaddexp(s0, s1)
        if before is not None:
            s0, s1, step = (np.concatenate([b[:, None], x], axis=1) for b, x in zip(before, (s0, s1, step)))
        total = np.logaddexp.accumulate(step, axis=1)
        with np.errstate(invalid="ignore"):
            stop = (s0[:, 1:] < s0[:, :-1]) & (s1[:, 1:] < s1[:, :-1]) & (np.maximum(s0, s1)[:, 1:] < total[:, 1:] - 30)
        done = stop.any(axis=1)
        out[rows[done]] = total[np.flatnonzero(done), stop[done].argmax(axis=1) + 1]
        if start == 0:   # orders proven never to stop within MAX_TERMS are infinite already
            done |= _never_stops(q, sigma, alpha[rows], terms, total[:, -1])
        rows, before, start = rows[~done], (s0[~done, -1], s1[~done, -1], total[~done, -1]), terms
        if not len(rows):
            break
    return out


def _never_stops(q: float, sigma: float, alpha: np.ndarray, start: int, total: np.ndarray) -> np.ndarray:
    """``[F]`` True where :func:`_fractional_log_a`'s series, summed to ``total`` over its first ``start`` terms,
    provably does not stop in terms ``start .. MAX_TERMS - 1``, so that its order is infinite (left out, as in
    dp-accounting) without computing them.

    With ``x = (z0 - j) / sigma`` and ``y = (i - z0) / sigma`` (both >= 1 here), Gaussian tails
    ``log ndtr(-u) = -u^2/2 - log(u sqrt(2 pi)) + log R(u)`` with ``u^2 / (1 + u^2) <= R(u) <= 1`` (Gordon's
    inequality) and ``z0``'s definition turn both terms into ``s = D_i - log u + log R(u)``, where
    ``D_i = log|C(alpha, i)| + alpha log(1-q) - z0^2 / (2 sigma^2) - log sqrt(2 pi)`` decreases in ``i`` (for
    ``i > alpha``, ``log|C(alpha, i)| = const - (lgamma(i+1) - lgamma(i-alpha))`` by Euler's reflection, and each
    step of the bracket adds ``log((i+1) / (i-alpha)) > 0``). So every later term lies
    at or above its value at the last term less ``log(1 + 1/u_start^2)``, and the running total stays below the
    ``total`` plus ``2 (MAX_TERMS - start)`` terms of the first one's bound. Where the first bound exceeds the
    second less 30 (with 1e-6 to spare for rounding) the stopping rule (a term 30 below the total) never holds."""
    from scipy.special import gammaln

    last = MAX_TERMS - 1
    z0 = sigma ** 2 * math.log(1 / q - 1) + 0.5
    y0, y1 = (start - z0) / sigma, (last - z0) / sigma           # the first term's u at start and at last
    x0, x1 = (z0 - alpha + start) / sigma, (z0 - alpha + last) / sigma
    if y0 < 1 or x0.min() < 1:
        return np.zeros(len(alpha), bool)
    head = gammaln(alpha + 1) + alpha * math.log1p(-q) - z0 ** 2 / (2 * sigma ** 2) - 0.5 * math.log(2 * math.pi)
    d0 = head - gammaln(start + 1.0) - gammaln(alpha - start + 1)
    d1 = head - gammaln(last + 1.0) - gammaln(alpha - last + 1)
    low = d1 - np.minimum(math.log(y1) + math.log1p(1 / y0 ** 2), np.log(x1) + np.log1p(1 / x0 ** 2))
    high = np.logaddexp(total, math.log(2 * (last - start + 1)) + d0 - np.log(np.minimum(y0, x0)))
    return (low > high - 30 + 1e-6) & (alpha < start)   # i > alpha: |C(alpha, i)| falls with i


@lru_cache(maxsize=64)
def _fractional_terms(q: float, alpha: tuple, start: int, terms: int) -> tuple:
    """The multiplier-free parts of :func:`_fractional_log_a`'s terms ``start .. terms - 1``, ``[F, terms - start]``:
    ``(t0, t1, i, j)``."""
    from scipy.special import gammaln

    a = np.array(alpha)[:, None]
    i = np.arange(start, terms, dtype=np.float64)[None, :]
    j = a - i
    log_coef = gammaln(a + 1) - gammaln(i + 1) - gammaln(j + 1)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    return log_coef + i * log_q + j * log_1mq, log_coef + j * log_q + i * log_1mq, i, j


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
