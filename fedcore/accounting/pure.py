"""Composition of pure ε-DP releases by their privacy loss distribution (dp-accounting's PLD).

Summing the ε of k pure ε-DP releases (basic composition) is far from tight: LDP-FL's
two-point perturbation releases every weight of every round, k = d x T releases of ε
each, and the sum k ε (13,000 for the demo) is about twice what the k releases really
spend at δ = 1e-5. For pure ε-DP mechanisms the worst case of a k-fold composition is
k-fold randomized response (Kairouz, Oh & Viswanath 2015, Thm 3.3): its privacy loss is
±ε per release. dp-accounting's ``from_privacy_parameters(DifferentialPrivacyParameters(ε, 0))``
is that PLD; composing it gives an (ε', δ) bound valid for *any* k ε-DP releases
(two-point, the stochastic sign's per-coordinate randomized response, Laplace).

:func:`compose_pure` takes a client's releases as ``{ε: count}`` and returns the smaller of
the composed bound and the plain sum. When every release has the same ε (every mechanism
here: a client's per-weight or per-round ε is fixed for the run) the k-fold randomized
response's δ(ε') has a closed form (:func:`exact_rr_delta`), inverted exactly by
:func:`_exact_epsilon`: continuous and increasing in ε, which a calibration by bisection
needs. Releases of different ε are composed by dp-accounting's PLD, on a grid that divides
the smallest ε (the two-point loss values ±ε sit on it exactly) with the result rounded up.

>>> round(compose_pure({1.0: 13000}, 1e-5))
6435
>>> 0.5 * 20 + 1.0 * 5 > compose_pure({0.5: 20, 1.0: 5}, 1e-5)   # mixed ε: dp-accounting's PLD
True
>>> compose_pure({0.5: 1}, 1e-5)        # one release: the pure ε itself
0.5
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Mapping

import numpy as np

MAX_UNIT = 30.0
"""Above this ε per release (e^ε past 10^13) composition saves nothing worth a PLD: the sum is kept."""
GRID_POINTS = 200_000
"""Largest support the composed PLD may have (its FFT costs ~10 ms at that size)."""


def compose_pure(releases: Mapping[float, float], delta: float) -> float:
    """Tightest (ε', delta) bound of the releases ``{ε: count}`` (PLD, or the sum if smaller)."""
    items = tuple(sorted((float(e), int(round(c))) for e, c in releases.items() if c > 0 and e > 0))
    if not items:
        return 0.0
    total = sum(e * c for e, c in items)
    if sum(c for _, c in items) == 1 or delta <= 0 or max(e for e, _ in items) > MAX_UNIT:
        return total
    try:
        if len(items) == 1:
            return min(total, _exact_epsilon(items[0][0], items[0][1], float(delta)))
        return min(total, pld_epsilon(items, float(delta)))
    except (OverflowError, ValueError, MemoryError):  # a PLD dp-accounting cannot build: the sum holds
        return total


@lru_cache(maxsize=4096)
def pld_epsilon(items: tuple, delta: float) -> float:
    from dp_accounting.pld import common, privacy_loss_distribution as pld

    if any(math.isinf(e) for e, _ in items):
        return math.inf
    smallest = min(e for e, _ in items)
    span = sum(2 * e * c for e, c in items)              # width of the composed support
    per_unit = max(1, min(1000, int(GRID_POINTS * smallest / span)))
    interval = smallest / per_unit
    composed = None
    for eps, count in items:
        one = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, 0.0),
                                          value_discretization_interval=interval)
        part = one.self_compose(count) if count > 1 else one
        composed = part if composed is None else composed.compose(part)
    return float(composed.get_epsilon_for_delta(delta))


@lru_cache(maxsize=4096)
def _exact_epsilon(epsilon: float, k: int, delta: float) -> float:
    """Smallest ε' with :func:`exact_rr_delta` ``(epsilon, k, ε') <= delta``, in closed form.

    With ``A_i = C(k,i) e^{(k-i)ε} / (1+e^ε)^k`` and ``B_i = C(k,i) e^{iε} / (1+e^ε)^k``, for ε'
    between the loss values ``L_m = (k-2m)ε < ε' <= L_{m-1}`` the releases with loss above ε'
    are ``i < m`` and ``δ(ε') = sum_{i<m} A_i - e^{ε'} sum_{i<m} B_i``: prefix sums (in log
    space) give δ at every breakpoint, and inside the crossing interval ε' solves exactly.
    """
    import numpy as np
    from scipy.special import gammaln

    i = np.arange(k + 1, dtype=np.float64)
    log_c = gammaln(k + 1) - gammaln(i + 1) - gammaln(k - i + 1) - k * np.logaddexp(0.0, epsilon)
    log_a = np.logaddexp.accumulate(log_c + (k - i) * epsilon)        # log sum_{i' <= i} A_i'
    log_b = np.logaddexp.accumulate(log_c + i * epsilon)
    loss = (k - 2 * i) * epsilon                                       # L_i, decreasing
    # delta at the breakpoint L_m counts i < m: prefix m - 1
    with np.errstate(over="ignore", invalid="ignore"):
        at_break = np.exp(log_a[:-1]) - np.exp(loss[1:] + log_b[:-1])  # δ(L_m), m = 1..k
    above = np.flatnonzero(at_break > delta)                           # ε' lies above these L_m
    if len(above) == 0:
        return max(0.0, float(loss[0]) if delta <= 0 else 0.0)
    m = int(above[0]) + 1                                              # the largest L_m with δ(L_m) > delta
    log_rest = log_a[m - 1] + np.log1p(-delta * np.exp(-log_a[m - 1]))
    return max(0.0, float(min(loss[m - 1], log_rest - log_b[m - 1])))


def exact_rr_delta(epsilon: float, k: int, eps_prime: float) -> float:
    """δ(ε') of k-fold randomized response with parameter ε, in closed form (Kairouz et al.
    2015, Thm 3.3): ``sum_{i: (k - 2i) ε > ε'} C(k, i) (e^{(k-i)ε} - e^{ε'} e^{iε}) / (1 + e^ε)^k``.
    The test of :func:`compose_pure`; computed in log space."""
    from math import exp, lgamma

    log_norm = k * math.log1p(math.exp(epsilon))
    out = 0.0
    for i in range(k + 1):
        loss = (k - 2 * i) * epsilon
        if loss <= eps_prime:
            break
        log_c = lgamma(k + 1) - lgamma(i + 1) - lgamma(k - i + 1)
        out += exp(log_c + (k - i) * epsilon - log_norm) * (1 - exp(eps_prime - loss))
    return max(out, 0.0)


PLD_INTERVAL = 1e-3
"""Value discretisation interval of the Gaussian PLDs (pessimistic: an upper bound)."""


def gaussian_steps_pld(z: float, q: float, steps: int, relation: str = "ADD_OR_REMOVE_ONE",
                       interval: float = PLD_INTERVAL):
    """dp-accounting's PLD of ``steps`` Gaussian steps of noise multiplier ``z``, each Poisson(``q``)-subsampled
    when q < 1 (Abadi et al. 2016), under the neighbouring ``relation`` (a ``dp_accounting.NeighboringRelation``
    name): built exactly as dp-accounting's ``PLDAccountant`` builds one ``compose(event, steps)`` of a
    ``PoissonSampledDpEvent`` (a ``GaussianDpEvent`` for q >= 1), so that composing these parts in order is
    that accountant bit for bit, but for one step: the accountant self-composes it once, which only moves
    tail mass below 1e-15 to the infinite loss (a bound at least as large); here the step's PLD is kept as
    built (a DSDP-FedAvg run's steps each have their own multiplier: half the run-end PLD's cost).
    For z > 0, q > 0; raises what dp-accounting raises.

    Add/remove neighbours (and replace-special) are built by :func:`_gaussian_pld`: dp-accounting's
    ``from_gaussian_mechanism`` with the hockey-stick divergences of all the grid's losses at once."""
    import dp_accounting
    from dp_accounting.pld import privacy_loss_distribution as pld

    neighbours = getattr(dp_accounting.NeighboringRelation, relation)
    if neighbours == dp_accounting.NeighboringRelation.REPLACE_ONE:
        build = lambda std, rate: pld.from_gaussian_mechanism(   # noqa: E731
            standard_deviation=std, value_discretization_interval=interval, sampling_prob=rate,
            neighboring_relation=neighbours)
    else:
        build = lambda std, rate: _gaussian_pld(std, rate, interval)   # noqa: E731
    if q >= 1:
        return build(z / math.sqrt(steps), 1.0)
    one = build(z, q)
    return one if steps == 1 else self_compose(one, steps)   # one step: no FFT, nor its 1e-15 tail truncation


def _gaussian_pld(standard_deviation: float, sampling_prob: float, interval: float):
    """``dp_accounting.pld.from_gaussian_mechanism(standard_deviation, value_discretization_interval=interval,
    sampling_prob=sampling_prob)`` (add/remove neighbours, connect-the-dots, pessimistic) bit for bit: the
    library's steps (``_create_pld_pmf_from_monotone_privacy_loss``, continuous branch), the grid's divergences
    computed at once (:func:`_vectorised_gaussian_loss`) where the library takes each loss in a Python loop
    (0.17 s of a 0.2 s PLD at q = 0.1, z = 0.57), the PMF made dense at once (:func:`_connect_dots_pmf`)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    loss = _vectorised_gaussian_loss()

    def single(adjacency):
        mechanism = loss(standard_deviation, sampling_prob=sampling_prob, adjacency_type=adjacency)
        bounds = mechanism.connect_dots_bounds()
        upper = math.ceil(bounds.epsilon_upper / interval)
        lower = math.floor(bounds.epsilon_lower / interval)
        return _connect_dots_pmf(interval, lower, upper,
                                 mechanism.get_delta_for_epsilon(np.arange(lower, upper + 1) * interval))

    return pld._pld_for_subsampled_mechanism(single, sampling_prob)   # noqa: SLF001 -- the library's own steps


def _connect_dots_pmf(interval: float, lower: int, upper: int, deltas: np.ndarray):
    """dp-accounting's ``create_pmf_pessimistic_connect_dots_fixed_gap`` (Doroshenko et al. 2022, Algorithm 1)
    bit for bit, its probabilities handed to ``DensePLDPmf`` as the array they are (the library makes a dict of
    them and lists it again in Python: 40 % of a part's cost); a support of at most the library's sparse size
    is left to the library."""
    from dp_accounting.pld import pld_pmf

    if upper - lower + 1 <= pld_pmf._MAX_PMF_SPARSE_SIZE or np.any(deltas < 0) or np.any(deltas > 1) \
            or np.any(np.diff(deltas) > pld_pmf._DELTA_DIFF_TOLERANCE):   # noqa: SLF001 -- its errors, its way
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(interval, lower, upper, deltas)
    deltas = np.minimum.accumulate(np.asarray(deltas, dtype=np.float64))
    diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1 - deltas[0] + diffs[0] / math.expm1(interval)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(interval)) / math.expm1(interval)
    probs[-1] = diffs[-1] / math.expm1(-interval)
    return pld_pmf.DensePLDPmf(interval, lower, np.maximum(0.0, probs), deltas[-1], True)


@lru_cache(maxsize=1)
def _vectorised_gaussian_loss():
    """dp-accounting's ``GaussianPrivacyLoss`` (add or remove adjacency) whose ``get_delta_for_epsilon`` finds
    every loss's cut-off at once: the library's scalar steps (``inverse_privacy_loss``, ``log_a_times_exp_b_plus_c``,
    ``_log_sub``) written on arrays, operation for operation (``tests/test_rdp_vectorised.py``: the same PLD). Its
    normal distribution gives scipy's values from ``scipy.special`` without building a frozen ``scipy.stats``
    distribution per loss (0.2 s of a W3 run-end PLD's 1.1 s)."""
    import numbers

    from dp_accounting.pld import privacy_loss_mechanism as plm
    from scipy import special

    class Normal:   # scipy.stats.norm(scale=σ)'s ppf, cdf and logcdf values (the library's noise_cdf and
        # noise_log_cdf read these), without freezing it (1.3 ms each) nor its argument checks
        def __init__(self, scale: float):
            self.scale = scale

        def ppf(self, q):
            return (special.ndtri(np.asarray(q, dtype=np.float64)) * self.scale + 0.0)[()]

        def cdf(self, x):
            return special.ndtr((np.asarray(x, dtype=np.float64) - 0.0) / self.scale)[()]

        def logcdf(self, x):
            return special.log_ndtr((np.asarray(x, dtype=np.float64) - 0.0) / self.scale)[()]

    class VectorisedGaussianLoss(plm.GaussianPrivacyLoss):
        def __init__(self, standard_deviation: float, sensitivity: float = 1, pessimistic_estimate: bool = True,
                     log_mass_truncation_bound: float = -50, sampling_prob: float = 1.0,
                     adjacency_type=plm.AdjacencyType.REMOVE):   # the library's, its normal as Normal
            if standard_deviation <= 0:
                raise ValueError(f"Standard deviation is not a positive real number: {standard_deviation}")
            if log_mass_truncation_bound > 0:
                raise ValueError(f"Log mass truncation bound is not a non-positive real number: "
                                 f"{log_mass_truncation_bound}")
            self._standard_deviation = standard_deviation
            self._gaussian_random_variable = Normal(standard_deviation)
            self._pessimistic_estimate = pessimistic_estimate
            self._log_mass_truncation_bound = log_mass_truncation_bound
            plm.AdditiveNoisePrivacyLoss.__init__(self, sensitivity, False, sampling_prob, adjacency_type)

        def _cutoffs(self, loss: np.ndarray) -> np.ndarray:
            s, var, q = self.sensitivity, self._standard_deviation ** 2, self.sampling_prob
            add = self.adjacency_type == plm.AdjacencyType.ADD

            def without(x):   # _inverse_privacy_loss_without_subsampling_{remove,add}
                return s + (-0.5 * s - x * var / s) if add else -0.5 * s - x * var / s

            if q == 1.0:
                return without(loss)
            edge = -math.log(1 - q) if add else math.log(1 - q)
            near = np.abs(loss - edge) <= 1e-9 * np.maximum(np.abs(loss), abs(edge))   # math.isclose
            if (~near & ((loss > edge) if add else (loss <= edge))).any():
                raise ValueError(f"privacy_loss beyond log(1 - sampling_prob) ({edge})")
            b = -loss if add else loss                    # log_a_times_exp_b_plus_c(1 / q, b, 1 - 1 / q)
            a, c = 1 / q, 1 - 1 / q
            d = b + np.log(a)
            if (np.log(-c) >= d)[~near & (b != 0)].any():
                raise ValueError("a must be greater than b")
            with np.errstate(invalid="ignore", divide="ignore"):
                value = np.where(b == 0, np.log(a + c), d + np.log1p(-np.exp(np.log(-c) - d)))
            value = -value if add else value
            return np.where(near, without(math.inf if add else -math.inf), without(value))

        def get_delta_for_epsilon(self, epsilon):
            if self.adjacency_type not in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE):
                return super().get_delta_for_epsilon(epsilon)
            is_scalar = isinstance(epsilon, numbers.Number)
            epsilons = np.array([epsilon]) if is_scalar else np.asarray(epsilon)
            deltas = np.zeros_like(epsilons, dtype=float)
            if self.sampling_prob == 1.0:
                inverse = np.full_like(epsilons, True, dtype=bool)
            elif self.adjacency_type == plm.AdjacencyType.ADD:
                inverse = epsilons < -math.log1p(-self.sampling_prob)
            else:
                inverse = epsilons > math.log1p(-self.sampling_prob)
                deltas[~inverse] = -np.expm1(epsilons[~inverse])
            x = self._cutoffs(np.asarray(epsilons[inverse], dtype=np.float64))
            deltas[inverse] = self.mu_upper_cdf(x) - np.exp(epsilons[inverse] + self.mu_lower_log_cdf(x))
            deltas = np.clip(deltas, 0, 1)
            return float(deltas[0]) if is_scalar else deltas

    return VectorisedGaussianLoss


TAIL_MASS_TRUNCATION = 1e-15
"""dp-accounting's default ``tail_mass_truncation`` of ``PrivacyLossDistribution.compose``."""


def compose(first, second):
    """``first.compose(second)`` (dp-accounting's ``PrivacyLossDistribution.compose``, tails of at most
    :data:`TAIL_MASS_TRUNCATION` truncated pessimistically) bit for bit, each dense PMF's tails found by one
    cumulative sum where the library walks them element by element in Python (``_truncate_tails``: a third
    of a W3 run-end PLD's cost). A float64 cumulative sum adds in the order the walk does."""
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution as pld

    whole = first.compose(second, tail_mass_truncation=0.0)
    pmfs = [whole._pmf_remove] if whole._symmetric else [whole._pmf_remove, whole._pmf_add]   # noqa: SLF001
    if not all(isinstance(p, pld_pmf.DensePLDPmf) and p._pessimistic_estimate for p in pmfs):   # noqa: SLF001
        return first.compose(second)
    return pld.PrivacyLossDistribution(*(_truncated(p, TAIL_MASS_TRUNCATION) for p in pmfs))


def self_compose(distribution, num_times: int):
    """``distribution.self_compose(num_times)`` (dp-accounting's ``PrivacyLossDistribution.self_compose``, tails
    of at most :data:`TAIL_MASS_TRUNCATION` truncated) bit for bit for dense PMFs: the Chernoff bounds of the
    truncation (``common.compute_self_convolve_bounds``, the supplement's eq. 5 of Koskela et al.'s FFT
    accountant as the library reads it) come from one matrix product (:func:`_self_convolve_bounds`), where the
    library calls ``logsumexp`` 40 times (two thirds of a W3 run-end PLD's cost)."""
    from dp_accounting.pld import pld_pmf, privacy_loss_distribution as pld

    pmfs = ([distribution._pmf_remove] if distribution._symmetric                  # noqa: SLF001
            else [distribution._pmf_remove, distribution._pmf_add])                # noqa: SLF001
    if not all(isinstance(p, pld_pmf.DensePLDPmf) for p in pmfs):
        return distribution.self_compose(num_times)
    return pld.PrivacyLossDistribution(*(_self_composed(p, num_times) for p in pmfs))


def _self_composed(pmf, num_times: int, tail_mass: float = TAIL_MASS_TRUNCATION):
    """dp-accounting's ``DensePLDPmf.self_compose`` (``common.self_convolve``), its bounds by :func:`_self_convolve_bounds`."""
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    probs = pmf._probs                                                             # noqa: SLF001
    lower, upper = _self_convolve_bounds(probs, num_times, tail_mass)
    length = upper - lower + 1
    fast = fft.next_fast_len(max(length, len(probs)))
    out = np.roll(np.real(fft.ifft(fft.fft(probs, fast) ** num_times)), -lower)[:length]
    infinity = tail_mass - math.expm1(num_times * math.log1p(-pmf._infinity_mass))   # noqa: SLF001
    return pld_pmf.DensePLDPmf(pmf._discretization, pmf._lower_loss * num_times + lower, np.array(out),  # noqa: SLF001
                               infinity, pmf._pessimistic_estimate)                 # noqa: SLF001


def _self_convolve_bounds(probs: np.ndarray, num_times: int, tail_mass: float) -> tuple[int, int]:
    """``common.compute_self_convolve_bounds(probs, num_times, tail_mass)`` (its default orders ±1..20 / n), the
    same integers. Each bound is ``ceil`` or ``floor`` of ``(num_times log M(t) + log(2 / tail_mass)) / t`` with
    ``log M(t) = log sum_i p_i e^(t i)``; as ``|t i| <= 20`` no term overflows, so all 40 log-MGFs come from powers
    of ``e^(i / n)`` and one matrix product (7.6 ms of ``logsumexp`` calls become 1 ms at n = 10,000). The sum
    differs from the library's by at most ``n`` ulps of it, each term by 20, which moves a bound by under
    :func:`_margin`; an order whose bound lies that close
    to a whole number takes the library's own ``logsumexp``, so the integers are the library's."""
    upper, lower = (len(probs) - 1) * num_times, 0
    if tail_mass == 0:
        return lower, upper
    orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / len(probs)
    powers = np.empty((40, len(probs)))                   # row j: e^(orders[j] i), as powers of e^(±i / n)
    powers[20] = np.exp(np.arange(len(probs)) / len(probs))
    powers[19] = np.exp(-np.arange(len(probs)) / len(probs))
    for k in range(1, 20):
        np.multiply(powers[19 + k], powers[20], out=powers[20 + k])
        np.multiply(powers[20 - k], powers[19], out=powers[19 - k])
    with np.errstate(divide="ignore"):
        log_mgfs = np.log(powers @ probs)
    margin = _margin(len(probs), num_times)
    for j, (order, log_mgf) in enumerate(zip(orders.tolist(), log_mgfs.tolist())):
        bound = (num_times * log_mgf + math.log(2 / tail_mass)) / order
        if math.isfinite(bound) and abs(bound - round(bound)) < margin:
            bound = (num_times * _library_log_mgf(probs, order) + math.log(2 / tail_mass)) / order
        if not math.isfinite(bound):
            continue
        if order > 0:
            upper = min(upper, math.ceil(bound))
        if order < 0:
            lower = max(lower, math.floor(bound))
    return lower, upper


def _margin(length: int, num_times: int) -> float:
    """How far from a whole number a bound of :func:`_self_convolve_bounds` must lie to be taken from the matrix
    product: its log-MGF is off by at most ``length`` ulps (a sum of ``length`` terms, each power within 20),
    times ``num_times / |t| <= num_times * length``; a thousandfold that, and never under 1e-3."""
    return max(1e-3, 1e3 * num_times * length * length * np.finfo(np.float64).eps * 21)


def _library_log_mgf(probs: np.ndarray, order: float) -> float:
    from scipy import special

    return float(special.logsumexp(np.arange(len(probs)) * order, b=probs))


def _truncated(pmf, tail_mass: float):
    """dp-accounting's ``_truncate_tails`` of a pessimistic dense PMF: the longest prefix and suffix each of
    mass at most ``tail_mass / 2`` cut, the prefix's mass added to the first kept loss, the suffix's to ∞."""
    from dp_accounting.pld import pld_pmf

    probs = pmf._probs                                                          # noqa: SLF001

    def prefix(values: np.ndarray) -> int:
        over = np.flatnonzero(np.cumsum(values) > tail_mass / 2)
        return int(over[0]) if over.size else len(values)

    left = prefix(probs)
    right = max(len(probs) - prefix(probs[::-1]), left + 1)
    kept = probs[left:right]
    kept[0] += np.sum(probs[:left])
    return pld_pmf.DensePLDPmf(pmf._discretization, pmf._lower_loss + left, kept,   # noqa: SLF001
                               pmf._infinity_mass + np.sum(probs[right:]), True)


def composed_gaussian_pld(tally: tuple, relation: str = "ADD_OR_REMOVE_ONE", interval: float = PLD_INTERVAL):
    """The PLD of ``tally`` = ``((z, q), steps), ...`` (whole steps), its parts (:func:`gaussian_steps_pld`)
    composed in the tally's order as dp-accounting's ``PLDAccountant`` composes them; None for a z = 0 step
    (no guarantee). The parts are built side by side by the curve workers where a run has them running
    (:func:`.curve_workers.side_by_side`: a W3 run's 14 on a GPU host), else here."""
    import base64
    import pickle

    from dp_accounting.pld import privacy_loss_distribution as pld

    from .curve_workers import side_by_side

    parts = [((float(z), float(q)), int(k)) for (z, q), k in tally if q > 0 and k > 0]
    if any(z <= 0 for (z, _), _ in parts):
        return None
    built = side_by_side([["pld", z, q, k, relation, interval] for (z, q), k in parts]) if len(parts) > 1 else None
    composed = pld.identity(value_discretization_interval=interval)
    for i, ((z, q), k) in enumerate(parts):
        payload = built[i] if built is not None else None
        part = pickle.loads(base64.b64decode(payload)) if payload is not None else gaussian_steps_pld(z, q, k, relation,
                                                                                                      interval)
        composed = compose(composed, part)
    return composed


def composed_epsilon(tally: tuple, relation: str = "ADD_OR_REMOVE_ONE", interval: float = PLD_INTERVAL,
                     delta: float = 1e-5) -> float:
    """ε at ``delta`` of :func:`composed_gaussian_pld` ``(tally, relation, interval)``; inf where it gives None."""
    composed = composed_gaussian_pld(tally, relation, interval)
    return math.inf if composed is None else float(composed.get_epsilon_for_delta(delta))


def _epsilon_elsewhere(tally: tuple, delta: float):
    """:func:`composed_epsilon` of ``tally`` computed by the run's end worker (:func:`.curve_workers.end_worker`,
    started beside a GPU run), or None where there is none or it could not (the caller computes it here). The
    worker runs the same functions: the same float, which JSON carries exactly."""
    from .curve_workers import add_background_cpu, end_worker

    worker = end_worker()
    parts = [[float(z), float(q), int(k)] for (z, q), k in tally if q > 0 and k > 0]
    if worker is None or len(parts) < 2 or any(z <= 0 for z, _, _ in parts):
        return None
    try:
        payload, seconds = worker.result(worker.ask(["epsilon", parts, "ADD_OR_REMOVE_ONE", PLD_INTERVAL, delta]))
    except (RuntimeError, OSError, ValueError):   # the worker ended (a closed pipe)
        return None
    add_background_cpu(seconds)
    return payload


@lru_cache(maxsize=512)
def gaussian_pld_epsilon(tally: tuple, delta: float) -> float:
    """ε at ``delta`` of ``tally`` = ``((z, q), steps), ...``: that many Poisson(q)-subsampled Gaussian
    steps of noise multiplier z (Abadi et al. 2016), composed by dp-accounting's PLD accountant
    (pessimistic discretisation at 1e-3: an upper bound; :func:`composed_gaussian_pld`); inf for a z = 0
    step; None where dp-accounting cannot build the PLD (tiny multipliers: astronomically large ε, where
    the two accountants' gap teaches nothing)."""
    whole = tuple((zq, int(round(steps))) for zq, steps in tally)
    elsewhere = _epsilon_elsewhere(whole, delta)
    if elsewhere is not None:
        return float(elsewhere)
    try:
        return composed_epsilon(whole, delta=delta)
    except (OverflowError, ValueError, MemoryError):
        return None


EXACT_TALLIES = 8
"""Up to this many distinct per-client tallies, :meth:`Ledger.pld_run` composes each one; above it (ULDP's
DSDP-FedAvg gives each of 1,000 users its own noise multipliers: 446 distinct tallies in 20 rounds,
which took over 9 CPU minutes) it composes one :func:`dominating_tally` instead."""
GRID_RATIO = 1.01
"""A dominating tally with more than :data:`MAX_ENTRIES` multipliers has each z rounded *down* onto
the grid ``GRID_RATIO**k``: a smaller multiplier only adds privacy loss, so the bound stays an upper bound."""
MAX_ENTRIES = 64


def dominating_tally(tallies, grid_ratio: float = GRID_RATIO, max_entries: int = MAX_ENTRIES) -> tuple:
    """One tally of Gaussian steps whose PLD bounds every tally in ``tallies`` (each ``((z, q), steps), ...``).

    Per sampling rate q, each tally's multipliers are listed smallest first (steps expanded) and the
    result takes the elementwise minimum over tallies (a shorter list counts as z = inf: no step).
    A step at a larger z is a post-processing of one at a smaller z (add more noise), so client c's
    k-th smallest step is dominated by the result's k-th, and composition keeps the order: the
    composed ε of the result is at least every client's (Dong, Roth & Su 2019, Lemma on dominating
    pairs composing). Tight when one client is worst in every step, as with equal sampling.

    >>> dominating_tally([(((1.0, 0.1), 2.0),), (((0.5, 0.1), 1.0), ((2.0, 0.1), 1.0))])
    (((0.5, 0.1), 1), ((1.0, 0.1), 1))
    """
    tallies = [t if isinstance(t, (tuple, list, type({}.items()))) else tuple(t) for t in tallies]
    z = np.array([key[0] for tally in tallies for key, _ in tally], dtype=np.float64)
    if not len(z):
        return ()
    rate = np.array([key[1] for tally in tallies for key, _ in tally], dtype=np.float64)
    steps = np.ceil(np.array([k for tally in tallies for _, k in tally], dtype=np.float64) - 1e-9).astype(np.int64)
    owner = np.repeat(np.arange(len(tallies)), [len(tally) for tally in tallies])
    grid, code = np.unique(z, return_inverse=True)
    order = np.argsort(owner * len(grid) + code.reshape(-1))       # each tally's entries, smallest z first
    out: dict[tuple, int] = {}
    for q in dict.fromkeys(rate.tolist()):                         # each rate, in the order first met
        at = order[rate[order] == q]
        who = np.repeat(owner[at], steps[at])
        if not len(who):
            continue
        per = np.bincount(who)
        position = np.arange(len(who)) - (np.cumsum(per) - per)[who]   # each step's rank in its tally
        low = np.full(int(per.max()), np.inf)
        np.minimum.at(low, position, np.repeat(z[at], steps[at]))   # the k-th smallest over every tally
        values, counts = np.unique(low, return_counts=True)
        if len(values) > max_entries:
            values = grid_ratio ** np.floor(np.log(values) / np.log(grid_ratio) + 1e-12)
        for zv, k in zip(values.tolist(), counts.tolist()):
            out[(zv, q)] = out.get((zv, q), 0) + k
    return tuple(sorted(out.items()))
