"""The ε of the game an attacker plays, and the caps it proves (``shared/ATTACKS.md`` §3-4).

A run's headline ε answers one question: add or remove one protected unit, the attacker sees
every release, the sampling stays secret. An attack may play another game, and a cap drawn
beside it is a theorem only when its ε is proven for *that* game. A :class:`Game` states it in
four words:

- ``unit``: what is protected: one ``record`` (record-level DP-SGD) or a ``user``'s data (its
  upload under local DP, its whole contribution under central DP);
- ``adjacency``: ``add_remove`` (the unit is in the data or not) or ``replace`` (one unit is
  swapped for another: re-identification among candidates, LiRA's fixed-size halves);
- ``releases``: ``round`` (one round's release: the live view reads one update) or ``run``
  (every release; the final model is a post-processing of them);
- ``sampling``: ``secret`` (the coin flips that chose the batch or the users are hidden, so
  amplification by sampling holds) or ``conditioned`` (the game asks which of the unit's own
  candidates were used: every candidate is in the data, so there is no amplification).

``group`` > 1: that many units swapped at once (a batch of k records), by group privacy.

:func:`bound` answers a game from a client's releases, ``{(z, q): steps}`` of Gaussian steps and
``{ε: count}`` of pure releases, as the ledger keeps them (:class:`~fedcore.accounting.Ledger`):

1. *conditioned*: every step's rate q becomes 1 (the unit is in the batch);
2. *replace* where the accountant's neighbours are add/remove (central and record-level; local
   mechanisms account any two inputs already): an unsampled Gaussian's sensitivity doubles
   (multiplier z/2), a Poisson-subsampled one is composed by dp-accounting's PLD with
   ``REPLACE_ONE`` neighbours, a pure release costs 2ε (Dwork & Roth 2014, Thm 2.2 with k = 2);
3. releases without sampling are exactly μ-GDP, ``μ = k·√(Σ steps / z²)`` (Dong, Roth & Su 2019,
   Cor. 3.3): the membership region is the trade-off curve ``TPR ≤ Φ(Φ⁻¹(FPR) + μ)`` and the
   re-identification bound for a prior κ is ``Φ(Φ⁻¹(κ) + μ)`` (Hayes, Mahloujifar & Balle 2023,
   Thm 2); ε at each δ is that one Gaussian's exact ε (dp-accounting's analytic privacy loss);
4. otherwise the caps are the smallest over the game's privacy profile, ε at
   :data:`PROFILE_DELTAS` (dp-accounting's PLD for Gaussian steps, the k-fold randomized
   response for pure ones, :mod:`.pure`): ``TPR ≤ min e^ε FPR + δ, 1 - e^-ε (1 - δ - FPR)``
   (Kairouz, Oh & Viswanath 2015) and ``P[re-identified] ≤ min e^ε κ + δ`` (Balle, Cherubin &
   Hayes 2022, from the hypothesis-testing inequality summed over the protected candidates).

>>> g = Game("record", "replace", "round", "conditioned")
>>> b = bound(g, {(1.0, 0.01): 1}, {}, "add_remove", 1e-5)     # one DP-SGD step, z = 1
>>> round(b.mu, 3), b.basis.startswith("μ-GDP")                  # no amplification, sensitivity 2C
(2.0, True)
>>> round(b.reid_cap(1 / 144), 3) > round(math.exp(1.0) / 144, 3)  # far above the amplified cap
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable, Mapping, Optional

UNITS = ("record", "user")
ADJACENCIES = ("add_remove", "replace")
RELEASES = ("round", "run")
SAMPLINGS = ("secret", "conditioned")
NATIVE_ADJACENCY = {"local": "replace", "central": "add_remove", "record": "add_remove"}
"""The neighbours each threat model's accountant counts: a local mechanism is calibrated for any two
inputs of a client (a replacement), central and record-level accountants for adding or removing one."""
PROFILE_DELTAS = (0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-12)
"""The δs of a game's privacy profile (each an (ε, δ) guarantee; the caps take the smallest)."""
PLD_FLOOR = 0.15
"""Below this noise multiplier a subsampled step's PLD is not built (z = 0.1 took 5 s, smaller ones minutes
and gigabytes: ε in the thousands); the unamplified μ-GDP bound, valid and cheap, is used instead."""
MU_DIGITS = 5
"""μ is rounded *up* to this many significant digits before its PLD is built (a cache key; the bound
stays an upper bound)."""


@dataclass(frozen=True)
class Game:
    """The game an attack plays (module doc)."""

    unit: str
    adjacency: str
    releases: str
    sampling: str
    group: int = 1

    def __post_init__(self):
        for name, value, allowed in (("unit", self.unit, UNITS), ("adjacency", self.adjacency, ADJACENCIES),
                                     ("releases", self.releases, RELEASES), ("sampling", self.sampling, SAMPLINGS)):
            if value not in allowed:
                raise ValueError(f"Game.{name} must be one of {allowed}, not {value!r}")
        if int(self.group) < 1:
            raise ValueError(f"Game.group must be >= 1, not {self.group!r}")

    @property
    def key(self) -> str:
        """``unit/adjacency/releases/sampling`` (``xk`` appended for a group of k), e.g.
        ``record/replace/round/conditioned`` (``... x3`` for three records at once)."""
        tail = f" x{self.group}" if self.group > 1 else ""
        return f"{self.unit}/{self.adjacency}/{self.releases}/{self.sampling}{tail}"

    @classmethod
    def from_key(cls, key: str) -> "Game":
        """The game of a :attr:`key`.

        >>> Game.from_key("record/replace/round/conditioned x3").group
        3
        """
        head, _, group = key.partition(" x")
        return cls(*head.split("/"), group=int(group or 1))

    def words(self) -> str:
        """The game in one sentence, for the screen and the JSON."""
        unit = {"record": "one training record", "user": "one client's data"}[self.unit]
        if self.group > 1:
            unit = f"{self.group} training records at once" if self.unit == "record" else f"{self.group} clients' data"
        how = {"add_remove": "present or absent", "replace": "swapped for another"}[self.adjacency]
        seen = {"round": "one round's release", "run": "every release of the run (and the final model)"}[self.releases]
        sampled = {"secret": "the sampling kept secret (amplification counts)",
                   "conditioned": "the sampling known: no amplification"}[self.sampling]
        return f"{unit} {how}; the attacker sees {seen}; {sampled}"


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _phi_inv(p: float) -> float:
    """Φ⁻¹: scipy's ``ndtri``, the function ``norm.ppf`` calls (same values; ``norm.ppf``'s argument
    checks cost 0.4 ms a call, and a watched round asks once per client and attacker)."""
    from scipy.special import ndtri

    return float(ndtri(p))


def _pair_cap(fpr: float, epsilon: float, delta: float) -> float:
    if not math.isfinite(epsilon) or epsilon > 700:
        return 1.0
    return min(1.0, math.exp(epsilon) * fpr + delta, 1.0 - math.exp(-epsilon) * (1.0 - delta - fpr))


@dataclass(frozen=True)
class Bound:
    """A game's answer: ``epsilon`` at ``delta`` (inf = nothing proven), the curve behind it (``mu``
    for μ-GDP, else ``profile``, ``(ε, δ)`` pairs) and which accountant gave it (``basis``)."""

    game: Game
    epsilon: float
    delta: float
    basis: str
    mu: Optional[float] = None
    profile: tuple = field(default_factory=tuple)

    @property
    def finite(self) -> bool:
        return math.isfinite(self.epsilon)

    def tpr_cap(self, fpr: float) -> float:
        """The largest TPR at ``fpr`` of any test between the game's neighbours."""
        if not self.finite:
            return 1.0
        if self.mu is not None:
            return _phi(_phi_inv(min(max(fpr, 1e-300), 1.0)) + self.mu) if fpr < 1 else 1.0
        return min(_pair_cap(fpr, e, d) for e, d in ((self.epsilon, self.delta), *self.profile))

    def reid_cap(self, chance: float) -> float:
        """The largest probability of re-identifying the protected unit among candidates of prior
        ``chance`` (the share of candidates the unit covers)."""
        return _reid_cap(self, chance)

    def to_dict(self) -> dict:
        """The JSON of a cap's proof: ``cap_game``, ``cap_game_words``, ``cap_epsilon`` (None = ∞),
        ``cap_delta``, ``cap_basis``, ``cap_mu``."""
        return {"cap_game": self.game.key, "cap_game_words": self.game.words(),
                "cap_epsilon": self.epsilon if self.finite else None, "cap_delta": self.delta,
                "cap_basis": self.basis, "cap_mu": self.mu}


@lru_cache(maxsize=8192)
def _reid_cap(b: Bound, chance: float) -> float:
    """:meth:`Bound.reid_cap`, remembered (a live view asks it of the same bound every round)."""
    if not b.finite or chance >= 1:
        return 1.0
    if b.mu is not None:
        return _phi(_phi_inv(max(chance, 1e-300)) + b.mu)
    return min(1.0, *(math.exp(min(e, 700)) * chance + d for e, d in ((b.epsilon, b.delta), *b.profile)))


def unbounded(game: Game, delta: float, why: str) -> Bound:
    return Bound(game, math.inf, delta, why)


def bound(game: Game, gaussian: Mapping, pure: Mapping, native: str, delta: float) -> Bound:
    """``game``'s bound for releases ``gaussian`` ``{(z, q): steps}`` and ``pure`` ``{ε: count}``
    accounted with ``native`` neighbours (:data:`NATIVE_ADJACENCY`), at ``delta`` (module doc).
    Remembered per releases (a :class:`Bound` is frozen): a live view asks the same of every
    round whose clients released alike."""
    return _bound(game, tuple(sorted(gaussian.items())), tuple(sorted(pure.items())), native, float(delta))


@lru_cache(maxsize=4096)
def _bound(game: Game, gaussian: tuple, pure: tuple, native: str, delta: float) -> Bound:
    if not gaussian and not pure:
        return Bound(game, 0.0, delta, "nothing released", mu=0.0)
    doubled = game.adjacency == "replace" and native == "add_remove"
    scale = game.group * (2 if doubled else 1)
    steps: dict = {}
    for (z, q), k in gaussian:
        rate = 1.0 if game.sampling == "conditioned" else min(1.0, float(q))
        steps[(float(z), rate)] = steps.get((float(z), rate), 0.0) + float(k)
    options = []
    if steps:
        options.append(_gaussian_bound(game, steps, scale, doubled, delta))
    if pure:
        options.append(_pure_bound(game, {float(e) * scale: c for e, c in pure}, delta))
    if len(options) == 2 and pure and steps:   # two views of the same releases: each is a bound
        return min(options, key=lambda b: b.epsilon)
    return options[0]


def _gaussian_bound(game: Game, steps: dict, scale: int, doubled: bool, delta: float) -> Bound:
    if any(z <= 0 for z, _ in steps):
        return unbounded(game, delta, "a Gaussian step without noise")
    unsampled = all(q >= 1 for _, q in steps)
    if unsampled or min(z for z, _ in steps) < PLD_FLOOR:
        mu = scale * math.sqrt(sum(k / z ** 2 for (z, _), k in steps.items()))
        mu = _round_up(mu)
        words = ("μ-GDP, exact for Gaussian releases without sampling (Dong, Roth & Su 2019; ε by dp-accounting's "
                 "analytic Gaussian privacy loss)" if unsampled else
                 f"μ-GDP without the amplification by sampling (an upper bound: noise multipliers below {PLD_FLOOR} "
                 "make a PLD too large to build)")
        return Bound(game, _gdp_epsilon(mu, delta), delta, words, mu=mu,
                     profile=tuple((_gdp_epsilon(mu, d), d) for d in PROFILE_DELTAS))
    relation = "REPLACE_ONE" if doubled else "ADD_OR_REMOVE_ONE"
    eps = _subsampled_profile(tuple(sorted(steps.items())), relation, (delta, *PROFILE_DELTAS))
    pairs = list(zip(eps, (delta, *PROFILE_DELTAS)))
    words = f"PLD (dp-accounting) of the Poisson-subsampled Gaussian, {relation.lower().replace('_', '-')} neighbours"
    if game.group > 1:
        pairs = [_group(e, d, game.group) for e, d in pairs]
        words += f", then group privacy for {game.group}"
    (e0, d0), rest = pairs[0], tuple(p for p in pairs[1:] if math.isfinite(p[0]))
    return Bound(game, e0, d0, words, profile=rest)


def _pure_bound(game: Game, releases: dict, delta: float) -> Bound:
    from .pure import compose_pure

    words = "pure ε releases composed as k-fold randomized response (dp-accounting's PLD)"
    return Bound(game, compose_pure(releases, delta), delta, words,
                 profile=tuple((compose_pure(releases, d), d) for d in PROFILE_DELTAS))


def _group(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(ε, δ) for k units at once from one unit's (Dwork & Roth 2014, Thm 2.2)."""
    if not math.isfinite(epsilon):
        return math.inf, delta
    return k * epsilon, min(1.0, k * math.exp(min((k - 1) * epsilon, 700)) * delta)


def _round_up(mu: float) -> float:
    if mu <= 0 or not math.isfinite(mu):
        return mu
    e = math.floor(math.log10(mu)) - MU_DIGITS + 1
    return math.ceil(mu / 10 ** e - 1e-9) * 10 ** e


@lru_cache(maxsize=8192)
def _gdp_epsilon(mu: float, delta: float) -> float:
    """ε at ``delta`` of one Gaussian with sensitivity/σ = ``mu``: the root of dp-accounting's exact
    ``GaussianPrivacyLoss.get_delta_for_epsilon`` (δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2); Balle &
    Wang 2018, Thm 8), found by Brent's method and rounded up. No discretised PLD: at the μ of ε in the
    thousands one would take seconds to minutes."""
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss
    from scipy.optimize import brentq

    if mu == 0:
        return 0.0
    if not math.isfinite(mu) or mu > 1e6:
        return math.inf
    loss = GaussianPrivacyLoss(standard_deviation=1.0 / mu, sensitivity=1.0)
    excess = lambda eps: loss.get_delta_for_epsilon(eps) - delta  # noqa: E731
    if excess(0.0) <= 0:
        return 0.0
    high = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1.0
    while excess(high) > 0:
        high *= 2
    return brentq(excess, 0.0, high, xtol=1e-12, rtol=1e-12) * (1 + 1e-9)


@lru_cache(maxsize=2048)
def _subsampled_profile(steps: tuple, relation: str, deltas: tuple) -> tuple:
    """ε at each of ``deltas`` of ``steps`` ``((z, q), k), ...`` composed by dp-accounting's PLD."""
    from .pure import composed_gaussian_pld

    try:
        composed = composed_gaussian_pld(tuple((zq, int(math.ceil(k - 1e-9))) for zq, k in steps), relation)
        return tuple(math.inf if composed is None else float(composed.get_epsilon_for_delta(d)) for d in deltas)
    except (OverflowError, ValueError, MemoryError):
        return tuple(math.inf for _ in deltas)


def worst(bounds: Iterable[Bound]) -> Optional[Bound]:
    """One bound that holds for every one of ``bounds`` (games alike): the largest ε at each δ, μ the
    largest where all are μ-GDP; None for no bounds."""
    bounds = list(bounds)
    if not bounds:
        return None
    top = max(bounds, key=lambda b: b.epsilon)
    if all(b.mu is not None for b in bounds):
        return max(bounds, key=lambda b: b.mu)
    shared = set.intersection(*({d for _, d in b.profile} for b in bounds))
    profile = tuple((max(e for b in bounds for e, d in b.profile if d == delta), delta)
                    for delta in sorted(shared, reverse=True))
    return replace(top, mu=None, profile=profile)


def client_bound(ledger, client: int, game: Game, delta: Optional[float] = None) -> Bound:
    """What ``client``'s releases in ``ledger`` (:class:`~.ledger.Ledger`) prove for ``game``: its latest
    round's (``releases="round"``) or all of them, at its δ (or ``delta``); infinite where the client
    released something unbounded (:meth:`Ledger.game_bound <.ledger.Ledger.game_bound>`)."""
    d = float(ledger.delta[client] if delta is None else delta)
    if ledger.threat_model == "none" or ledger.exposed[client]:
        return unbounded(game, d, "nothing noised: no guarantee")
    if game.releases == "round" and int(client) in ledger.last_round:
        gaussian, pure = ledger.last_round[int(client)]
        if not ledger.rdp_valid[client] and not ledger.pure_valid[client]:
            return unbounded(game, d, "a release without a bound")
    else:   # the run so far (also a round that spent nothing new: a recalled upload repeats an earlier one)
        gaussian = ledger.tally[client] if ledger.rdp_valid[client] else {}
        pure = ledger.pure_releases[client] if ledger.pure_valid[client] else {}
        if not gaussian and not pure and (ledger.steps[client] or ledger.pure[client]):
            return unbounded(game, d, "a release without a bound")
    return bound(game, gaussian, pure, NATIVE_ADJACENCY.get(ledger.threat_model, "add_remove"), d)


def run_bound(ledger, game: Game, clients=None) -> Bound:
    """One :func:`client_bound` that holds for every client of ``ledger`` (of ``clients``): the run's answer
    to ``game``. Clients with identical releases share one computation; past
    :data:`.pure.EXACT_TALLIES` distinct Gaussian tallies, one dominating tally bounds them all."""
    from .pure import EXACT_TALLIES, dominating_tally

    ids = list(range(len(ledger.basic)) if clients is None else clients)
    keys: dict = {}
    for c in ids:
        key = (tuple(sorted(ledger.tally[c].items())), tuple(sorted(ledger.pure_releases[c].items())),
               float(ledger.delta[c]), bool(ledger.exposed[c]), bool(ledger.rdp_valid[c]), bool(ledger.pure_valid[c]))
        keys.setdefault(key, c)
    plain = [k for k in keys if not k[1] and not k[3] and k[4] and k[0]]   # Gaussian releases only
    if len(plain) > EXACT_TALLIES:   # 1,000 users of distinct multipliers: one tally dominating them all
        top = bound(game, dict(dominating_tally(sorted(k[0] for k in plain))), {},
                    NATIVE_ADJACENCY.get(ledger.threat_model, "add_remove"), min(k[2] for k in plain))
        return worst([top, *(client_bound(ledger, c, game) for k, c in keys.items() if k not in set(plain))])
    return worst(client_bound(ledger, c, game) for c in keys.values())
