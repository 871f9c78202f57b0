"""The attack a run carries round by round: each watched client's update, as each attacker of
the threat model receives it, inverted and scored (the Playground's live attack view).

:class:`AttackWatch` is handed to :func:`fedcore.engine.loop.iter_run` (``watch=``). The loop
tells it the round's batch plan (which images each client's update was computed from); the
server round taps the raw updates before the mechanism and the uploads and the global change
after it (:func:`fedcore.engine.rounds.server_round`); after the ledger has recorded the round,
:meth:`AttackWatch.report` returns the round's ``RoundEvent.attack`` record::

    {"shape": [1, 8, 8], "method": "analytic", "attackers": [{"key", "who", "received",
     "bounded", "clients": [{"client", "used", "n", "chance", "matched", "label_ok",
     "epsilon", "cap", "reidentified"?, "psnr"?, "image"?, "truth"?}]}]}

``image`` (what the attacker recovers, scaled to its own range) and ``truth`` (the used image
nearest to it: for one example, the example itself, in the data's range) are kept for the first
``show`` clients only, as 8-bit grey levels in base64 (:func:`encode_image`, :func:`decode_image`). ``reidentified``
scores the analytic inversion (:mod:`.inversion`), ``matched`` the informed adversary of the
cap's game (:mod:`.informed`). Models whose first layer is not linear get no inversion (an
``unsupported`` reason: gradient matching costs seconds per image, too slow for every round;
``python -m fedcore attack`` runs it), only ``matched``.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from .attackers import attackers_for
from .caps import reconstruction_cap, swap_privacy
from .informed import candidate_updates, match_candidates
from .inversion import first_linear, invert_linear, last_bias, recover_label
from .metrics import psnr_from_mse

SHOW = 6
"""Clients whose images travel in the event (the Playground's per-client sliders go up to 6)."""


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
        x = setup.x_train.reshape(len(setup.x_train), -1)
        self.x = x
        self.index = {c: i for i, c in enumerate(self.clients)}
        pad = setup.padded[self.clients] if self.clients else setup.padded[:0]
        self.valid = torch.arange(pad.shape[1], device=pad.device)[None, :] < setup.counts[self.clients][:, None]
        self.images = x[pad]                       # [clients, n_max, pixels]: each watched client's images
        self.box = (float(x.min()), float(x.max()))
        self.peak = (self.box[1] - self.box[0]) or 1.0
        self._round: dict = {}
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
        """Round start: which row of the round each watched client is, and the images it uses."""
        rows = {int(c): i for i, c in enumerate(sel.tolist())}
        used = {}
        for c in self.clients:
            if c in rows:
                r = rows[c]
                live = plan.mask[r].bool() & plan.active[r].bool()[:, None]
                images = plan.index[r][live].unique()
                if len(images):  # a Poisson batch may draw nothing: that update holds no image to find
                    i = self.index[c]
                    used[c] = torch.isin(self.s.padded[c, : self.images.shape[1]], images) & self.valid[i]
        self._round = {"rows": rows, "used": used, "raw": None, "upload": {}, "aggregate": None,
                       "params": self.s.params}

    def before(self, updates: torch.Tensor, sel: torch.Tensor) -> None:
        """The raw updates ``[m, d]`` of the round (before the mechanism changes them)."""
        r = self._round
        if r.get("used") and any(a.source == "raw" for a in self.attackers):
            rows = [r["rows"][c] for c in r["used"]]
            r["raw"] = dict(zip(r["used"], updates[rows].detach().clone()))

    def after(self, upload, step: Optional[torch.Tensor]) -> None:
        """What the mechanism uploaded (rows aligned with ``upload.clients``) and the global change."""
        r = self._round
        if not r.get("used"):
            return
        index = {int(c): i for i, c in enumerate(upload.clients.tolist())}
        r["upload"] = {c: upload.values[index[c]].detach().float().clone() for c in r["used"] if c in index}
        r["aggregate"] = None if step is None else step.detach().float().clone()

    def report(self, headline, deltas) -> dict:
        """The round's attack record (``headline`` / ``deltas``: each client's ε so far and δ)."""
        out = {"shape": list(self.s.x_train.shape[1:]), "method": "analytic", "attackers": []}
        if self.unsupported:
            out["unsupported"] = self.unsupported
        r, self._round = self._round, {}
        used = r.get("used") or {}
        r["candidates"] = self._candidates(r.get("params"), used)
        for attacker in self.attackers:
            clients = self._score(_received(attacker.source, r, used), used, attacker, headline, deltas, r)
            out["attackers"].append({"key": attacker.key, "who": attacker.who, "received": attacker.received,
                                     "bounded": attacker.bounded, "clients": clients})
        return out

    def _candidates(self, params, used: dict) -> dict:
        """The candidates' own updates of every watched client that did not train on all its images
        (for those, any guess is among the images used: chance is 1), computed in one batch."""
        s = self.s
        clients = [c for c in used if int(used[c].sum()) < int(s.counts[c])]
        if not clients:
            return {}
        rows = [s.padded[c, : int(s.counts[c])] for c in clients]
        every = candidate_updates(s.model, params, s.x_train[torch.cat(rows)], s.y_train[torch.cat(rows)])
        return dict(zip(clients, every.split([len(r) for r in rows])))

    def _score(self, received: list, used: dict, attacker, headline, deltas, r: dict) -> list[dict]:
        """One row per client of ``received`` (``(client, vector)`` pairs), scored together."""
        if not received:
            return []
        s = self.s
        clients = [c for c, _ in received]
        vectors = torch.stack([v.float() for _, v in received])
        at = torch.as_tensor([self.index[c] for c in clients], device=vectors.device)
        mask = torch.stack([used[c] for c in clients])                      # [k, n_max] images used
        labels = recover_label(vectors, self.label_slice).tolist()
        y = s.y_train[s.padded[clients, : mask.shape[1]]]
        rows = []
        for j, c in enumerate(clients):
            k, n = int(mask[j].sum()), int(s.counts[c])
            everything = c not in r["candidates"]   # trained on all its images: any guess is one of them
            matched = everything or bool(mask[j, match_candidates(vectors[j], r["candidates"][c])])
            eps = float(headline[c]) if attacker.bounded and headline[c] is not None else math.inf
            eps_swap, delta_swap = swap_privacy(s.mechanism.threat_model, eps, float(deltas[c]), k)
            label_set = set(y[j][mask[j]].tolist())
            rows.append({"client": c, "used": k, "n": n, "chance": k / n, "matched": matched,
                         "label_ok": labels[j] in label_set, "label_chance": len(label_set) / s.ctx.num_classes,
                         "epsilon": None if not math.isfinite(eps) else eps,
                         "cap": reconstruction_cap(eps_swap, delta_swap, k / n)})
        if self.layer is None:
            for j, row in enumerate(rows):
                if len(self.kept) < self.keep:
                    self.kept.append({"client": clients[j], "vector": vectors[j], "params": r["params"],
                                      "used": mask[j], "label": labels[j], "row": row})
            return rows
        recon = invert_linear(vectors, self.layer)                          # [k, pixels]
        images = self.images[at]
        dist = torch.cdist(recon[:, None].double(), images.double())[:, 0]  # [k, n_max]
        guess = dist.masked_fill(~self.valid[at], math.inf).argmin(1)
        closest = dist.masked_fill(~mask, math.inf).argmin(1)
        found = mask.gather(1, guess[:, None])[:, 0].tolist()
        truth = images[torch.arange(len(clients)), closest]
        mse = ((recon.double() - truth.double()) ** 2).mean(1).tolist()
        for j, row in enumerate(rows):
            row.update(reidentified=row["used"] == row["n"] or bool(found[j]), psnr=round(psnr_from_mse(mse[j], self.peak), 2))
            if clients[j] in self.show:
                row["image"] = encode_image(recon[j])                     # its own range: noise shows as noise
                row["truth"] = encode_image(truth[j], self.box)
        return rows


def encode_image(values: torch.Tensor, box: Optional[tuple] = None) -> str:
    """``values`` as base64 8-bit grey levels over ``box`` (default: their own min and max).

    >>> decode_image(encode_image(torch.tensor([0.0, 0.5, 1.0]))).tolist()
    [0, 128, 255]
    """
    import base64

    v = values.detach().double().reshape(-1).cpu()
    lo, hi = box if box is not None else (float(v.min()), float(v.max()))
    scaled = ((v - lo) / ((hi - lo) or 1.0)).clamp(0, 1).mul(255).round().to(torch.uint8)
    return base64.b64encode(scaled.numpy().tobytes()).decode("ascii")


def decode_image(text: str, shape: Optional[list] = None):
    """The uint8 numpy array of :func:`encode_image`'s ``text`` (reshaped to ``shape``'s last two axes)."""
    import base64

    import numpy as np

    pixels = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    if shape and len(shape) >= 2 and pixels.size == int(np.prod(shape)):
        channels = int(np.prod(shape[:-2]))
        pixels = pixels.reshape(channels, shape[-2], shape[-1])
        pixels = pixels[0] if channels == 1 else pixels.transpose(1, 2, 0)
    return pixels


def live_watch(setup) -> Optional[AttackWatch]:
    """The dashboard's watch: the first :data:`SHOW` clients, for models the inversion reads (the
    informed adversary's candidate gradients of a conv model would cost each round a training step)."""
    if first_linear(setup.params) is None:
        return None
    return AttackWatch(setup, clients=list(range(SHOW)))


def _received(source: str, r: dict, used: dict) -> list[tuple[int, torch.Tensor]]:
    """``(client, vector)`` pairs the attacker receives this round."""
    if source == "aggregate":
        return [] if r.get("aggregate") is None else [(c, r["aggregate"]) for c in used]
    table = (r.get("raw") or {}) if source == "raw" else r.get("upload") or {}
    return [(c, table[c]) for c in used if c in table]
