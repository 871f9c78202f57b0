"""The attack a run carries round by round: each watched client's update, as each attacker of
the threat model receives it, inverted and scored (the Playground's live attack view).

:class:`AttackWatch` is handed to :func:`fedcore.engine.loop.iter_run` (``watch=``). The loop
tells it the round's batch plan (which images each client's update was computed from); the
server round taps the raw updates before the mechanism and the uploads and the global change
after it (:func:`fedcore.engine.rounds.server_round`); after the ledger has recorded the round,
:meth:`AttackWatch.close` keeps what the round's record needs, and :meth:`AttackWatch.flush` returns
the ``RoundEvent.attack`` rows (:class:`~fedcore.events.AttackRow`, one per attacker) of the rounds
closed since the last flush (the loop holds their events until then: a few rounds that close in quick
succession share the work); each client's row: ``{"client", "used", "n", "chance", "matched",
"label_ok", "epsilon", "cap", "reidentified"?, "psnr"?, "image"?, "truth"?}``.

Each attacker's vectors go to the registered reconstruction attacks whose needs match
(:data:`.registry.ATTACKS`): :mod:`.inversion` adds ``reidentified``, ``psnr`` and, for the first ``show``
clients, ``image`` and ``truth`` in 8-bit grey levels (:func:`encode_images`, :func:`decode_image`);
:mod:`.informed` adds ``matched``. Gradient matching costs seconds per image, too slow for every round: a
model whose first layer is not linear keeps its first updates for ``python -m fedcore attack``.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple, Optional

import numpy as np
import torch

from ..accounting.games import unbounded
from ..events import AttackRow
from .attackers import attackers_for
from .informed import CandidatePool, Candidates
from .inversion import first_linear, last_bias, recover_label
from .metrics import decode_image, encode_images  # noqa: F401  (watch.decode_image: the view reads it here)
from .registry import of_kind, reconstruction_game

SHOW = 6
"""Clients whose images travel in the event (the Playground's per-client sliders go up to 6)."""
BATCH_ROUNDS = 64
BATCH_SECONDS = 0.2
BATCH_BYTES = 64 * 2**20
"""Rounds closed in quick succession are turned into records together (:meth:`AttackWatch.flush`): as
many as close within 0.2 s, up to 64 rounds or 64 MiB of candidates' activations and errors. A round's
view costs mostly fixed work (~150 small array operations), which a batch shares; a round slower than
0.2 s is flushed on its own."""


class AttackWatch:
    """Attack the updates of ``clients`` (default: every client) of a prepared run ``setup``."""

    def __init__(self, setup, clients: Optional[list[int]] = None, show: int = SHOW, keep: int = 0):
        self.s = setup
        n = setup.cfg.num_clients
        self.clients = list(range(n)) if clients is None else [c for c in clients if 0 <= c < n]
        self.show = set(self.clients[:show])
        self.layer = first_linear(setup.params)
        self.label_slice = last_bias(setup.params)
        self.attackers = attackers_for(setup.mechanism.threat_model)
        self.sources = {a.source for a in self.attackers}
        self.blank = [replace(a, shape=tuple(setup.x_train.shape[1:]), unsupported=self.unsupported)
                      for a in self.attackers]
        """Each attacker's row before a round fills its ``clients``."""
        self.attacks = of_kind("reconstruction")
        x = setup.x_train.reshape(len(setup.x_train), -1)
        self.x = x
        self.index = {c: i for i, c in enumerate(self.clients)}
        pad = setup.padded[self.clients] if self.clients else setup.padded[:0]
        self.counts = setup.counts.tolist()
        self.pool = CandidatePool(setup.model, setup.params, setup.x_train, setup.y_train, pad,
                                  [self.counts[c] for c in self.clients])
        self.valid = self.pool.valid                # [clients, n_max]: which padded places are images
        classes = setup.ctx.num_classes
        self.labels_held = np.zeros((len(self.clients), classes + 1), dtype=bool)
        self.labels_held[np.arange(len(self.clients))[:, None], np.where(self.valid, self.pool.labels, classes)] = True
        """``[clients, classes + 1]``: the labels each watched client holds (the last column unused)."""
        self.n_max = pad.shape[1]
        self.position = np.zeros(len(x), dtype=np.int64)   # a row's place in its client's list
        for c in self.clients:
            self.position[setup.padded[c, : self.counts[c]].cpu().numpy()] = np.arange(self.counts[c])
        self.box = self.pool.box                     # the watched images' pixel range
        self.peak = (self.box[1] - self.box[0]) or 1.0
        self._pictures: dict[tuple[int, int], str] = {}
        """The shown clients' true images, encoded once each: ``(client, position) -> text``."""
        self._unbounded: dict = {}
        """The rows' start for attackers no ε bounds (the same every round): ``(attacker, client, used) -> row``."""
        self._round: dict = {}
        self._pending: list[dict] = []
        """Rounds closed (:meth:`close`) whose records :meth:`flush` has not built yet."""
        self._since: Optional[float] = None
        self.ledger = None
        """The run's ledger as of the last :meth:`close` (the whole run's bound is read from it at the end)."""
        self.keep = keep if self.layer is None else 0
        self.kept: list[dict] = []
        """Without a linear first layer: the first ``keep`` updates, for gradient matching later."""

    @property
    def unsupported(self) -> str:
        if self.layer is None:
            return (f"{self.s.cfg.model}'s first layer is a convolution: the analytic inversion needs a first "
                    "linear layer (logreg, mlp); `python -m fedcore attack` runs gradient matching instead")
        return ""

    def plan(self, sel: torch.Tensor, plan) -> None:
        """Round start: the round's clients ``sel`` and batch plan, read once the round's updates are in
        (:meth:`_planned`: the round's host work in one stretch, not split by the training)."""
        self._round = {"sel": sel, "plan": plan, "raw": None, "upload": None, "aggregate": None,
                       "params": self.s.params}

    def _planned(self) -> dict:
        """The round: which row of the round each watched client is, and which of its images it used
        (``mask[j]``: over client ``clients[j]``'s images; a Poisson batch that drew nothing is left out)."""
        r = self._round
        if "sel" not in r:
            return r
        sel, plan = r.pop("sel"), r.pop("plan")
        rows = {c: i for i, c in enumerate(sel.tolist())}
        watched = [c for c in self.clients if c in rows]
        clients, mask, counted = [], self.valid[:0], []
        if watched:
            at = [rows[c] for c in watched]
            live = (_host_rows(plan.mask, at) * _host_rows(plan.active, at)[:, :, None] > 0).reshape(len(at), -1)
            where = np.where(live, self.position[_host_rows(plan.index, at).reshape(len(at), -1)], self.n_max)
            full = np.zeros((len(at), self.n_max + 1), dtype=bool)     # [k, n_max + 1]: the last column unused
            full[np.arange(len(at))[:, None], where] = True
            mask = full[:, :-1]
            counted = mask.sum(1).tolist()
            if 0 in counted:                                            # a Poisson batch that drew nothing
                keep = [j for j, k in enumerate(counted) if k]
                watched, mask, counted = [watched[j] for j in keep], mask[keep], [counted[j] for j in keep]
            clients = watched
        r.update(rows=rows, clients=clients, mask=mask, counted=counted)
        return r

    def before(self, updates: torch.Tensor, sel: torch.Tensor) -> None:
        """The raw updates ``[m, d]`` of the round (before the mechanism changes them)."""
        r = self._planned()
        if r.get("clients") and "raw" in self.sources:
            r["raw"] = (list(range(len(r["clients"]))), _host_rows(updates.float(), [r["rows"][c] for c in r["clients"]]))

    def after(self, upload, step: Optional[torch.Tensor]) -> None:
        """What the mechanism uploaded (rows aligned with ``upload.clients``) and the global change."""
        r = self._planned()
        if not r.get("clients"):
            return
        if "upload" in self.sources:
            index = {int(c): i for i, c in enumerate(upload.clients.tolist())}
            mine = [j for j, c in enumerate(r["clients"]) if c in index]
            r["upload"] = (mine, _host_rows(upload.values.float(), [index[r["clients"][j]] for j in mine]))
        if "aggregate" in self.sources:
            r["aggregate"] = None if step is None else step.detach().float().clone()

    def close(self, ledger) -> None:
        """Round end: keep what the round's record needs, read the game each attacker plays per client
        from ``ledger`` (the run's, this round recorded) now; :meth:`flush` builds the records."""
        self.ledger = ledger
        r, self._round = self._planned(), {}
        r["received"] = [_received(a.source, r) for a in self.attackers]
        r["rows"] = [self._proofs(got, a, ledger, r) for got, a in zip(r["received"], self.attackers)]
        if r.get("clients") and any(got for got in r["received"]):
            r["blocks"] = [self.index[c] for c, k in zip(r["clients"], r["counted"]) if k < self.counts[c]]
            r["host"] = self.pool.host(r["params"]) if r["blocks"] else None
        self._pending.append(r)
        self._since = self._since or time.perf_counter()

    def due(self, consumer_s: Optional[float] = None) -> bool:
        """Whether the rounds kept since the last :meth:`flush` should be turned into records now: as
        many as :data:`BATCH_ROUNDS` or :data:`BATCH_BYTES` of candidates, or the first of them
        :data:`BATCH_SECONDS` old (a slow round is flushed at once, so the live view lags by at most
        that). Also at once while the run's consumer paces it (``consumer_s``: how long it kept the
        last events released, None before any): a dashboard in slow motion or paused shows each round
        as it trains, and a Stop lands on the round shown, not on rounds trained ahead."""
        if not self._pending:
            return False
        if consumer_s is None or consumer_s > BATCH_SECONDS:
            return True
        return (len(self._pending) >= min(BATCH_ROUNDS, BATCH_BYTES // self.pool.round_bytes)
                or time.perf_counter() - self._since >= BATCH_SECONDS)

    def flush(self) -> list[tuple[AttackRow, ...]]:
        """The attack record of every round closed since the last flush, in order, computed together:
        one batch of candidates and one scoring per attacker for all of them (a record is the same
        however many rounds share the batch)."""
        pending, self._pending, self._since = self._pending, [], None
        asked = [t for t, r in enumerate(pending) if r.get("blocks")]
        candidates = self.pool.at([pending[t]["host"] or pending[t]["params"] for t in asked],
                                  [pending[t]["blocks"] for t in asked]) if asked else None
        slot = {t: i for i, t in enumerate(asked)}
        out = [[] for _ in pending]
        for i, a in enumerate(self.attackers):
            rows = [(t, j) for t, r in enumerate(pending) if r["received"][i] for j in r["received"][i][0]]
            per_round = [[] for _ in pending]
            for (t, _), row in zip(rows, self._score(pending, i, rows, candidates, slot) if rows else []):
                per_round[t].append(row)
            for t, clients in enumerate(per_round):
                out[t].append(replace(self.blank[i], clients=tuple(clients)))
        return [tuple(rows) for rows in out]

    def _proofs(self, got, attacker, ledger, r: dict) -> list[dict]:
        """The start of each received update's row: who, how many images, chance, the game and its cap."""
        if not got:
            return []
        rows = []
        for j in got[0]:
            c = r["clients"][j]
            k, n = int(r["counted"][j]), self.counts[c]
            if not attacker.bounded and (attacker.key, c, k) in self._unbounded:
                rows.append(dict(self._unbounded[attacker.key, c, k]))
                continue
            game = reconstruction_game(self.s.mechanism.threat_model, k)
            proof = ledger.game_bound(c, game) if attacker.bounded else unbounded(
                game, float(ledger.delta[c]), f"{attacker.who} is not bounded by the run's ε")
            rows.append({"client": c, "used": k, "n": n, "chance": k / n,
                         "epsilon": proof.epsilon if proof.finite else None, "game": game.key,
                         "cap": proof.reid_cap(k / n)})
            if not attacker.bounded:
                self._unbounded[attacker.key, c, k] = dict(rows[-1])
        return rows

    def _score(self, pending: list, i: int, rows: list, candidates: Optional[Candidates], slot: dict) -> list[dict]:
        """Attacker ``i``'s rows ``(round, position)`` of the ``pending`` rounds, scored together: the
        label, then each registered reconstruction attack whose needs match (:data:`.registry.ATTACKS`)."""
        s = self.s
        clients = [pending[t]["clients"][j] for t, j in rows]
        at = [self.index[c] for c in clients]
        rounds = sorted({t for t, _ in rows})
        host = np.concatenate([pending[t]["received"][i][1] for t in rounds])   # [k, d]
        guessed = recover_label(host, self.label_slice)
        mask = np.concatenate([pending[t]["mask"][pending[t]["received"][i][0]] for t in rounds])  # [k, n_max] images used
        classes = s.ctx.num_classes
        if all(pending[t]["counted"][j] == self.counts[c] for (t, j), c in zip(rows, clients)):
            present = self.labels_held[at]                                 # every image used: the client's labels
        else:
            present = np.zeros((len(clients), classes + 1), dtype=bool)  # [k, classes + 1] labels used
            present[np.arange(len(clients))[:, None], np.where(mask, self.pool.labels[at], classes)] = True
        label_ok = present[np.arange(len(clients)), guessed].tolist()
        label_count = present[:, :classes].sum(1).tolist()
        starts = {t: 0 for t, _ in rows}
        out = []
        for q, (t, j) in enumerate(rows):
            out.append({**pending[t]["rows"][i][starts[t]], "label_ok": label_ok[q], "label_chance": label_count[q] / classes})
            starts[t] += 1
        seen = Seen(host, clients, at, mask, rows, out, pending, candidates, slot)
        for attack in self.attacks:
            if attack.score is not None and attack.reads(self.attackers[i].source, self.layer is not None):
                attack.score(self, seen)
        for q, row in enumerate(out if self.layer is None else ()):    # kept for gradient matching, run later
            if len(self.kept) < self.keep:
                t, j = rows[q]
                self.kept.append({"client": clients[q], "vector": torch.from_numpy(host[q].copy()).to(s.device),
                                  "params": pending[t]["params"], "used": torch.from_numpy(mask[q]),
                                  "label": int(guessed[q]), "row": row})
        return out

    def _truths(self, clients: list, closest, truth, shown: list) -> list[str]:
        """The encoded true images of the ``shown`` rows (each client's image encoded once per run)."""
        keys = [(clients[j], p) for j, p in zip(shown, closest[shown].tolist())]
        new = [i for i, key in enumerate(keys) if key not in self._pictures]
        if new:
            self._pictures.update(zip([keys[i] for i in new], encode_images(truth[[shown[i] for i in new]], self.box)))
        return [self._pictures[key] for key in keys]


def live_watch(setup) -> Optional[AttackWatch]:
    """The dashboard's watch: the first :data:`SHOW` clients, for models the inversion reads (the
    informed adversary's candidate gradients of a conv model would cost each round a training step)."""
    if first_linear(setup.params) is None:
        return None
    return AttackWatch(setup, clients=list(range(SHOW)))


class Seen(NamedTuple):
    """What an attacker received in the rounds being scored, handed to each attack's ``score(watch, seen)``:
    ``host [k, d]`` the vectors, from ``clients[q]`` (``at[q]`` its place in the watch), ``mask [k, n_max]``
    the images each used, ``rows`` their ``(round, position)`` in ``pending``, ``out`` the rows the attacks
    add their fields to; ``candidates`` and ``slot`` the informed adversary's batch and each round's place in it."""

    host: np.ndarray
    clients: list
    at: list
    mask: np.ndarray
    rows: list
    out: list
    pending: list
    candidates: Optional[Candidates]
    slot: dict


def _host_rows(t: torch.Tensor, at: np.ndarray) -> np.ndarray:
    """Rows ``at`` of ``t``, copied to a numpy array (on the host: a tensor changed later in place leaves them)."""
    t = t.detach()
    return t.numpy()[at] if t.device.type == "cpu" else t[torch.as_tensor(at, device=t.device)].cpu().numpy()


def _received(source: str, r: dict) -> Optional[tuple[list, np.ndarray]]:
    """``(positions, vectors [k, d])``: the updates the attacker receives this round, on the host,
    ``vectors[i]`` from the round's ``clients[positions[i]]``; None when it receives none."""
    clients = r.get("clients") or []
    if source == "aggregate":
        step = r.get("aggregate")
        if step is None or not clients:
            return None
        return list(range(len(clients))), np.repeat(step.float().cpu().numpy()[None], len(clients), 0)
    got = r.get("raw") if source == "raw" else r.get("upload")
    return got if got and got[0] else None
