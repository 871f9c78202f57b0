"""The exact (PLD) accountant of Gaussian releases, per client, composed round by round.

A run's headline ε for Gaussian releases (DP-FedAvg's user-level noise, DP-SGD's per-step noise,
HW-DPFL, PLDP-FL's tiers, ULDP-FED's local reading) is dp-accounting's privacy loss distribution
(PLD) of every step the client took: Poisson(q)-subsampled Gaussian steps of noise multiplier z
(Abadi et al. 2016; Koskela, Jälkö & Honkela 2020; Doroshenko et al. 2022 for the connect-the-dots
discretisation), each discretised *pessimistically* (its ε is an upper bound of the true one).
RDP (Mironov 2017) converts through a Rényi divergence and overstates ε by 7-35 % on the peers'
vectors (TF Privacy, Opacus); the PLD is what TF Privacy and Opacus (PRV) publish.

A client's releases are its *tally* ``((z, q), steps), ...``; clients with the same tally share
one PLD (:class:`Lineages`). Each round composes the round's part (``steps`` steps of one (z, q))
onto the PLD of the tally before it: one convolution per distinct (tally, part), a few ms. A PLD
whose support passes :data:`MAX_SUPPORT` (ε in the hundreds at :data:`INTERVAL`) is rebuilt from its
tally on a ten times coarser grid, so a huge ε stays cheap and is still an upper bound.

:func:`tally_epsilon` is the same figure in one call (the calibration's,
:mod:`fedcore.accounting.calibrate`): one tally composed at once (``self_compose``), equal to the
round-by-round composition up to float rounding (below 1e-6 relative on the peers' vectors).

>>> round(tally_epsilon((((0.7, 0.01), 120),), 1e-5), 3)    # TF Privacy's PLD test: 2.4612381
2.461
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional

import numpy as np

from .pure import compose

INTERVAL = 1e-3
"""Value discretisation interval of the PLDs (pessimistic: an upper bound of ε, within about 1e-4
relative of dp-accounting's default 1e-4 on the peers' vectors, at a tenth of its cost)."""
MAX_SUPPORT = 200_000
"""Largest PLD support kept at one interval; past it the PLD is rebuilt ten times coarser."""
NO_NOISE = "no noise"
"""A lineage with a noise-free step: no bound (ε = ∞), not a failure of dp-accounting."""
FAILED = (OverflowError, ValueError, MemoryError, FloatingPointError)
"""What dp-accounting raises for a PLD it cannot build (tiny multipliers: astronomically large ε)."""


def whole_steps(steps: float) -> int:
    """Steps as a whole number, rounded up: a fractional count never charges less than it took."""
    return int(math.ceil(float(steps) - 1e-9))


@lru_cache(maxsize=2048)
def part_pld(z: float, q: float, steps: int, interval: float = INTERVAL):
    """dp-accounting's PLD of ``steps`` steps of the Poisson(q)-subsampled Gaussian with multiplier z
    (add/remove neighbours), as its ``PLDAccountant`` builds one ``compose(event, steps)``."""
    from .pure import gaussian_steps_pld

    return gaussian_steps_pld(float(z), float(q), int(steps), interval=interval)


def _size(pld) -> int:
    return max(pld._pmf_remove.size, pld._pmf_add.size)   # noqa: SLF001 -- dp-accounting has no public size


COARSE = 10
"""How much coarser than a tally's own interval a calibration searches before it confirms its point."""
POINTS_PER_EPSILON = 1e4
"""A tally's interval is at most its ε over this (a power of ten times :data:`INTERVAL`): ε = 2 keeps
1e-3, ε = 173 takes 1e-1 (an error of a few 1e-4 of ε), and the support stays near 10^5 points."""


@lru_cache(maxsize=4096)
def _unit_rdp(z: float, q: float) -> np.ndarray:
    from .rdp import INT_ORDERS, SampledGaussianRdp

    return SampledGaussianRdp(np.array([q]), INT_ORDERS)(np.array([z]))[0]


def interval_for(tally: tuple) -> float:
    """The discretisation interval of ``tally``'s PLD: :data:`INTERVAL`, ten times coarser per decade of
    its ε (estimated by RDP at δ = 1e-5, an upper bound) past ``POINTS_PER_EPSILON`` x INTERVAL.

    >>> interval_for((((1.0, 0.05), 20),)), interval_for((((0.05, 1.0), 20),))
    (0.001, 1.0)
    """
    from .rdp import INT_ORDERS, rdp_epsilons

    if any(z <= 0 for (z, _), _k in tally):
        return INTERVAL
    curve = sum(k * _unit_rdp(float(z), float(min(q, 1.0))) for (z, q), k in tally)
    eps = float(rdp_epsilons(curve[None, :], 1e-5, INT_ORDERS)[0])
    if not math.isfinite(eps) or eps <= INTERVAL * POINTS_PER_EPSILON:
        return INTERVAL if math.isfinite(eps) else INTERVAL * 10 ** 6
    return INTERVAL * 10 ** math.ceil(math.log10(eps / (INTERVAL * POINTS_PER_EPSILON)))


def tally_pld(tally: tuple, interval: Optional[float] = None):
    """The PLD of ``tally`` = ``((z, q), steps), ...`` composed at once, at ``interval`` (default
    :func:`interval_for`), coarsened past :data:`MAX_SUPPORT`; raises what dp-accounting raises for a
    PLD it cannot build."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    interval = interval_for(tally) if interval is None else interval
    composed = pld.identity(value_discretization_interval=interval)
    for (z, q), k in tally:
        composed = compose(composed, part_pld(z, q, whole_steps(k), interval))
        if _size(composed) > MAX_SUPPORT:
            return tally_pld(tally, interval * 10)
    return composed


@lru_cache(maxsize=8192)
def tally_epsilon(tally: tuple, delta: float, coarse: bool = False) -> float:
    """ε at ``delta`` of the PLD of ``tally`` (:func:`tally_pld`; ``coarse``: on a :data:`COARSE` times
    coarser grid, still an upper bound); inf where it cannot be built or a multiplier is 0 (no noise)."""
    if any(z <= 0 for (z, _), k in tally if k > 0):
        return math.inf
    try:
        return float(tally_pld(tally, interval_for(tally) * (COARSE if coarse else 1)).get_epsilon_for_delta(delta))
    except FAILED:
        return math.inf


def merged(tally: tuple, zq: tuple, steps: float) -> tuple:
    """``tally`` with ``steps`` more steps at ``zq`` = ``(z, q)``, in its canonical (sorted) order."""
    out = dict(tally)
    out[zq] = out.get(zq, 0.0) + float(steps)
    return tuple(sorted(out.items()))


class Lineages:
    """Each client's Gaussian releases as one PLD, composed round by round (module doc).

    ``key[c]``: client c's tally (None: no Gaussian step yet); ``epsilon[c]``: its ε at its own δ;
    ``failed[c]``: a PLD dp-accounting could not build (the ledger then falls back to RDP).
    """

    def __init__(self, delta: np.ndarray):
        self.delta = np.asarray(delta, np.float64)
        n = len(self.delta)
        self.key: list = [None] * n
        self.epsilon = np.zeros(n)
        self.failed = np.zeros(n, dtype=bool)
        self._plds: dict = {}       # tally -> PLD, for the tallies some client holds now
        self._eps: dict = {}        # (tally, delta) -> ε

    def add(self, ids: np.ndarray, zq: tuple, steps: np.ndarray) -> None:
        """Clients ``ids`` each took ``steps [k]`` steps at ``zq`` = ``(z, q)`` this round."""
        groups: dict = {}
        for c, k in zip(ids.tolist(), np.asarray(steps, np.float64).tolist()):
            groups.setdefault((self.key[c], k), []).append(c)
        for (old, k), members in groups.items():
            new = merged(old or (), zq, k)
            if new not in self._plds:
                self._plds[new] = self._compose(old, zq, k, new)
            for c in members:
                self.key[c] = new
                self.failed[c] = self._plds[new] is None
                self.epsilon[c] = self.epsilon_of(c)
        if len(self._plds) > 4 * len(groups) + 64:      # drop the tallies no client holds any more
            held = set(self.key)
            self._plds = {k: v for k, v in self._plds.items() if k in held}

    def _compose(self, old, zq: tuple, k: float, new: tuple):
        base = self._plds.get(old) if old else None
        if old and (base is None or base is NO_NOISE):
            return base                                 # a lineage that failed (or was unnoised) stays so
        z, q = zq
        if z <= 0:
            return NO_NOISE
        try:
            interval = base._pmf_remove._discretization if base is not None else None   # noqa: SLF001
            needed = interval_for(new)
            if base is None or needed > interval * 1.000001:    # a new lineage, or a decade more of ε
                return tally_pld(new, needed)
            composed = compose(base, part_pld(z, q, whole_steps(k), interval))
            return composed if _size(composed) <= MAX_SUPPORT else tally_pld(new, interval * 10)
        except FAILED:
            return None

    def epsilon_of(self, c: int, delta: Optional[float] = None) -> float:
        """Client ``c``'s ε at its own δ (or ``delta``): 0 before any step, inf when it failed."""
        key = self.key[c]
        if key is None:
            return 0.0
        if key not in self._plds:              # after unpickling (:meth:`__getstate__`)
            try:
                self._plds[key] = NO_NOISE if any(z <= 0 for (z, _), _k in key) else tally_pld(key)
            except FAILED:
                self._plds[key] = None
        pld = self._plds[key]
        if pld is None or pld is NO_NOISE:
            return math.inf
        d = float(self.delta[c] if delta is None else delta)
        memo = (key, d)
        if memo not in self._eps:
            if len(self._eps) > 50_000:
                self._eps.clear()
            self._eps[memo] = float(pld.get_epsilon_for_delta(d))
        return self._eps[memo]

    def epsilons(self, delta: Optional[float] = None) -> np.ndarray:
        """``[N]`` every client's ε (at its own δ, or at ``delta``)."""
        if delta is None:
            return self.epsilon.copy()
        return np.array([self.epsilon_of(c, delta) for c in range(len(self.key))])

    def __getstate__(self):        # a pickled ledger (a replay's result) keeps the figures, not the PLDs
        return {**self.__dict__, "_plds": {}, "_eps": {}}


PLD_LIMIT = 1e4
"""Above this headline ε a run's PLD of RDP-composed clients is not computed (:func:`run_pld`: its
discretised PLD grows with ε, and the gap between two accountants of an ε that large teaches nothing)."""


def run_pld(ledger) -> Optional[float]:
    """The run's ε (largest over clients) with every Gaussian release composed by dp-accounting's PLD
    (:meth:`Ledger.pld_run <.ledger.Ledger.pld_run>`): the headline itself where no client is composed by
    RDP; else the RDP clients get the PLD of their tallies (:func:`.pure.gaussian_pld_epsilon`), past
    :data:`.pure.EXACT_TALLIES` distinct tallies one :func:`.pure.dominating_tally` of them all (an upper
    bound of their largest ε) at the smallest δ. None where it is not computed: a headline above
    :data:`PLD_LIMIT` or a PLD dp-accounting cannot build."""
    from .pure import EXACT_TALLIES, dominating_tally, gaussian_pld_epsilon

    if ledger.threat_model == "none":
        return math.inf
    head = ledger.headline()
    if not ledger.rdp_only.any() or max(head.tolist(), default=0.0) > PLD_LIMIT:
        return None if ledger.rdp_only.any() else max(head.tolist(), default=0.0)
    out = head.copy()
    gaussian = [c for c in np.flatnonzero(np.isfinite(head) & ledger.rdp_only & ledger.rdp_valid & (ledger.pure == 0))
                if ledger.tally[c]]
    if len({frozenset(ledger.tally[c].items()) for c in gaussian}) > EXACT_TALLIES:   # distinct tallies
        values = [gaussian_pld_epsilon(dominating_tally([ledger.tally[c].items() for c in gaussian]),
                                       float(ledger.delta[gaussian].min()))]
    else:
        values = [gaussian_pld_epsilon(tuple(sorted(ledger.tally[c].items())), float(ledger.delta[c])) for c in gaussian]
    if None in values:
        return None
    out[gaussian] = values if len(values) == len(gaussian) else values * len(gaussian)
    return max(out.tolist(), default=0.0)
