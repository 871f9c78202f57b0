"""Noise calibration (DP-SGD, HW-DPFL per step, ULDP-FED's accountant noise): the smallest
Gaussian noise multiplier whose value *as the ledger composes it* meets the target, so a run
never spends more than its target. The ledger rounds a multiplier to :data:`~.rdp.DIGITS`
significant digits (a ``GaussianRecord(grid=True)`` first down to its grid
:data:`~.ledger.GRID`); the calibration rounds up to the same grid.

>>> round(float(calibrate_noise_multiplier(1.0, 1e-5, 1.0, 1)[0]), 3)
4.045
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..errors import ConfigError
from .ledger import GRID
from .rdp import DIGITS, INT_ORDERS, SampledGaussianRdp, rdp_epsilons, rounded_multiplier

Z_RANGE = (1e-3, 1e4)
"""Where the bisection looks for a multiplier."""
GRID_MARGIN = 0.01
"""Fraction of a grid step above its grid point where a gridded multiplier is placed: float32
arithmetic on the way to the ledger cannot push it one step down."""
_CHUNK = 64


def calibrate_noise_multiplier(epsilon, delta, sample_rate, compositions, grid: bool = False) -> np.ndarray:
    """Memoised :func:`solve_noise_multiplier` (an equal-privacy calibration builds the same
    mechanism many times: the same budgets give the same multipliers)."""
    args = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, np.float64))
                                 for a in (epsilon, delta, sample_rate, compositions)))
    key = tuple(tuple(a.tolist()) for a in args) + (bool(grid),)
    return np.array(_memo(key), dtype=np.float64)


@lru_cache(maxsize=1024)
def _memo(key: tuple) -> tuple:
    *arrays, grid = key
    return tuple(solve_noise_multiplier(*(np.array(a) for a in arrays), grid=grid).tolist())


def solve_noise_multiplier(epsilon, delta, sample_rate, compositions, grid: bool = False) -> np.ndarray:
    """Smallest noise multiplier per group such that ``compositions`` Poisson-subsampled
    Gaussian steps at ``sample_rate`` are ``(epsilon, delta)``-DP, on the ledger's grid
    (``grid``: that of ``GaussianRecord(grid=True)``).

    Bisection in ``log z`` over :data:`Z_RANGE`, all groups at once, at the integer orders
    (the ledger also uses fractional and larger ones, so its figure is at most ours: within
    1 % for the papers' budgets, a few % below the target at large eps). Raises
    ``ConfigError`` where even ``z = 1e4`` is not enough.
    """
    eps, delta, q, n = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, np.float64))
                                             for a in (epsilon, delta, sample_rate, compositions)))
    out = np.empty_like(eps)
    for start in range(0, len(eps), _CHUNK):
        sl = slice(start, start + _CHUNK)
        rdp = SampledGaussianRdp(q[sl], INT_ORDERS)

        def private(z):
            return rdp_epsilons(n[sl, None] * rdp(z), delta[sl], INT_ORDERS) <= eps[sl]

        lo = np.full(len(eps[sl]), math.log(Z_RANGE[0]))
        hi = np.full(len(eps[sl]), math.log(Z_RANGE[1]))
        if not np.all(private(np.exp(hi))):
            asked = float(f"{float(eps[sl].min()):.7g}")  # as written: budgets pass through float32 tensors
            raise ConfigError("privacy.epsilon", asked, "is too small to reach "
                              f"with a noise multiplier up to {Z_RANGE[1]:g}; raise epsilon or delta")
        for _ in range(48):
            mid = (lo + hi) / 2
            ok = private(np.exp(mid))
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        out[sl] = _round_up(np.exp(hi), grid, private)
    return out


def _round_up(z: np.ndarray, grid: bool, private) -> np.ndarray:
    """The smallest multipliers at least ``z`` whose value as the ledger charges it (on its
    grid) still passes ``private``; with ``grid``, a value that the ledger rounds down to
    that grid point."""
    rounded = np.vectorize(rounded_multiplier, otypes=[np.float64])
    if grid:
        step = np.floor(np.log(z) / math.log(GRID))
        while not np.all(ok := private(rounded(GRID ** step))):
            step = step + ~ok
        return GRID ** (step + GRID_MARGIN)
    unit = 10.0 ** (np.floor(np.log10(z)) - (DIGITS - 1))       # one unit in the last kept digit
    z = rounded(np.ceil(z / unit) * unit)
    while not np.all(ok := private(z)):
        z = np.where(ok, z, rounded(z + unit))
    return z
