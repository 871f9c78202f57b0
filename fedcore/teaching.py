"""One number through one mechanism: the science behind the dashboard's Mechanisms page.

A client holds a single true value ``w`` (one weight of its update) and releases it
through a registered mechanism at budget ``eps`` (and ``delta``). This module gives,
for the mechanisms where a scalar demonstration is meaningful:

- :func:`sample_outputs`: draws from the *real* mechanism, by calling its ``privatize``
  on an ``[n, 1]`` batch of identical updates (a minimal :class:`RunContext`, ``d = 1``);
- :func:`output_law`: the analytic law of the released value (two spikes for LDP-FL's
  two-point and the stochastic sign, a Gaussian or Laplace density otherwise), its mean,
  variance and calibrated noise scale, the calibration taken from the mechanism modules'
  own functions (``pldp_sigma``, ``ldp_sign_sigma``, ``gaussian_multiplier``,
  ``decayed_clip``);
- :func:`error_curve` / :func:`empirical_error`: the price of privacy against eps, as the
  output's variance, or for the stochastic sign the probability that the released sign is
  wrong;
- :func:`epsilon_reading`: what eps means for this mechanism in words, with worked
  numbers (the likelihood ratio ``e^eps``; for Gaussian noise the exact ``delta`` of one
  release, Balle & Wang 2018, Theorem 8).

Scalar conventions (``d = 1``): element-wise and L2 clipping coincide (``w`` is clamped to
the clip range) and the LDP sensitivity is the range's width, e.g. ``2 c`` for ``[-c, c]``.
The demo fixes a few options so one release is shown in isolation: two-point without
shuffling (shuffling only permutes who sent which value), ULDP-FED at a user's first
participation with its whole budget for it (``r = T = 1``, no recall), stochastic sign
with ``Delta_2 = 2 c``.

>>> law = output_law("two_point", w=0.05, epsilon=1.0, delta=1e-5, settings={"radius": 0.1})
>>> [round(p, 4) for p in law.points], [round(p, 4) for p in law.probs]
([-0.2164, 0.2164], [0.3845, 0.6155])
>>> round(law.mean, 4), round(law.variance, 5)
(0.05, 0.04433)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from scipy.special import ndtr

from .config import LocalConfig
from .context import RunContext
from .mechanisms import MECHANISMS
from .mechanisms.base import Mechanism, Upload
from .mechanisms.gaussian import pldp_sigma
from .mechanisms.ldp_sign import ldp_sign_sigma
from .mechanisms.uldp_gaussian import decayed_clip, gaussian_multiplier

EPSILON_CHOICES = (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0)
"""The budgets the page offers (log-spaced), per release of one number."""
EPSILON_RANGE = (EPSILON_CHOICES[0], EPSILON_CHOICES[-1])
DELTA_CHOICES = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


@dataclass(frozen=True)
class Knob:
    """One numeric setting of a scalar demo: a mechanism option, or ``"rounds"`` (R)."""

    name: str
    label: str
    low: float
    high: float
    default: float
    step: float
    help: str = ""
    integer: bool = False


@dataclass(frozen=True)
class ScalarDemo:
    """How a registered mechanism is shown on one number.

    ``guarantee``: ``"pure"`` (eps-LDP) or ``"approximate"`` ((eps, delta)-LDP).
    ``error``: what :func:`error_curve` measures. ``fixed``: options the demo pins.
    """

    name: str
    guarantee: str
    error: str
    knobs: tuple[Knob, ...]
    fixed: dict = field(default_factory=dict)

    @property
    def needs_delta(self) -> bool:
        return self.guarantee == "approximate"

    def defaults(self) -> dict:
        return {k.name: k.default for k in self.knobs}


VARIANCE = "variance of the released value"
SIGN_ERROR = "P(released sign differs from the sign of w)"

SCALAR_DEMOS: dict[str, ScalarDemo] = {
    d.name: d for d in (
        ScalarDemo("two_point", "pure", VARIANCE, (
            Knob("radius", "clip radius r (range [-r, r])", 0.01, 1.0, 0.075, 0.005,
                 "LDP-FL uses r = 0.075 on MNIST and Fashion-MNIST"),), fixed={"shuffle": False}),
        ScalarDemo("ldp_sign", "approximate", SIGN_ERROR, (
            Knob("clip", "clip c (range [-c, c])", 0.1, 10.0, 4.0, 0.1,
                 "PLDP-FL non-IID MNIST: c = 4; the demo sets Delta_2 = 2c, the width of the range"),)),
        ScalarDemo("gaussian", "approximate", VARIANCE, (
            Knob("clip", "clip c (range [-c, c])", 0.1, 10.0, 2.0, 0.1, "PLDP-FL: c = 2 (Fashion-MNIST)"),
            Knob("sample_rate", "record sampling rate q", 0.05, 0.95, 0.8, 0.05,
                 "PLDP-FL's q; the calibration divides by 1 - q"),
            Knob("rounds", "rounds R the budget covers", 1, 100, 1, 1,
                 "sigma grows like sqrt(R): the whole budget is split over R rounds", integer=True))),
        ScalarDemo("laplace", "pure", VARIANCE, (
            Knob("clip", "clip c (range [-c, c])", 0.01, 1.0, 0.05, 0.01,
                 "L1 sensitivity of one number in [-c, c] is 2c"),)),
        ScalarDemo("uldp_gaussian", "approximate", VARIANCE, (
            Knob("clip0", "initial clip C_0", 0.1, 10.0, 2.0, 0.1, "ULDP-FED: C_0 = 2"),
            Knob("beta", "clip decay beta", 0.0, 0.2, 0.06, 0.01,
                 "first participation: C_1 = C_0 exp(-beta)")),
            fixed={"recall": "none", "max_participations": 1}),
    )
}
"""The registered mechanisms a one-number demo makes sense for. Left out: ``none``
(nothing to show), ``dp_sgd`` and ``hw_gaussian`` (their noise is calibrated to what
local training can move, so a single number has no meaningful sensitivity)."""


def check_budget(epsilon: float, delta: Optional[float] = None) -> None:
    """Raise ``ValueError`` naming the problem if ``epsilon`` / ``delta`` cannot be used."""
    lo, hi = EPSILON_RANGE
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0 (this page offers {lo:g} to {hi:g}); "
                         f"got {epsilon!r}")
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) (typically 1e-5, below 1 / number of clients); got {delta!r}")


def scalar_demo(name: str) -> ScalarDemo:
    """The demo of ``name``; a ``KeyError`` naming the choices otherwise."""
    try:
        return SCALAR_DEMOS[name]
    except KeyError:
        raise KeyError(f"no scalar demo for mechanism {name!r}; choose one of: {', '.join(SCALAR_DEMOS)}") from None


def _options(name: str, settings: Optional[dict]) -> dict:
    demo = scalar_demo(name)
    values = {**demo.defaults(), **(settings or {})}
    options = {k: float(v) for k, v in values.items() if k != "rounds"}
    options.update(demo.fixed)
    if name == "ldp_sign":
        options["l2_sensitivity"] = 2 * options["clip"]
    return options


def _rounds(name: str, settings: Optional[dict]) -> int:
    return int((settings or {}).get("rounds", scalar_demo(name).defaults().get("rounds", 1)))


def scalar_context(epsilon, delta: float, rounds: int = 1) -> RunContext:
    """A run of ``n`` clients holding one parameter each, client ``i`` with budget ``epsilon[i]``."""
    eps = torch.as_tensor(np.atleast_1d(np.asarray(epsilon, dtype=np.float64)), dtype=torch.float32)
    n = len(eps)
    return RunContext(num_clients=n, client_sizes=torch.full((n,), 1000.0), epsilon=eps,
                      delta=torch.full((n,), float(delta)), rounds=rounds, participation=1.0,
                      num_params=1, layer_slices={"w": slice(0, 1)}, label_counts=np.ones((n, 1)),
                      num_classes=1, local=LocalConfig(), device=torch.device("cpu"))


def build_mechanism(name: str, epsilon, delta: float = 1e-5, settings: Optional[dict] = None) -> Mechanism:
    """The registered mechanism ``name`` for ``len(epsilon)`` one-parameter clients."""
    cls = MECHANISMS.get(name)
    options = cls.parse_options(_options(name, settings), f"mechanisms.{name}")
    return cls(options, scalar_context(epsilon, delta, _rounds(name, settings)))


def clip_range(name: str, settings: Optional[dict] = None) -> tuple[float, float]:
    """The interval the mechanism clips ``w`` to before perturbing it."""
    o = _options(name, settings)
    if name == "two_point":
        return -o["radius"], o["radius"]
    if name == "uldp_gaussian":
        c1 = float(decayed_clip(o["clip0"], o["beta"], torch.tensor(1)))
        return -c1, c1
    return -o["clip"], o["clip"]


def scalar_upload(name: str, w: float, epsilon, delta: float = 1e-5, settings: Optional[dict] = None,
                  n: int = 10_000, seed: int = 0) -> Upload:
    """Call the real mechanism's ``privatize`` on ``n`` clients that all hold ``w``.

    ``epsilon`` is one budget or ``n`` budgets (one per draw).
    """
    eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (n,)).copy()
    mech = build_mechanism(name, eps, delta, settings)
    gen = torch.Generator().manual_seed(int(seed))
    updates = torch.full((n, 1), float(w))
    return mech.privatize(updates, torch.arange(n), 1, gen)


def sample_outputs(name: str, w: float, epsilon, delta: float = 1e-5, settings: Optional[dict] = None,
                   n: int = 10_000, seed: int = 0) -> np.ndarray:
    """``[n]`` values the server receives when ``n`` clients release ``w`` (see :func:`scalar_upload`)."""
    return scalar_upload(name, w, epsilon, delta, settings, n, seed).values[:, 0].double().numpy()


# ----------------------------------------------------------------------------- analytic laws


def two_point_law(w, epsilon, center: float, radius: float):
    """LDP-FL Eq. 2 (seed 001): outputs ``c -+ r (e^eps + 1)/(e^eps - 1)`` and their probabilities.

    ``P(high) = [(w - c)(e^eps - 1) + r (e^eps + 1)] / [2 r (e^eps + 1)]``; returns
    ``(low, high, p_low, p_high)``, broadcasting over arrays.
    """
    w, eps = np.asarray(w, dtype=float), np.asarray(epsilon, dtype=float)
    e = np.exp(eps)
    magnitude = radius * (e + 1) / (e - 1)
    p_high = ((w - center) * (e - 1) + radius * (e + 1)) / (2 * radius * (e + 1))
    return center - magnitude, center + magnitude, 1 - p_high, p_high


def two_point_variance(w, epsilon, center: float, radius: float):
    """LDP-FL Sec. 4.3 (seed 001): ``Var[w*] = r^2 ((e^eps + 1)/(e^eps - 1))^2 - (w - c)^2``."""
    e = np.exp(np.asarray(epsilon, dtype=float))
    return radius ** 2 * ((e + 1) / (e - 1)) ** 2 - (np.asarray(w, dtype=float) - center) ** 2


def ldp_sign_p_plus(w, sigma):
    """PLDP-FL Sec. 3.1 (seed 000; Jin et al. 2020): ``P(+1) = Phi(w / sigma)``, ``w`` clipped."""
    return ndtr(np.asarray(w, dtype=float) / np.asarray(sigma, dtype=float))


def sign_error(w, sigma):
    """Probability that ``ldp_sign`` releases the wrong sign: ``Phi(-|w| / sigma)``.

    The true sign of ``w = 0`` is taken as ``+1`` (the mechanism's tie rule), so the error
    is 1/2 there, as the formula gives.
    """
    return ndtr(-np.abs(np.asarray(w, dtype=float)) / np.asarray(sigma, dtype=float))


def empirical_sign_error(signs, w: float) -> float:
    """Fraction of released signs that differ from the sign of ``w`` (``+1`` for ``w >= 0``)."""
    truth = 1.0 if w >= 0 else -1.0
    return float(np.mean(np.asarray(signs) != truth))


def mass_frequencies(samples, points) -> np.ndarray:
    """Fraction of ``samples`` at each support point (each sample counted at its nearest
    point: the mechanism computes in float32, the analytic points are float64)."""
    samples, points = np.asarray(samples, dtype=float), np.asarray(points, dtype=float)
    nearest = np.abs(samples[:, None] - points[None, :]).argmin(axis=1)
    return np.bincount(nearest, minlength=len(points)) / len(samples)


def histogram_density(samples, lo: float, hi: float, bins: int = 60):
    """Empirical density on ``bins`` equal bins of ``[lo, hi]``: ``(centres, density, width)``.

    Normalised by *all* samples, so mass outside ``[lo, hi]`` is left out rather than
    spread over the bins, and the bars stay comparable with the analytic density.
    """
    samples = np.asarray(samples, dtype=float)
    counts, edges = np.histogram(samples, bins=bins, range=(lo, hi))
    width = (hi - lo) / bins
    return (edges[:-1] + edges[1:]) / 2, counts / (len(samples) * width), width


def gaussian_density(x, mean: float, sigma: float):
    """``N(mean, sigma^2)`` density."""
    z = (np.asarray(x, dtype=float) - mean) / sigma
    return np.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))


def laplace_density(x, mean: float, b: float):
    """``Laplace(mean, b)`` density ``exp(-|x - mean| / b) / (2 b)`` (Dwork et al. 2006)."""
    return np.exp(-np.abs(np.asarray(x, dtype=float) - mean) / b) / (2 * b)


def gaussian_exact_delta(epsilon, sensitivity: float, sigma):
    """The smallest ``delta`` for which one Gaussian release is ``(eps, delta)``-DP.

    Balle & Wang 2018 ("Improving the Gaussian Mechanism for Differential Privacy",
    Theorem 8), for two inputs ``sensitivity`` apart and noise ``sigma``::

        delta(eps) = Phi(D / (2 sigma) - eps sigma / D) - e^eps Phi(-D / (2 sigma) - eps sigma / D)
    """
    eps, sigma = np.asarray(epsilon, dtype=float), np.asarray(sigma, dtype=float)
    a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
    return np.maximum(ndtr(a - b) - np.exp(eps) * ndtr(-a - b), 0.0)


@dataclass(frozen=True)
class OutputLaw:
    """The analytic law of the released value for one true ``w``.

    ``kind``: ``"mass"`` (``points`` with ``probs``) or ``"gaussian"`` / ``"laplace"``
    (a density centred on the clipped ``w`` with scale ``scale``). ``scale_name`` says
    which parameter ``scale`` is (``sigma``, ``b`` or the two-point magnitude).
    """

    kind: str
    mean: float
    variance: float
    scale: float
    scale_name: str
    points: tuple = ()
    probs: tuple = ()

    def density(self, x) -> np.ndarray:
        if self.kind == "gaussian":
            return gaussian_density(x, self.mean, self.scale)
        if self.kind == "laplace":
            return laplace_density(x, self.mean, self.scale)
        raise ValueError("a two-point law has no density; use points and probs")

    def plot_range(self) -> tuple[float, float]:
        """An x-interval holding all but a negligible part of the law."""
        if self.kind == "mass":
            span = max(abs(p) for p in self.points)
            return -1.25 * span, 1.25 * span
        half = 4.5 * self.scale if self.kind == "gaussian" else 8.0 * self.scale
        return self.mean - half, self.mean + half


def calibrated_scale(name: str, epsilon, delta: float = 1e-5, settings: Optional[dict] = None) -> np.ndarray:
    """The noise parameter the mechanism calibrates from ``epsilon`` (array in, array out).

    ``two_point``: the output magnitude ``r (e^eps + 1)/(e^eps - 1)`` (LDP-FL Eq. 2);
    ``ldp_sign``: ``sigma = Delta_2 sqrt(2 ln(1.25/delta)) / eps`` (``ldp_sign_sigma``);
    ``gaussian``: PLDP-FL's ``sigma`` (``pldp_sigma``, unscaled by the clip as in the paper);
    ``laplace``: ``b = Delta_1 / eps``, ``Delta_1 = 2 c`` for one number (the laplace module
    computes this inside the mechanism; it has no separate calibration function);
    ``uldp_gaussian``: ``sigma_1 = z C_1``, ``z = sqrt(2 ln(1.25/delta)) / eps``,
    ``C_1 = C_0 e^-beta`` (``gaussian_multiplier``, ``decayed_clip``).
    """
    o = _options(name, settings)
    eps = torch.as_tensor(np.asarray(epsilon, dtype=np.float64))
    dlt = torch.full_like(eps, float(delta))
    if name == "two_point":
        return two_point_law(0.0, eps.numpy(), 0.0, o["radius"])[1]
    if name == "ldp_sign":
        return ldp_sign_sigma(eps, dlt, o["l2_sensitivity"]).numpy()
    if name == "gaussian":
        return pldp_sigma(eps, dlt, o["sample_rate"], _rounds(name, settings)).numpy()
    if name == "laplace":
        return (2 * o["clip"] / eps).numpy()
    c1 = clip_range(name, settings)[1]
    return (gaussian_multiplier(eps, dlt) * c1).numpy()


def output_law(name: str, w: float, epsilon: float, delta: float = 1e-5,
               settings: Optional[dict] = None) -> OutputLaw:
    """The analytic law of what the server receives when a client releases ``w``."""
    check_budget(epsilon, delta)
    lo, hi = clip_range(name, settings)
    wc = min(max(float(w), lo), hi)
    scale = float(calibrated_scale(name, epsilon, delta, settings))
    if name == "two_point":
        low, high, p_low, p_high = two_point_law(wc, epsilon, 0.0, hi)
        return OutputLaw("mass", wc, float(two_point_variance(wc, epsilon, 0.0, hi)), scale,
                         "output magnitude r(e^ε+1)/(e^ε-1)", (float(low), float(high)),
                         (float(p_low), float(p_high)))
    if name == "ldp_sign":
        p_plus = float(ldp_sign_p_plus(wc, scale))
        mean = 2 * p_plus - 1
        return OutputLaw("mass", mean, 1 - mean ** 2, scale, "σ", (-1.0, 1.0), (1 - p_plus, p_plus))
    if name == "laplace":
        return OutputLaw("laplace", wc, 2 * scale ** 2, scale, "b")
    return OutputLaw("gaussian", wc, scale ** 2, scale, "σ")


def error_curve(name: str, w: float, epsilons, delta: float = 1e-5, settings: Optional[dict] = None) -> np.ndarray:
    """Analytic price of privacy at each eps: the output's variance, or for ``ldp_sign``
    the probability of a wrong sign (:data:`SCALAR_DEMOS` ``.error``)."""
    eps = np.asarray(epsilons, dtype=float)
    lo, hi = clip_range(name, settings)
    wc = min(max(float(w), lo), hi)
    scale = calibrated_scale(name, eps, delta, settings)
    if name == "two_point":
        return two_point_variance(wc, eps, 0.0, hi)
    if name == "ldp_sign":
        return sign_error(wc, scale)
    if name == "laplace":
        return 2 * scale ** 2
    return scale ** 2


def empirical_error(name: str, w: float, epsilons, delta: float = 1e-5, settings: Optional[dict] = None,
                    n: int = 4000, seed: int = 0) -> np.ndarray:
    """The same quantity as :func:`error_curve`, measured on ``n`` draws of the real mechanism
    per eps (one ``privatize`` call: client ``i`` gets budget ``epsilons[i // n]``)."""
    eps = np.asarray(epsilons, dtype=float)
    draws = sample_outputs(name, w, np.repeat(eps, n), delta, settings, n * len(eps), seed).reshape(len(eps), n)
    if name == "ldp_sign":
        return np.array([empirical_sign_error(row, w) for row in draws])
    return draws.var(axis=1, ddof=1)


# ----------------------------------------------------------------------------- what eps means


@dataclass(frozen=True)
class EpsilonReading:
    """``guarantee``: the one-line privacy statement; ``meaning``: eps in plain words;
    ``worked``: the current numbers, one markdown bullet each; ``warning``: set when the
    claimed guarantee does not hold for this release as computed exactly."""

    guarantee: str
    meaning: str
    worked: tuple[str, ...]
    warning: str = ""


def _g(x: float) -> str:
    return f"{x:.3g}"


def epsilon_reading(name: str, w: float, epsilon: float, delta: float = 1e-5,
                    settings: Optional[dict] = None) -> EpsilonReading:
    """Eps for this mechanism in words, with the numbers of the current setting."""
    check_budget(epsilon, delta)
    law = output_law(name, w, epsilon, delta, settings)
    lo, hi = clip_range(name, settings)
    ratio = math.exp(epsilon)
    pure = (f"for **any two** inputs in [{_g(lo)}, {_g(hi)}], every output is at most "
            f"e^ε = e^{_g(epsilon)} = **{_g(ratio)}** times more likely under one than under the other.")
    if name == "two_point":
        p_min, p_max = 1 / (ratio + 1), ratio / (ratio + 1)
        return EpsilonReading(
            f"**Pure ε-LDP** per weight (LDP-FL, Theorem 1): ε = {_g(epsilon)} for each released number.",
            "Pure ε-LDP: " + pure,
            (f"The only possible outputs are ±{_g(law.points[1])}, whatever the input.",
             f"P(output = +{_g(law.points[1])}) ranges from 1/(e^ε+1) = {_g(p_min)} (input {_g(lo)}) "
             f"to e^ε/(e^ε+1) = {_g(p_max)} (input {_g(hi)}): ratio {_g(p_max / p_min)} = e^ε.",
             f"For w = {_g(law.mean)}: P(+) = {_g(law.probs[1])}, so the server's estimate is unbiased "
             f"but has standard deviation {_g(math.sqrt(law.variance))}.",
             "A client's d weights over T rounds compose to d·T·ε; LDP-FL's splitting and shuffling "
             "argue for ε per weight instead (the run ledger shows both)."))
    if name == "laplace":
        sens = hi - lo
        return EpsilonReading(
            f"**Pure ε-LDP** (Laplace mechanism): noise scale b = Δ₁/ε = {_g(sens)}/{_g(epsilon)} = "
            f"{_g(law.scale)} for one number in [{_g(lo)}, {_g(hi)}].",
            "Pure ε-LDP: " + pure,
            (f"Moving the input by Δ multiplies the density of any output by at most e^(Δ/b); the widest "
             f"move is Δ₁ = {_g(sens)}, giving e^({_g(sens)}/{_g(law.scale)}) = {_g(ratio)} = e^ε.",
             f"Noise standard deviation √2·b = {_g(math.sqrt(law.variance))}: at this ε the released value "
             f"is w ± {_g(math.sqrt(law.variance))} for a range of width {_g(sens)}."))
    approx_meaning = ("Approximate (ε, δ)-LDP: Gaussian noise has no pure-ε guarantee (the likelihood ratio "
                      f"grows without bound in the tails). The promise: the ratio stays below e^ε = **{_g(ratio)}** "
                      f"except on outputs of total probability at most δ = {delta:.0e}.")
    sens = hi - lo
    if name == "ldp_sign":
        p_lo, p_hi = float(ndtr(lo / law.scale)), float(ndtr(hi / law.scale))
        eps_bit = math.log(p_hi / p_lo)
        root = math.sqrt(2 * math.log(1.25 / delta))
        worked = (f"σ = Δ₂·√(2 ln(1.25/δ))/ε = {_g(sens)}·{_g(root)}/{_g(epsilon)} "
                  f"= {_g(law.scale)} (classical Gaussian calibration, Dwork & Roth Thm A.1"
                  + (", which is only proven for ε < 1)." if epsilon >= 1 else ")."),
                  f"Only one bit leaves the client: P(+1) ranges from Φ({_g(lo)}/σ) = {_g(p_lo)} to "
                  f"Φ({_g(hi)}/σ) = {_g(p_hi)}. So the released sign is in fact pure ε′-LDP with "
                  f"ε′ = ln({_g(p_hi)}/{_g(p_lo)}) = **{_g(eps_bit)}** (post-processing never hurts).",
                  f"For w = {_g(min(max(w, lo), hi))}: P(+1) = {_g(law.probs[1])}, P(wrong sign) = "
                  f"{_g(float(sign_error(min(max(w, lo), hi), law.scale)))}.")
        return EpsilonReading(
            f"**(ε, δ)-LDP** per round (PLDP-FL, Sec. 3.1): ε = {_g(epsilon)}, δ = {delta:.0e}, "
            "as a post-processing of the Gaussian mechanism.", approx_meaning, worked)
    exact = float(gaussian_exact_delta(epsilon, sens, law.scale))
    exact_line = (f"Exactly, for one release of this number (Balle & Wang 2018, Thm 8) and the two most "
                  f"distant inputs {_g(lo)} and {_g(hi)}: δ(ε) = **{exact:.2g}**.")
    warning = ""
    if exact > delta:
        warning = (f"For one number in [{_g(lo)}, {_g(hi)}] (inputs up to {_g(sens)} apart) this noise gives "
                   f"δ = {exact:.2g} at ε = {_g(epsilon)}, more than the claimed δ = {delta:.0e}.")
    if name == "gaussian":
        r, q = _rounds(name, settings), _options(name, settings)["sample_rate"]
        return EpsilonReading(
            f"**(ε, δ)-LDP** for the whole run of R = {r} round(s) with record sampling q = {_g(q)} "
            "(PLDP-FL's calibration, Sec. 3.1; noise not scaled by the clip range, as in the paper).",
            approx_meaning,
            (f"σ = √(4q²R/(1−q)·(2 ln(1/δ)/ε² + 1/ε)) = **{_g(law.scale)}**.", exact_line,
             f"Per round the ledger charges ε/R = {_g(epsilon / r)} (basic composition)."),
            warning + (" The paper's claim relies on amplification by sampling q and on σ being a noise "
                       "multiplier for sensitivity 1." if warning else ""))
    c1 = hi
    return EpsilonReading(
        f"**(ε, δ)-LDP** per release (ULDP-FED, eq. 10 with the classical calibration): ε = {_g(epsilon)}, "
        f"δ = {delta:.0e}; a user's budget is split over its r participations (here r = 1).",
        approx_meaning,
        (f"Clip C₁ = C₀·e^(−β) = {_g(c1)}; σ = z·C₁ with z = √(2 ln(1.25/δ))/ε = "
         f"{_g(law.scale / c1)}, so σ = **{_g(law.scale)}**.", exact_line),
        warning + (" ULDP-FED calibrates σ = z·C_k, i.e. to sensitivity C_k; two users' clipped updates can "
                   f"be 2·C_k apart." if warning else ""))
