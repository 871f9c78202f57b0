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
from .metrics import nearest, psnr

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
                images = set(plan.index[r][live].unique().tolist())
                if images:  # a Poisson batch may draw nothing: that update holds no image to find
                    used[c] = images
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
            vectors = _received(attacker.source, r, used)
            clients = [self._score(c, v, used[c], attacker, headline, deltas, r) for c, v in vectors]
            out["attackers"].append({"key": attacker.key, "who": attacker.who, "received": attacker.received,
                                     "bounded": attacker.bounded, "clients": clients})
        return out

    def _candidates(self, params, used: dict) -> dict:
        """Every watched client's candidates' own updates, computed in one batch."""
        if not used:
            return {}
        s = self.s
        rows = [s.padded[c, : int(s.counts[c])] for c in used]
        every = candidate_updates(s.model, params, s.x_train[torch.cat(rows)], s.y_train[torch.cat(rows)])
        return dict(zip(used, every.split([len(r) for r in rows])))

    def _score(self, c: int, vector: torch.Tensor, used: set, attacker, headline, deltas, r: dict) -> dict:
        s = self.s
        label = int(recover_label(vector[None], self.label_slice)[0])
        rows = s.padded[c, : int(s.counts[c])]
        matched = int(rows[match_candidates(vector, r["candidates"][c])])
        used_rows = torch.as_tensor(sorted(used), device=rows.device)
        eps = float(headline[c]) if attacker.bounded and headline[c] is not None else math.inf
        eps_swap, delta_swap = swap_privacy(s.mechanism.threat_model, eps, float(deltas[c]), len(used))
        chance = len(used) / len(rows)
        labels = set(s.y_train[used_rows].tolist())
        row = {"client": c, "used": len(used), "n": len(rows), "chance": chance, "matched": matched in used,
               "label_ok": label in labels, "label_chance": len(labels) / s.ctx.num_classes,
               "epsilon": None if not math.isfinite(eps) else eps,
               "cap": reconstruction_cap(eps_swap, delta_swap, chance)}
        if self.layer is None:
            if len(self.kept) < self.keep:
                self.kept.append({"client": c, "vector": vector, "params": r["params"], "used": used,
                                  "label": label, "row": row})
            return row
        recon = invert_linear(vector[None].float(), self.layer)[0]
        guess = int(rows[nearest(recon[None], self.x[rows])[0]])
        closest = int(used_rows[nearest(recon[None], self.x[used_rows])[0]])
        row.update(reidentified=guess in used, psnr=round(psnr(recon, self.x[closest], self.peak), 2))
        if c in self.show:
            row["image"] = encode_image(recon)                      # its own range: noise shows as noise
            row["truth"] = encode_image(self.x[closest], self.box)
        return row


def encode_image(values: torch.Tensor, box: Optional[tuple] = None) -> str:
    """``values`` as base64 8-bit grey levels over ``box`` (default: their own min and max).

    >>> decode_image(encode_image(torch.tensor([0.0, 0.5, 1.0]))).tolist()
    [0, 128, 255]
    """
    import base64

    v = values.detach().double().reshape(-1).cpu()
    lo, hi = box if box is not None else (float(v.min()), float(v.max()))
    scaled = ((v - lo) / ((hi - lo) or 1.0)).clamp(0, 1).mul(255).round().to(torch.uint8)
    return base64.b64encode(bytes(scaled.tolist())).decode("ascii")


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
