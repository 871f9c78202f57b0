"""What a sweep trains: methods x target epsilons x seeds, plus no-privacy references.

Each method's config is layered exactly as ``python -m fedcore run`` layers one run
(:func:`fedcore.layering.build_config`): the preset, then the method's recipe together with the
preset's demo-scale settings for that method (:func:`fedcore.presets.preset_method_settings`;
the papers' method definitions are untouched), then the ``--set`` overrides, then the
point's own ``privacy.epsilon`` (one value for every client) and ``seed``.

A method's *no-privacy reference* is the same config with ``privacy.mechanism = "none"``
(aggregator, clients, rounds and learning rate unchanged): the accuracy the method would
reach if nothing were noised. Its rows carry ``"epsilon": null``.

Every bad input raises :class:`~fedcore.errors.ConfigError` naming the field
(``methods``, ``epsilons``, ``seeds``, ``preset`` or the ``--set`` key).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from ..errors import ConfigError, FedcoreError

DEFAULT_EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
DEFAULT_METHODS = ("ldp_fl", "pldp_b", "hw_dpfl", "kdp_fl", "dp_fedavg")
"""The five one-click private methods of the dashboard (one per paper)."""
MAX_POINTS = 5000
"""Largest sweep (points incl. references) one command may ask for."""
MAX_SEEDS = 100


@dataclass(frozen=True)
class SweepPoint:
    """One run of the sweep: ``epsilon`` None is the method's no-privacy reference."""

    method: str
    epsilon: Optional[float]
    seed: int
    config: object  # RunConfig

    @property
    def label(self) -> str:
        eps = "no privacy" if self.epsilon is None else f"ε={self.epsilon:g}"
        return f"{self.method} {eps} seed {self.seed}"


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep. ``seeds``: a count (seeds ``base .. base+n-1``, ``base`` = the
    config's ``seed``) or an explicit tuple of seeds."""

    preset: str = "demo"
    methods: tuple[str, ...] = DEFAULT_METHODS
    epsilons: tuple[float, ...] = DEFAULT_EPSILONS
    seeds: Union[int, tuple[int, ...]] = 3
    sets: tuple[str, ...] = field(default_factory=tuple)
    reference: bool = True

    def __post_init__(self):
        object.__setattr__(self, "methods", parse_methods(self.methods))
        object.__setattr__(self, "epsilons", parse_epsilons(self.epsilons))
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))
        object.__setattr__(self, "sets", tuple(self.sets))
        check_sets(self.sets)
        from ..catalog import PRESETS

        if self.preset not in PRESETS:
            raise ConfigError("preset", self.preset, "is not a known preset (`python -m fedcore list` shows them)")

    def method_config(self, method: str):
        """The method's config before the point's epsilon and seed (see the module doc)."""
        from ..layering import build_config

        return build_config(self.preset, None, [f"method={method}", *self.sets])

    def seed_list(self, base: int) -> list[int]:
        return list(self.seeds) if isinstance(self.seeds, tuple) else [base + i for i in range(self.seeds)]

    def points(self) -> list[SweepPoint]:
        """Every point, grouped by method; references first within a method."""
        out = []
        for method in self.methods:
            cfg = self.method_config(method)
            private = cfg.privacy.mechanism != "none"
            reference = cfg.with_overrides({"privacy.mechanism": "none", "privacy.mechanism_options": {}})
            for seed in self.seed_list(cfg.seed):
                if self.reference or not private:
                    out.append(SweepPoint(method, None, seed, _with_seed(reference, seed)))
            if not private:
                continue  # a method without noise has only its reference
            for eps in self.epsilons:
                with_eps = cfg.with_overrides({"privacy.epsilon": [eps]})
                for seed in self.seed_list(cfg.seed):
                    out.append(SweepPoint(method, eps, seed, _with_seed(with_eps, seed)))
        if len(out) > MAX_POINTS:
            raise ConfigError("epsilons", list(self.epsilons),
                              f"with {len(self.methods)} methods and these seeds makes {len(out)} runs; "
                              f"at most {MAX_POINTS}")
        return out


def _with_seed(cfg, seed: int):
    return cfg.with_overrides({"seed": seed})


def _split(value: Union[str, Sequence]) -> list:
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    return list(value)


def parse_methods(value: Union[str, Sequence[str]]) -> tuple[str, ...]:
    """``"ldp_fl,pldp_b"`` -> ``("ldp_fl", "pldp_b")``; each must be a registered method."""
    from ..catalog import METHODS

    names = _split(value)
    if not names:
        raise ConfigError("methods", value, "must name at least one method, e.g. ldp_fl,pldp_b")
    for name in names:
        if not isinstance(name, str) or name not in METHODS:
            import difflib

            close = difflib.get_close_matches(str(name), METHODS.names(), n=2)
            hint = f"; did you mean {', '.join(close)}?" if close else " (`python -m fedcore list` shows them)"
            raise ConfigError("methods", name, "is not a known method" + hint)
    if len(set(names)) != len(names):
        raise ConfigError("methods", ",".join(names), "names a method twice")
    return tuple(names)


def parse_epsilons(value: Union[str, Sequence]) -> tuple[float, ...]:
    """``"0.1,1,10"`` -> ``(0.1, 1.0, 10.0)``: finite, in (0, 1e6], no repeats, sorted."""
    items = _split(value)
    if not items:
        raise ConfigError("epsilons", value, "must list at least one epsilon, e.g. 0.1,1,10")
    out = []
    for item in items:
        try:
            eps = float(item)
        except (TypeError, ValueError):
            raise ConfigError("epsilons", item, "must be a number > 0, e.g. 0.1,1,10") from None
        if isinstance(item, bool) or not math.isfinite(eps) or not 0 < eps <= 1e6:
            raise ConfigError("epsilons", item, "must be a finite number in (0, 1e6]; "
                              "the no-privacy reference (ε = ∞) is added by itself")
        out.append(eps)
    if len(set(out)) != len(out):
        raise ConfigError("epsilons", ",".join(map(str, items)), "lists an epsilon twice")
    return tuple(sorted(out))


def parse_seeds(value: Union[int, str, Sequence]) -> Union[int, tuple[int, ...]]:
    """``3`` or ``"3"`` -> 3 seeds; ``"0,5,9"`` -> those seeds."""
    if isinstance(value, str) and "," not in value:
        value = value.strip()
        if not value.isdigit():
            raise ConfigError("seeds", value, "must be a count >= 1 (e.g. 3) or a list of seeds (e.g. 0,1,2)")
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_SEEDS:
            raise ConfigError("seeds", value, f"must be a count in [1, {MAX_SEEDS}] or a list of seeds")
        return value
    seeds = []
    for item in _split(value):
        text = str(item).strip()
        if isinstance(item, bool) or not text.isdigit() or int(text) > 2**32 - 1:
            raise ConfigError("seeds", item, "must be integers in [0, 4294967295], e.g. 0,1,2")
        seeds.append(int(text))
    if not seeds or len(seeds) > MAX_SEEDS or len(set(seeds)) != len(seeds):
        raise ConfigError("seeds", value, f"must list 1 to {MAX_SEEDS} different seeds")
    return tuple(seeds)


def check_sets(sets: Sequence[str]) -> None:
    """Reject a ``--set`` that the sweep itself controls (epsilon, seed, method)."""
    for item in sets:
        key = item.partition("=")[0].strip()
        if key in ("privacy.epsilon", "seed", "method"):
            flag = {"privacy.epsilon": "--epsilons", "seed": "--seeds", "method": "--methods"}[key]
            raise FedcoreError(f"--set {key}: the sweep sets it for every point; use {flag}")
