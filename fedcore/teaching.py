"""One number through one mechanism: the generic driver behind the dashboard's Mechanisms page.

A client holds a single true value ``w`` (one weight of its update) and releases it
through a registered mechanism at budget ``eps`` (and ``delta``). Every mechanism that can
be shown this way supplies its own :class:`~fedcore.mechanisms.scalar.ScalarLaw` (the attribute
``scalar`` of the class that runs it: demo settings, clip range, calibrated scale, analytic output law,
price of privacy, what eps means). This module only drives them:

- :func:`sample_outputs`: draws from the *real* mechanism, by calling its ``privatize``
  on an ``[n, 1]`` batch of identical updates (a minimal :class:`RunContext`, ``d = 1``);
- :func:`output_law`, :func:`error_curve`, :func:`epsilon_reading`: the mechanism's own
  analytic law, error curve and words;
- :func:`empirical_error`: the error curve measured on draws of the real mechanism.

A mechanism without a scalar law is refused with a message saying so (:class:`NoScalarDemo`);
it never borrows another mechanism's calibration or words.

>>> law = output_law("two_point", w=0.05, epsilon=1.0, delta=1e-5, settings={"radius": 0.1})
>>> [round(p, 4) for p in law.points], [round(p, 4) for p in law.probs]
([-0.2164, 0.2164], [0.3845, 0.6155])
>>> round(law.mean, 4), round(law.variance, 5)
(0.05, 0.04433)
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Iterator, Optional

import numpy as np
import torch

from .config import LocalConfig
from .context import RunContext
from .mechanisms import MECHANISMS
from .mechanisms.base import Mechanism, Upload
from .mechanisms.ldp_sign import empirical_sign_error, sign_error  # noqa: F401  (re-exported)
from .mechanisms.scalar import (SIGN_ERROR, VARIANCE, EpsilonReading, Knob, OutputLaw,  # noqa: F401
                                Release, ScalarDemo, ScalarLaw, gaussian_exact_delta)

EPSILON_CHOICES = (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0)
"""The budgets the page offers (log-spaced), per release of one number."""
EPSILON_RANGE = (EPSILON_CHOICES[0], EPSILON_CHOICES[-1])
DELTA_CHOICES = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


class NoScalarDemo(KeyError):
    """The mechanism supplies no one-number law (``scalar`` is None) or does not exist."""


class _ScalarDemos(Mapping):
    """``name -> ScalarDemo`` of every registered mechanism that supplies a scalar law, read
    from the registry each time (a mechanism registered later appears)."""

    def __getitem__(self, name: str) -> ScalarDemo:
        return scalar_law(name).demo

    def __iter__(self) -> Iterator[str]:
        return (e.name for e in MECHANISMS.entries() if getattr(e.obj.implementation_class(), "scalar", None) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


SCALAR_DEMOS = _ScalarDemos()


def scalar_law(name: str) -> ScalarLaw:
    """Mechanism ``name``'s own scalar law; :class:`NoScalarDemo` naming the reason otherwise."""
    if name not in MECHANISMS:
        raise NoScalarDemo(f"unknown mechanism {name!r}; known: {', '.join(MECHANISMS.names())}")
    law = getattr(MECHANISMS.get(name).implementation_class(), "scalar", None)
    if law is None:
        raise NoScalarDemo(f"mechanism {name!r} supplies no one-number demo (no `scalar` law); "
                           f"mechanisms with one: {', '.join(SCALAR_DEMOS)}")
    return law


def scalar_demo(name: str) -> ScalarDemo:
    """The demo of ``name``; :class:`NoScalarDemo` (a ``KeyError``) otherwise."""
    return scalar_law(name).demo


def check_budget(epsilon: float, delta: Optional[float] = None) -> None:
    """Raise ``ValueError`` naming the problem if ``epsilon`` / ``delta`` cannot be used."""
    lo, hi = EPSILON_RANGE
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0 (this page offers {lo:g} to {hi:g}); "
                         f"got {epsilon!r}")
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) (typically 1e-5, below 1 / number of clients); got {delta!r}")


def _options(name: str, settings: Optional[dict]) -> dict:
    law = scalar_law(name)
    return law.options({**law.demo.defaults(), **(settings or {})})


def _rounds(name: str, settings: Optional[dict]) -> int:
    return int((settings or {}).get("rounds", scalar_demo(name).defaults().get("rounds", 1)))


def scalar_context(epsilon, delta: float, rounds: int = 1) -> RunContext:
    """A run of ``n`` clients holding one parameter each, client ``i`` with budget ``epsilon[i]``."""
    eps = torch.as_tensor(np.atleast_1d(np.asarray(epsilon, dtype=np.float64)), dtype=torch.float64)
    n = len(eps)
    return RunContext(num_clients=n, client_sizes=torch.full((n,), 1000.0), epsilon=eps,
                      delta=torch.full((n,), float(delta), dtype=torch.float64), rounds=rounds, participation=1.0,
                      num_params=1, layer_slices={"w": slice(0, 1)}, label_counts=np.ones((n, 1)),
                      num_classes=1, local=LocalConfig(), device=torch.device("cpu"))


def build_mechanism(name: str, epsilon, delta: float = 1e-5, settings: Optional[dict] = None) -> Mechanism:
    """The registered mechanism ``name`` for ``len(epsilon)`` one-parameter clients."""
    cls = MECHANISMS.get(name)
    options = cls.parse_options(_options(name, settings), f"mechanisms.{name}")
    return cls(options, scalar_context(epsilon, delta, _rounds(name, settings)))


def clip_range(name: str, settings: Optional[dict] = None) -> tuple[float, float]:
    """The interval the mechanism clips ``w`` to before perturbing it."""
    return scalar_law(name).clip_range(_options(name, settings))


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


def calibrated_scale(name: str, epsilon, delta: float = 1e-5, settings: Optional[dict] = None) -> np.ndarray:
    """The noise parameter mechanism ``name`` calibrates from ``epsilon`` (array in, array out)."""
    law = scalar_law(name)
    return np.asarray(law.scale(np.asarray(epsilon, dtype=np.float64), delta, _options(name, settings),
                                _rounds(name, settings)))


def _clipped(name: str, w: float, settings: Optional[dict]) -> tuple[float, float, float]:
    lo, hi = clip_range(name, settings)
    return min(max(float(w), lo), hi), lo, hi


def output_law(name: str, w: float, epsilon: float, delta: float = 1e-5,
               settings: Optional[dict] = None) -> OutputLaw:
    """The analytic law of what the server receives when a client releases ``w``."""
    check_budget(epsilon, delta)
    wc, _, hi = _clipped(name, w, settings)
    scale = float(calibrated_scale(name, epsilon, delta, settings))
    return scalar_law(name).law(wc, epsilon, scale, _options(name, settings), hi)


def error_curve(name: str, w: float, epsilons, delta: float = 1e-5, settings: Optional[dict] = None) -> np.ndarray:
    """Analytic price of privacy at each eps (the demo's ``error``: the output's variance, or
    for ``ldp_sign`` the probability of a wrong sign)."""
    eps = np.asarray(epsilons, dtype=float)
    wc, _, hi = _clipped(name, w, settings)
    scale = calibrated_scale(name, eps, delta, settings)
    return np.asarray(scalar_law(name).error(wc, eps, scale, _options(name, settings), hi))


def empirical_error(name: str, w: float, epsilons, delta: float = 1e-5, settings: Optional[dict] = None,
                    n: int = 4000, seed: int = 0) -> np.ndarray:
    """The same quantity as :func:`error_curve`, measured on ``n`` draws of the real mechanism
    per eps (one ``privatize`` call: client ``i`` gets budget ``epsilons[i // n]``)."""
    eps = np.asarray(epsilons, dtype=float)
    draws = sample_outputs(name, w, np.repeat(eps, n), delta, settings, n * len(eps), seed).reshape(len(eps), n)
    return scalar_law(name).empirical(draws, w)


def epsilon_reading(name: str, w: float, epsilon: float, delta: float = 1e-5,
                    settings: Optional[dict] = None) -> EpsilonReading:
    """Eps for this mechanism in words, with the numbers of the current setting."""
    check_budget(epsilon, delta)
    wc, lo, hi = _clipped(name, w, settings)
    release = Release(w=float(w), wc=wc, epsilon=float(epsilon), delta=float(delta),
                      options=_options(name, settings), rounds=_rounds(name, settings), lo=lo, hi=hi,
                      law=output_law(name, w, epsilon, delta, settings))
    return scalar_law(name).reading(release)
