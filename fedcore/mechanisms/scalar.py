"""How a mechanism explains itself on one number: the contract of its scalar law.

A mechanism that can be shown releasing a single true value ``w`` sets the class attribute
``scalar`` to a :class:`ScalarLaw`: its demo settings (:class:`ScalarDemo`), the range it
clips ``w`` to, the noise scale it calibrates from ``eps``, the analytic law of the output
(:class:`OutputLaw`), the price of privacy against ``eps`` and what ``eps`` means in words
(:class:`EpsilonReading`). The Mechanisms page's driver (:mod:`fedcore.teaching`) only calls
these methods; a mechanism without ``scalar`` is listed there with no demo, never with
another mechanism's numbers.

Scalar conventions (``d = 1``): element-wise and L2 clipping coincide (``w`` is clamped to
the clip range) and the LDP sensitivity is the range's width, e.g. ``2 c`` for ``[-c, c]``.
This module holds only the contract and the laws shared by several mechanisms (Gaussian and
Laplace densities, the exact delta of one Gaussian release); it imports no mechanism.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

VARIANCE = "variance of the released value"
SIGN_ERROR = "P(released sign differs from the sign of w)"


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
    ``error``: what the error curve measures. ``fixed``: options the demo pins.
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


@dataclass(frozen=True)
class EpsilonReading:
    """``guarantee``: the one-line privacy statement; ``meaning``: eps in plain words;
    ``worked``: the current numbers, one markdown bullet each; ``warning``: set when the
    claimed guarantee does not hold for this release as computed exactly."""

    guarantee: str
    meaning: str
    worked: tuple[str, ...]
    warning: str = ""


@dataclass(frozen=True)
class Release:
    """One demo release: true ``w`` (and clipped ``wc``), budget, options, clip range, law."""

    w: float
    wc: float
    epsilon: float
    delta: float
    options: dict
    rounds: int
    lo: float
    hi: float
    law: OutputLaw


class ScalarLaw:
    """A mechanism's one-number law. Subclasses set ``demo`` and implement :meth:`scale`
    and :meth:`reading`; the defaults describe additive Gaussian noise on ``[-clip, clip]``."""

    demo: ScalarDemo

    def options(self, values: dict) -> dict:
        """The mechanism options of the demo's knob values (``rounds`` is not an option)."""
        return {**{k: float(v) for k, v in values.items() if k != "rounds"}, **self.demo.fixed}

    def clip_range(self, options: dict) -> tuple[float, float]:
        return -options["clip"], options["clip"]

    def scale(self, epsilon: np.ndarray, delta: float, options: dict, rounds: int) -> np.ndarray:
        """The calibrated noise parameter at each ``epsilon`` (array in, array out)."""
        raise NotImplementedError

    def law(self, wc: float, epsilon: float, scale: float, options: dict, hi: float) -> OutputLaw:
        return OutputLaw("gaussian", wc, scale ** 2, scale, "σ")

    def error(self, wc: float, epsilon: np.ndarray, scale: np.ndarray, options: dict, hi: float) -> np.ndarray:
        """The price of privacy (``demo.error``) at each ``epsilon``: here the variance."""
        return scale ** 2

    def empirical(self, draws: np.ndarray, w: float) -> np.ndarray:
        """The same quantity measured on ``draws [len(eps), n]`` of the real mechanism."""
        return draws.var(axis=1, ddof=1)

    def reading(self, r: Release) -> EpsilonReading:
        raise NotImplementedError


# --- laws and words shared by several mechanisms ---------------------------------------------
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
    from scipy.special import ndtr   # here, not at import: a run's setup need not load scipy (0.3-0.6 s)

    eps, sigma = np.asarray(epsilon, dtype=float), np.asarray(sigma, dtype=float)
    a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
    return np.maximum(ndtr(a - b) - np.exp(eps) * ndtr(-a - b), 0.0)


def g(x: float) -> str:
    """A number as the readings print it: three significant digits."""
    return f"{x:.3g}"


def pure_meaning(r: Release) -> str:
    return ("Pure ε-LDP: " f"for **any two** inputs in [{g(r.lo)}, {g(r.hi)}], every output is at most "
            f"e^ε = e^{g(r.epsilon)} = **{g(math.exp(r.epsilon))}** times more likely under one than under the other.")


def approximate_meaning(r: Release) -> str:
    return ("Approximate (ε, δ)-LDP: Gaussian noise has no pure-ε guarantee (the likelihood ratio "
            f"grows without bound in the tails). The promise: the ratio stays below e^ε = **{g(math.exp(r.epsilon))}** "
            f"except on outputs of total probability at most δ = {r.delta:.0e}.")


def exact_delta_check(r: Release) -> tuple[str, str]:
    """The exact delta of this one Gaussian release (Balle & Wang) as a worked line, and a
    warning when it exceeds the claimed delta."""
    sens = r.hi - r.lo
    exact = float(gaussian_exact_delta(r.epsilon, sens, r.law.scale))
    line = (f"Exactly, for one release of this number (Balle & Wang 2018, Thm 8) and the two most "
            f"distant inputs {g(r.lo)} and {g(r.hi)}: δ(ε) = **{exact:.2g}**.")
    warning = ""
    if exact > r.delta:
        warning = (f"For one number in [{g(r.lo)}, {g(r.hi)}] (inputs up to {g(sens)} apart) this noise gives "
                   f"δ = {exact:.2g} at ε = {g(r.epsilon)}, more than the claimed δ = {r.delta:.0e}.")
    return line, warning
