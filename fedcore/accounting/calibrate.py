"""Noise calibration (DP-SGD, HW-DPFL per step, ULDP-FED's accountant noise): the smallest
Gaussian noise multiplier whose value *as the ledger composes it* meets the target, so a run
never spends more than its target, solved on the same accountant as the ledger's headline:

- the exact one (dp-accounting's PLD, :mod:`.exact`) for every ordinary record: regula falsi in
  (log z, log ε) from the RDP solution (which always spends less), first on a :data:`~.exact.COARSE`
  times coarser discretisation, then on the ledger's own (:func:`~.exact.interval_for`), whose point is
  moved up until it passes, so it spends [0.99, 1] x the target (:data:`AIM`); a budget next to one
  already solved starts from that one's PLD/RDP ratio (one or two PLDs instead of about ten);
- RDP for ``grid`` (``GaussianRecord(grid=True)``: ULDP-FED's central reading, composed by RDP).

The ledger rounds a multiplier to :data:`~.rdp.DIGITS` significant digits (a grid record first down
to its grid :data:`~.ledger.GRID`); the calibration rounds up to the same grid. Solutions are kept
in memory and on disk beside the RDP curves (:func:`~.rdp.curve_cache`): a sweep, a replay or a
second run of the same budgets reads them back.

>>> round(float(calibrate_noise_multiplier(1.0, 1e-5, 1.0, 1)[0]), 3)      # RDP's: 4.045
3.731
"""
from __future__ import annotations

import math
from typing import Optional
from functools import lru_cache

import numpy as np

from ..errors import ConfigError
from .exact import tally_epsilon, whole_steps
from .ledger import GRID
from .rdp import DIGITS, INT_ORDERS, SampledGaussianRdp, curve_cache, rdp_epsilons, rounded_multiplier

Z_RANGE = (1e-3, 1e4)
"""Where the bisection looks for a multiplier."""
GRID_MARGIN = 0.01
"""Fraction of a grid step above its grid point where a gridded multiplier is placed: float32
arithmetic on the way to the ledger cannot push it one step down."""
_CHUNK = 64
AIM = (0.996, 1.0)
"""Where the coarse search puts a point's ε, as a fraction of the target (the fine PLD is within a
few 1e-4 below the coarse one, so the confirmed point lands in [0.99, 1])."""
SLOPE = 1.3
"""About how fast ε falls with the multiplier (ε ~ z^-SLOPE near a solution): the step from the coarse
grid's point to the fine grid's first guess."""
MARGIN = 1e-5
"""Fraction of the target left unspent: a multiplier's float32 round trip to the noise and the ledger's
6-digit rounding move ε by about 1e-6."""
PLD_VERSION = "pld2"
"""Part of a kept solution's key: change it when the search changes (a solution is a function of it)."""


def calibrate_noise_multiplier(epsilon, delta, sample_rate, compositions, grid: bool = False,
                               paper: bool = False) -> np.ndarray:
    """Memoised :func:`solve_noise_multiplier` (an equal-privacy calibration builds the same
    mechanism many times: the same budgets give the same multipliers). ``paper``: a paper's own
    reading, calibrated by the moments accountant (RDP) the paper used, so a reproduction keeps the
    paper's noise; its exact ε is the headline beside the paper's claim."""
    args = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, np.float64))
                                 for a in (epsilon, delta, sample_rate, compositions)))
    key = tuple(tuple(a.tolist()) for a in args) + (bool(grid), bool(paper))
    return np.array(_memo(key), dtype=np.float64)


@lru_cache(maxsize=1024)
def _memo(key: tuple) -> tuple:
    *arrays, grid, paper = key
    arrays = [np.array(a) for a in arrays]
    z = solve_rdp(*arrays, grid=grid) if paper else solve_noise_multiplier(*arrays, grid=grid)
    return tuple(z.tolist())


def solve_noise_multiplier(epsilon, delta, sample_rate, compositions, grid: bool = False) -> np.ndarray:
    """Smallest noise multiplier per group such that ``compositions`` Poisson-subsampled Gaussian
    steps at ``sample_rate`` are ``(epsilon, delta)``-DP under the ledger's accountant: the PLD's
    (:func:`solve_pld`, from the RDP solution), RDP's with ``grid`` (on ``GaussianRecord(grid=True)``'s
    grid). Raises ``ConfigError`` where even ``z = 1e4`` is not enough."""
    z = solve_rdp(epsilon, delta, sample_rate, compositions, grid)
    if grid:
        return z
    eps, delta, q, n = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, np.float64))
                                             for a in (epsilon, delta, sample_rate, compositions)))
    out, ratio = np.empty_like(z), None
    for i in np.lexsort((eps, q, n, delta)):   # neighbours solve alike: the last one's PLD/RDP ratio is the guess
        out[i] = solve_pld(eps[i], delta[i], q[i], n[i], z[i], None if ratio is None else z[i] * ratio)
        ratio = out[i] / z[i]
    return out


def solve_pld(epsilon: float, delta: float, q: float, compositions: float, start: float,
              guess: Optional[float] = None) -> float:
    """The smallest multiplier (rounded as the ledger rounds it) whose ``compositions`` steps at rate
    ``q`` spend at most ``epsilon`` at ``delta`` by the PLD (:func:`.exact.tally_epsilon`) and at
    least 0.99 of it; ``start``: a multiplier that spends less (RDP's solution); ``guess``: where to
    look first (a neighbouring budget's solution, scaled)."""
    epsilon, delta, q, compositions, start = (float(v) for v in (epsilon, delta, q, compositions, start))
    cache = curve_cache()
    key = f"{cache.key_prefix}{PLD_VERSION}|{epsilon!r}|{delta!r}|{q!r}|{compositions!r}" if cache is not None else ""
    try:
        kept = cache.get(key) if cache is not None else None
    except Exception:   # noqa: BLE001
        kept = None
    if kept is not None:
        return float(kept)
    n = whole_steps(compositions)

    def spent(z: float, coarse: bool = False) -> float:
        return tally_epsilon((((rounded_multiplier(z), float(min(q, 1.0))), n),), float(delta), coarse)

    target = epsilon * (1 - MARGIN)
    if guess is None:                                # a first look on the coarse grid, then the fine one
        coarse = _regula_falsi(lambda v: spent(v, True), target, start)
        guess = coarse * (spent(coarse) / target) ** (1 / SLOPE)
    z = _regula_falsi(spent, target, start, guess)
    while spent(z) > target:                         # never above the target on the ledger's own grid
        z = rounded_multiplier(z * 1.0005)
    try:
        if cache is not None:
            cache.set(key, z)
    except Exception:   # noqa: BLE001
        pass
    return z


def _regula_falsi(spent, target: float, start: float, guess: Optional[float] = None) -> float:
    """A multiplier whose ``spent`` lies in :data:`AIM` x ``target`` (or just under the target when
    ``spent`` jumps there), by regula falsi (Illinois) on ``log spent`` against ``log z``, from ``start``
    (which spends at most ``target``) and ``guess`` (tried first: one evaluation when it is right)."""
    hi, lo, step = start, None, 1.5
    if guess is not None and guess < hi:
        guess, step = rounded_multiplier(guess), 1.05
        e = spent(guess)
        if AIM[0] * target <= e <= AIM[1] * target:
            return guess
        hi, lo = (guess, None) if e <= target else (hi, guess)
    while spent(hi) > target:
        hi *= 1.5
    lo = lo or hi
    while spent(lo) <= AIM[0] * target:
        lo /= step
        if lo < Z_RANGE[0]:
            return rounded_multiplier(hi)
    if spent(lo) <= target:
        return rounded_multiplier(lo)
    f_lo, f_hi = math.log(spent(lo) / target), math.log(spent(hi) / target)   # > 0 at lo, <= 0 at hi
    side = 0
    for _ in range(60):
        if hi / lo < 1 + 1e-5:
            break
        x = math.log(lo) + (math.log(hi) - math.log(lo)) * f_lo / (f_lo - f_hi)
        z = rounded_multiplier(min(max(math.exp(x), lo * (1 + 1e-6)), hi / (1 + 1e-6)))
        if z in (lo, hi):     # one unit of the ledger's rounding from an end: the next multiplier up
            z = rounded_multiplier(lo + 10.0 ** (math.floor(math.log10(lo)) - (DIGITS - 1)))
            if z >= hi:
                break
        e = spent(z)
        if AIM[0] * target <= e <= AIM[1] * target:
            return z
        if e > target:
            lo, f_lo = z, math.log(e / target)
            f_hi, side = (f_hi / 2, side) if side == 1 else (f_hi, 1)
        else:
            hi, f_hi = z, math.log(e / target)
            f_lo, side = (f_lo / 2, side) if side == -1 else (f_lo, -1)
    return rounded_multiplier(hi)


def solve_rdp(epsilon, delta, sample_rate, compositions, grid: bool = False) -> np.ndarray:
    """Smallest noise multiplier per group such that ``compositions`` Poisson-subsampled
    Gaussian steps at ``sample_rate`` are ``(epsilon, delta)``-DP by RDP, on the ledger's grid
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
