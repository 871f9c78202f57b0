"""Per-client privacy ledger (METHODS section 8).

Records *what happened* each round (the Opacus accountant lesson) and derives, per client:

- ``basic``: cumulative epsilon under basic (sequential) composition of what each
  mechanism says a round spent, always (for most mechanisms the paper's own ledger);
- the **headline** epsilon (:mod:`fedcore.accounting.headline`): the tightest rigorous
  bound for the mechanism's threat model, per client and per run; infinity when nothing
  was noised. Gaussian steps are composed by their privacy loss distribution (PLD, the exact
  accountant: :mod:`.exact`), round by round; pure-eps releases are kept as ``{eps: count}`` per
  client and composed by theirs (:mod:`.pure`), which is tighter than their sum;
- ``rdp``: the RDP accountant of dp-accounting, only for clients whose PLD is not composed
  (grid records below, a PLD dp-accounting cannot build); the run then names ``"rdp"`` as its
  accountant (:meth:`Figures.accountant`) and ``pld_run`` gives its PLD at the end;
- any labelled *claim* a mechanism reports (e.g. LDP-FL's "per-weight eps with
  shuffling" vs "composed eps without shuffling", a paper's closed-form total), so a
  paper's figure and the accountant's are shown side by side.

A Gaussian record may cover clients that did not upload (central DP with Poisson user
sampling: every user who *could* have been sampled pays the subsampled-Gaussian cost of
the round); each covered client composes ``steps`` steps at its own noise multiplier.

**RDP records** (issues 41 and 55): a record whose multipliers change every round (``GaussianRecord.grid``,
ULDP-FED's central reading: every user its own noise history, hundreds of distinct tallies, too many to
compose a PLD each round) is composed by RDP (:class:`.rdp_queue.RdpQueue`): each new curve every order at
once (about 2 ms), each distinct history composed once. ``FEDCORE_ACCOUNTING=background`` sends new curves
to worker processes instead (:mod:`.curve_workers`); every reader (:meth:`Ledger.headline`,
:meth:`Ledger.views`, ...) then first waits for what is still out, so a figure is always that of every round
recorded, and the round loop does not wait (:func:`fedcore.engine.loop.iter_run`): a round whose curves are
out keeps its figures (:meth:`Ledger.snapshot`) and gets its RDP curves when every curve up to its place in
the queue is composed (:meth:`Ledger.settle`), bitwise the headline an inline ledger read after that round.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .exact import Lineages, run_pld
from .games import client_bound, run_bound
from .headline import NO_PRIVACY, headline_epsilons, run_headline
from .pure import compose_pure
from .rdp import rdp_epsilons
from .rdp_queue import RdpQueue


@dataclass
class GaussianRecord:
    """One round of a Gaussian mechanism.

    ``noise_multiplier`` ``[k]`` (noise std / L2 sensitivity) per covered client (a tensor or a host array);
    ``sample_rate`` the Poisson rate of each step (1: no amplification; a number or ``[k]``); ``steps`` how many
    such steps the round composed (DP-SGD: local steps, a number or ``[k]``; update-level
    Gaussian: 1). ``clients`` ``[k]``: the clients covered (a tensor or a host array); None means the round's uploaders
    (aligned with ``Upload.clients``). ``grid``: round each multiplier *down* to a 0.2 %
    geometric grid before composing (a slightly larger epsilon, never a smaller one), so
    that records whose multipliers change every round (ULDP-FED's central reading) reuse
    dp-accounting's curves instead of computing new ones each round.
    """

    noise_multiplier: Union["torch.Tensor", np.ndarray]
    sample_rate: Union[float, "torch.Tensor", np.ndarray] = 1.0
    steps: Union[int, float, "torch.Tensor", np.ndarray] = 1
    clients: Union["torch.Tensor", np.ndarray, None] = None
    grid: bool = False


GRID = 1.002
"""Ratio of consecutive multipliers on the conservative grid of ``GaussianRecord.grid``: fine
enough that a headline ε (which grows like 1/z² at large ε) moves in steps of under 0.5 %, so
an equal-privacy calibration (:mod:`fedcore.equal_privacy`, 1 % tolerance) can land on it."""


PROFILE_DELTAS = (0.1, 0.03, 0.01, 3e-3, 1e-3, 1e-4, 1e-6, 1e-8, 1e-10)
"""The δs of :meth:`Ledger.profile`: each gives one (ε, δ) guarantee of the run."""


def _numpy(x) -> np.ndarray:
    return x.detach().double().cpu().numpy() if hasattr(x, "detach") else np.asarray(x, np.float64)


def _ids(x) -> np.ndarray:
    """Client ids (a tensor on any device or a host array) as an int64 array."""
    return (x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)).astype(np.int64)


class Figures:
    """What a round's event reads of the ledger: each client's headline ε, its accountant and the views.

    :class:`Ledger` reads its running state; :class:`RoundFigures` the state one round left, kept while
    that round's curves were still out. Both hold ``exact`` (each client's PLD ε at its δ), ``rdp_only``
    (the clients composed by RDP instead), ``rdp``, ``rdp_valid``, ``pure``, ``pure_releases``,
    ``pure_valid``, ``exposed``, ``steps``, ``claims``, ``delta`` and ``threat_model``.
    """

    def rdp_epsilon(self) -> np.ndarray:
        """``[N]`` RDP epsilon at each client's delta (0 where nothing was composed by RDP)."""
        return rdp_epsilons(self.rdp, self.delta)

    def pure_composed(self, delta: Optional[np.ndarray] = None) -> np.ndarray:
        """``[N]`` each client's pure-eps releases composed by their PLD (:mod:`.pure`), at its delta
        (or at ``delta [N]``)."""
        delta = self.delta if delta is None else delta
        return np.array([compose_pure(r, d) if ok else math.inf
                         for r, d, ok in zip(self.pure_releases, delta, self.pure_valid)])

    def exact_at(self, delta: Optional[float]) -> np.ndarray:
        """``[N]`` each client's PLD ε at its own δ (a snapshot knows no other δ)."""
        if delta is not None:
            raise ValueError("a round's snapshot holds each client's ε at its own δ only")
        return self.exact.copy()

    def gaussian_epsilons(self, delta: Optional[float] = None) -> np.ndarray:
        """``[N]`` ε of each client's Gaussian releases: the PLD (:mod:`.exact`), RDP for ``rdp_only``."""
        out = self.exact_at(delta)
        if self.rdp_only.any():
            d = self.delta if delta is None else np.full(len(self.delta), float(delta))
            sel = np.flatnonzero(self.rdp_only)
            curves, history = self.rdp_histories()
            pairs = history[sel].astype(np.float64) + 1j * d[sel]   # each distinct (history, δ) once: one sort
            _, first, inverse = np.unique(pairs, return_index=True, return_inverse=True)
            out[sel] = rdp_epsilons(curves[history[sel[first]]], d[sel[first]])[inverse.reshape(-1)]
        return out

    def rdp_histories(self) -> tuple:
        """``(curves, history [N])``: client c's RDP curve is ``curves[history[c]]``, the same row for clients with
        the same history (:attr:`.rdp_queue.RdpQueue.history`)."""
        if self.rdp_history is None:
            return self.rdp, np.arange(len(self.rdp))
        _, first, inverse = np.unique(self.rdp_history, return_index=True, return_inverse=True)
        return self.rdp, first[inverse.reshape(-1)]

    def headline(self, delta: Optional[float] = None) -> np.ndarray:
        """``[N]`` headline epsilon (inf = no guarantee), see :mod:`.headline`; with ``delta``, every
        client's at that δ instead of its own (one point of the run's privacy profile)."""
        d = self.delta if delta is None else np.full(len(self.delta), float(delta))
        pure = self.pure_composed(d) if self.pure_valid.any() and self.pure.any() else self.pure
        return headline_epsilons(self.gaussian_epsilons(delta), self.rdp_valid, pure, self.pure_valid, self.exposed,
                                 self.threat_model)

    def accountant(self) -> str:
        """The accountant of the run's headline: ``"pld"`` (the exact one: Gaussian steps by their PLD,
        pure releases by theirs), ``"rdp"`` where a noised client is composed by RDP, ``"none"`` when
        nothing is noised (:data:`.headline.ACCOUNTANTS`)."""
        if self.threat_model == NO_PRIVACY:
            return NO_PRIVACY
        return "rdp" if (self.rdp_only & (self.steps > 0)).any() else "pld"

    def views(self, headline: Optional[np.ndarray] = None) -> dict[str, list]:
        """Named per-client cumulative figures, for the event stream (strict JSON: no inf): the
        headline (``headline``, when the caller has it already) under the name of its accountant, and
        every labelled claim."""
        out: dict[str, list] = {}
        if self.threat_model != NO_PRIVACY and ((self.steps > 0).any() or self.pure.any()):
            head = self.headline() if headline is None else headline
            out[self.accountant()] = [e if math.isfinite(e) else None for e in head.tolist()]
        for label, values in self.claims.items():
            out[label] = values.tolist()
        return out


@dataclass
class RoundFigures(Figures):
    """The ledger as one round left it (:meth:`Ledger.snapshot`), for that round's event when its RDP
    curves are still computed beside the run: ``rdp`` is filled in once every curve recorded up to
    ``position`` is composed (:meth:`Ledger.settle`), bitwise the ledger's own figure at that point."""

    position: int
    basic: np.ndarray
    claims: dict
    rdp_valid: np.ndarray
    pure: np.ndarray
    pure_releases: Optional[list]
    pure_valid: np.ndarray
    exposed: np.ndarray
    delta: np.ndarray
    threat_model: str
    exact: np.ndarray
    rdp_only: np.ndarray
    steps: np.ndarray
    rdp: Optional[np.ndarray] = None
    rdp_history: Optional[np.ndarray] = None


class Ledger(Figures):
    """Cumulative privacy spent by each of ``num_clients`` clients.

    ``threat_model``: the mechanism's (``"none"`` makes every headline infinite).
    """

    def __init__(self, num_clients: int, delta: np.ndarray, threat_model: str = "local"):
        self.delta = np.asarray(delta, dtype=np.float64)
        self.threat_model = threat_model
        self.basic = np.zeros(num_clients)
        self.rdp_queue = RdpQueue(num_clients)                # RDP curves, the slow ones beside the run
        self.rdp_valid = np.ones(num_clients, dtype=bool)     # every release covered by a Gaussian record
        self.pure = np.zeros(num_clients)                     # summed pure eps (basic composition)
        self.pure_releases: list[dict[float, float]] = [{} for _ in range(num_clients)]
        self.pure_valid = np.ones(num_clients, dtype=bool)    # every release has a pure-eps bound
        self.exposed = np.zeros(num_clients, dtype=bool)      # released something with no bound
        self.steps = np.zeros(num_clients)                    # Gaussian steps composed per client
        self.lineages = Lineages(self.delta)                  # each client's Gaussian steps as one PLD (.exact)
        self.rdp_only = np.zeros(num_clients, dtype=bool)     # composed by RDP instead (grid records, failed PLDs)
        self.tally: list[dict[tuple, float]] = [{} for _ in range(num_clients)]   # (z, q) -> steps
        self._round: list = []   # the latest round's Gaussian groups (key, ids, steps) and pure releases
        self._last_round: Optional[dict] = {}
        self.claims: dict[str, np.ndarray] = {}

    @property
    def last_round(self) -> dict[int, tuple[dict, dict]]:
        """The latest round's releases of each client it touched: ``{client: ({(z, q): steps}, {ε: count})}``
        (the games that read one round, :meth:`game_bound`); built from the round's groups when first read."""
        if self._last_round is None:
            made: dict[int, tuple[dict, dict]] = {}
            for kind, key, ids, counts in self._round:
                for c, k in zip(ids, counts):
                    mine = made.setdefault(c, ({}, {}))[kind]
                    mine[key] = k if kind else mine.get(key, 0.0) + k   # pure: a client's one count of it
            self._last_round = made
        return self._last_round

    exact = property(lambda self: self.lineages.epsilon, doc="``[N]`` each client's PLD ε at its own δ (:mod:`.exact`).")
    rdp = property(lambda self: self.rdp_queue.curves, doc="``[N, len(ORDERS)]`` each client's composed RDP curve.")

    def rdp_histories(self) -> tuple:
        return self.rdp_queue.histories
    wait_s = property(lambda self: self.rdp_queue.wait_s, doc="Wall seconds readers waited for curves still out.")

    def exact_at(self, delta: Optional[float]) -> np.ndarray:
        return self.lineages.epsilons(delta)

    def pending(self) -> bool:
        """Whether RDP curves computed beside the round are still out (a reader would wait for them)."""
        return self.rdp_queue.pending()

    def snapshot(self) -> RoundFigures:
        """The figures as the rounds recorded so far leave them, for an event built while their curves are
        still out; its ``rdp`` comes when they are composed (:meth:`settle`). Meanwhile later rounds may
        record: the snapshot keeps this point's state."""
        snap = RoundFigures(self.rdp_queue.queued, self.basic.copy(), {k: v.copy() for k, v in self.claims.items()},
                            self.rdp_valid.copy(), self.pure.copy(),
                            [dict(r) for r in self.pure_releases] if self.pure.any() else None,
                            self.pure_valid.copy(), self.exposed.copy(), self.delta, self.threat_model,
                            self.lineages.epsilons(), self.rdp_only.copy(), self.steps.copy())
        self.rdp_queue.mark(snap)
        return snap

    def settle(self, snap: RoundFigures, wait: bool = False) -> bool:
        """Whether ``snap``'s figures are complete; with ``wait``, after waiting for their curves."""
        return self.rdp_queue.settle(snap, wait)

    def record(self, clients: "torch.Tensor", spent: Optional["torch.Tensor"],
               gaussian: Optional[GaussianRecord] = None,
               claims: Optional[dict[str, "torch.Tensor"]] = None,
               pure: Optional["torch.Tensor"] = None, pure_count: Optional["torch.Tensor"] = None) -> None:
        """Add one round: ``clients`` uploaded; ``spent``, ``claims`` and ``pure`` (rigorous
        pure eps of this round) are aligned with them; ``pure_count``: how many releases of
        ``pure / pure_count`` eps each make up ``pure`` (None: one); ``gaussian`` covers its
        own clients."""
        ids = _ids(clients)
        self._round, self._last_round = [], None
        if spent is not None:
            np.add.at(self.basic, ids, _numpy(spent))
        for label, values in (claims or {}).items():
            np.add.at(self.claims.setdefault(label, np.zeros_like(self.basic)), ids, _numpy(values))
        covered = np.zeros(len(self.basic), dtype=bool)
        if gaussian is not None:
            gids = ids if gaussian.clients is None else _ids(gaussian.clients)
            z = np.broadcast_to(_numpy(gaussian.noise_multiplier), gids.shape)
            if gaussian.grid:
                self.rdp_queue.note_grid_record()
                z = np.where(z > 0, GRID ** np.floor(np.log(np.maximum(z, 1e-300)) / np.log(GRID)), z)
            steps = np.broadcast_to(_numpy(gaussian.steps), gids.shape)
            q = np.broadcast_to(_numpy(gaussian.sample_rate), gids.shape)
            self._compose(gids, z, q, steps, exact=not gaussian.grid)
            covered[gids] = True
        uncovered = ids[~covered[ids]]
        self.rdp_valid[uncovered] = False
        with_pure = np.zeros_like(covered)
        if pure is not None:
            values = _numpy(pure)
            np.add.at(self.pure, ids, values)
            counts = np.ones_like(values) if pure_count is None else np.broadcast_to(_numpy(pure_count), values.shape)
            for c, total, k in zip(ids, values, counts):
                unit = float(f"{total / k:.12g}")
                self.pure_releases[c][unit] = self.pure_releases[c].get(unit, 0) + k
                if total > 0:
                    self._round.append((1, unit, (int(c),), (float(k),)))
            with_pure[ids] = True
        else:
            self.exposed[uncovered] = True
        self.pure_valid[(covered | np.isin(np.arange(len(covered)), ids)) & ~with_pure] = False

    def _compose(self, ids: np.ndarray, z: np.ndarray, sample_rate: np.ndarray, steps: np.ndarray,
                 exact: bool = True) -> None:
        """Add ``steps`` steps of the Poisson(sample_rate)-subsampled Gaussian with multiplier ``z`` to
        each client: to its PLD (``exact``, :class:`.exact.Lineages`) or, for a grid record and a client
        whose PLD could not be built, to its RDP curve (:class:`.rdp_queue.RdpQueue`), per distinct
        (z rounded to 6 digits, rate)."""
        uz, zinv = np.unique(np.asarray(z, np.float64).reshape(-1), return_inverse=True)
        zr = np.array([float(f"{v:.6g}") for v in uz])[zinv.reshape(-1)]   # formatted once per distinct z
        pairs = zr + 1j * np.minimum(1.0, np.asarray(sample_rate, np.float64).reshape(-1))
        distinct, inverse = np.unique(pairs, return_inverse=True)   # (z, rate) pairs, as complex numbers: in order
        if not exact:
            self.rdp_only[ids] = True
        tally = self.tally
        for j, pair in enumerate(distinct.tolist()):
            sel = inverse.reshape(-1) == j
            key = (pair.real, pair.imag)
            np.add.at(self.steps, ids[sel], steps[sel])
            mine, counts = ids[sel].tolist(), steps[sel].astype(np.float64).tolist()
            for c, k in zip(mine, counts):
                t = tally[c]
                t[key] = t.get(key, 0.0) + k
            self._round.append((0, key, mine, counts))
            by_pld = sel & ~self.rdp_only[ids]
            if by_pld.any():
                self.lineages.add(ids[by_pld], key, steps[by_pld])
                lost = ids[by_pld][self.lineages.failed[ids[by_pld]]]
                for c in lost.tolist():      # a PLD dp-accounting cannot build: RDP from here on, whole tally
                    self.rdp_queue.add_now(c, self.tally[c])
                self.rdp_only[lost] = True
            if (sel & ~by_pld).any():
                self.rdp_queue.add(ids[sel & ~by_pld], steps[sel & ~by_pld], *key)
        self.rdp_queue.drain(wait=False)

    def profile(self, deltas: tuple = PROFILE_DELTAS) -> list[tuple[float, float]]:
        """``[(ε, δ)]``: the run's headline (largest over clients) at each δ of ``deltas``, finite
        ones only. Each pair is a guarantee of the same run, so a test between neighbours must
        respect all of them at once: the attacks' caps take the smallest (``shared/ATTACKS.md`` §4)."""
        if self.threat_model == NO_PRIVACY:
            return []
        pairs = [(run_headline(self.headline(d).tolist()), float(d)) for d in deltas]
        return [(e, d) for e, d in pairs if math.isfinite(e)]

    game_bound = client_bound
    run_bound = run_bound
    pld_run = run_pld

    def headline_run(self) -> float:
        return run_headline(self.headline().tolist())
