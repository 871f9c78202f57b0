"""What a sweep trains: methods x ε columns x seeds, plus each method's two reference lines.

Each method's config is layered exactly as ``python -m fedcore run`` layers one run
(:func:`fedcore.layering.build_config`): the preset, then the method's recipe together with the
preset's demo-scale settings for that method (:func:`fedcore.presets.preset_method_settings`;
the papers' method definitions are untouched), then the scenario's settings
(:mod:`.scenarios`), then the ``--set`` overrides, then the point's own budgets and ``seed``.

What an ε column means (``match``):

- ``"headline"`` (equal privacy): every method's budgets are solved for so that the run's
  *headline* ε, the tightest proven bound for its threat model, equals the column's ε
  (:func:`fedcore.equal_privacy.match_headline`: within 1 %, never above). Points of one
  column then spent the same proven ε under their threat model.
- ``"target"`` (each paper's own ε): the column's ε is written into ``privacy.epsilon`` and
  each method reads it its own way (per weight per round, over the run, ...).

Two reference lines per private method, trained with the method's own settings:

- ``no_privacy``: ``privacy.mechanism = "none"``: no clipping, no noise;
- ``clip_only``: the method's mechanism at ε = 10^6 for every client: its clipping (or
  quantisation) with noise too small to matter, so ``no_privacy - clip_only`` is what
  clipping costs and ``clip_only - private`` what the noise costs.

Reference rows carry ``"epsilon": null`` and their kind in ``reference``.

Every bad input raises :class:`~fedcore.errors.ConfigError` naming the field
(``methods``, ``epsilons``, ``seeds``, ``preset``, ``match``, ``scenario`` or the ``--set`` key),
and a sweep's size is checked before any point is built.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence, Union

from ..errors import ConfigError, FedcoreError
from .scenarios import DEFAULT_EPSILONS, DEFAULT_METHODS, SCENARIOS, get_scenario  # noqa: F401 (re-exported)

MAX_POINTS = 5000
"""Largest sweep (points incl. references) one command may ask for."""
MAX_SEEDS = 100
MATCHES = ("target", "headline")
REFERENCES = ("no_privacy", "clip_only")
CLIP_ONLY_EPSILON = 1e6
"""The clip-only reference's budget: the largest ``privacy.epsilon`` accepts."""


@dataclass(frozen=True)
class SweepPoint:
    """One run of the sweep: ``epsilon`` None is one of the method's reference lines
    (``reference`` says which). ``knob``: the largest per-client ``privacy.epsilon`` the run
    uses (solved for when ``match`` is ``"headline"``)."""

    method: str
    epsilon: Optional[float]
    seed: int
    config: object  # RunConfig
    reference: str = ""
    match: str = "target"
    knob: Optional[float] = None

    @property
    def label(self) -> str:
        eps = self.reference.replace("_", " ") if self.epsilon is None else f"ε={self.epsilon:g}"
        return f"{self.method} {eps} seed {self.seed}"


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep. ``seeds``: a count (seeds ``base .. base+n-1``, ``base`` = the
    config's ``seed``) or an explicit tuple of seeds. ``methods`` empty: the scenario's."""

    preset: str = "demo"
    methods: tuple[str, ...] = ()
    epsilons: Optional[Union[str, tuple[float, ...]]] = DEFAULT_EPSILONS   # None: the scenario's columns
    seeds: Union[int, tuple[int, ...]] = 3
    sets: tuple[str, ...] = field(default_factory=tuple)
    reference: bool = True
    match: str = "target"
    scenario: str = "iid"

    def __post_init__(self):
        scenario = get_scenario(self.scenario)
        if self.match not in MATCHES:
            raise ConfigError("match", self.match, "must be one of: " + ", ".join(MATCHES))
        methods = self.methods if _split(self.methods) else scenario.methods
        object.__setattr__(self, "methods", parse_methods(methods))
        object.__setattr__(self, "epsilons", parse_epsilons(scenario.epsilons if self.epsilons is None
                                                            else self.epsilons))
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))
        object.__setattr__(self, "sets", tuple(self.sets))
        check_sets(self.sets)
        from ..catalog import PRESETS

        if self.preset not in PRESETS:
            raise ConfigError("preset", self.preset, "is not a known preset (`python -m fedcore list` shows them)")
        if self.count() > MAX_POINTS:
            raise ConfigError("epsilons", f"{len(self.epsilons)} values",
                              f"with {len(self.methods)} methods and {self.seed_count()} seeds makes "
                              f"{self.count()} runs; at most {MAX_POINTS}")

    def method_config(self, method: str):
        """The method's config before the point's budgets and seed (see the module doc)."""
        from ..layering import build_config

        return build_config(self.preset, None, [f"method={method}", *SCENARIOS[self.scenario].sets, *self.sets])

    def seed_count(self) -> int:
        return len(self.seeds) if isinstance(self.seeds, tuple) else int(self.seeds)

    def count(self) -> int:
        """How many runs :meth:`points` makes, without building them (references included;
        a method without noise has its no-privacy reference only)."""
        refs = len(REFERENCES) if self.reference else 0
        per_seed = [len(self.epsilons) + refs if self.method_config(m).privacy.mechanism != "none" else 1
                    for m in self.methods]
        return sum(per_seed) * self.seed_count()

    def seed_list(self, base: int) -> list[int]:
        return list(self.seeds) if isinstance(self.seeds, tuple) else [base + i for i in range(self.seeds)]

    def points(self) -> list[SweepPoint]:
        """Every point, grouped by method; references first within a method (all of
        :meth:`groups`, concatenated)."""
        return [p for group in self.groups() for p in group]

    def groups(self) -> Iterator[list[SweepPoint]]:
        """The points in the order a sweep trains them: per method its reference lines, then its
        private points. With ``match="headline"`` the private points' budgets are solved for
        when their group is reached (a few accounting replays per point, no training), so the
        first rows come before the last method is calibrated."""
        scenario = SCENARIOS[self.scenario]
        for method in self.methods:
            cfg = self.method_config(method)
            private = cfg.privacy.mechanism != "none"
            seeds = self.seed_list(cfg.seed)
            refs = []
            if self.reference or not private:
                plain = cfg.with_overrides({"privacy.mechanism": "none", "privacy.mechanism_options": {}})
                refs += [SweepPoint(method, None, s, _with_seed(plain, s), "no_privacy") for s in seeds]
            if private and self.reference:
                clip = cfg.with_overrides({"privacy.epsilon": [CLIP_ONLY_EPSILON]})
                refs += [SweepPoint(method, None, s, _with_seed(clip, s), "clip_only", knob=CLIP_ONLY_EPSILON)
                         for s in seeds]
            if refs:
                yield refs
            if private:  # a method without noise has only its reference
                try:
                    points = self._private_points(method, cfg, seeds, scenario)
                except FedcoreError as exc:
                    raise FedcoreError(f"solving {method}'s budget: {exc}") from None
                yield points

    def _private_points(self, method: str, cfg, seeds: list[int], scenario) -> list[SweepPoint]:
        out = []
        scales: dict[float, float] = {}  # column ε -> the scale the previous seed needed
        for seed in seeds:
            seeded = _with_seed(cfg, seed)
            base = None
            for eps in self.epsilons:
                budgets = scenario.budgets(eps, seeded.num_clients)
                point_cfg = seeded.with_overrides({"privacy.epsilon": budgets})
                knob = max(budgets)
                if self.match == "headline":
                    from ..engine.setup import prepare
                    from ..equal_privacy import match_headline

                    base = base or prepare(point_cfg.replace(device="cpu"))
                    guess = scales.get(eps) or (next(reversed(scales.values())) if scales else None)
                    matched = match_headline(point_cfg, eps, base=base, **({"guess": guess} if guess else {}))
                    point_cfg, knob, scales[eps] = matched.config, matched.knob, matched.scale
                out.append(SweepPoint(method, eps, seed, point_cfg, match=self.match, knob=knob))
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
    flags = {"privacy.epsilon": "--epsilons", "seed": "--seeds", "method": "--methods"}
    for item in sets:
        key = item.partition("=")[0].strip()
        if key in flags:
            raise FedcoreError(f"--set {key}: the sweep sets it for every point; use {flags[key]}")
