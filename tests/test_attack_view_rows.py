"""The live attack view's rows are the attack itself, however its round's work is arranged: each watched
client's row (re-identified, PSNR, label, the informed adversary's match, the two images) equals the attack
computed directly on that client's vector with the plain one-client functions, one round at a time (the
dashboard's slow motion: :meth:`fedcore.attacks.watch.AttackWatch.flush` on each round alone)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedcore.attacks import watch
from fedcore.attacks.informed import candidate_updates, match_candidates
from fedcore.attacks.inversion import invert_linear, recover_label
from fedcore.attacks.metrics import decode_image, encode_images, psnr
from fedcore.engine import iter_run
from fedcore.events import RoundEvent
from fedcore.layering import build_config


def _direct(w: watch.AttackWatch, client: int, vector: np.ndarray, used: np.ndarray, params: dict) -> dict:
    """One client's attack, written out: inversion, nearest image (float64), PSNR, label, informed match."""
    s, n = w.s, w.counts[client]
    rows = s.padded[client, :n]
    images = s.x_train[rows].reshape(n, -1).double()
    recon = torch.from_numpy(invert_linear(vector[None], w.layer)).double()
    dist = ((images - recon) ** 2).sum(1)
    used = torch.from_numpy(used[:n].copy())
    closest = int(torch.where(used, dist, torch.inf).argmin())
    label = int(recover_label(vector[None], w.label_slice)[0])
    u = candidate_updates(s.model, params, s.x_train[rows], s.y_train[rows])
    return {"reidentified": bool(used.all() or used[int(dist.argmin())]),
            "psnr": round(psnr(recon, images[closest], w.peak), 2),
            "label_ok": label in s.y_train[rows][used].tolist(),
            "matched": bool(used.all() or used[match_candidates(torch.from_numpy(vector), u)]),
            "truth": encode_images(images[closest][None].float(), w.box)[0]}


@pytest.mark.parametrize("preset,extra", [("attack_digits", []), ("attack_digits", ["model=mlp"]),
                                          ("demo", ["method=dp_fedavg"])])
def test_each_row_of_the_view_is_the_attack_computed_directly(monkeypatch, preset, extra):
    monkeypatch.setattr(watch, "BATCH_ROUNDS", 1)
    expected = []
    real = watch.AttackWatch.flush

    def flush(self):   # the round's vectors and parameters as the attackers received them, before the records
        for r in self._pending:
            for got, attacker in zip(r["received"], self.attackers):
                for j, vector in zip(*got) if got else ():
                    c = r["clients"][j]
                    expected.append((attacker.key, c, _direct(self, c, vector, r["mask"][j], r["params"])))
        return real(self)

    monkeypatch.setattr(watch.AttackWatch, "flush", flush)
    cfg = build_config(preset, None, ["rounds=3", *extra])
    got = [(a.key, row) for e in iter_run(cfg, watch=watch.live_watch) if isinstance(e, RoundEvent)
           for a in e.attack for row in a.clients]
    assert len(got) == len(expected) > 0
    for (key, row), (want_key, client, want) in zip(got, expected):
        assert (key, row["client"]) == (want_key, client)
        assert {k: row[k] for k in ("reidentified", "label_ok", "matched")} == \
            {k: want[k] for k in ("reidentified", "label_ok", "matched")}, (key, client)
        assert row["psnr"] == pytest.approx(want["psnr"], abs=0.02)
        if "truth" in row:
            assert np.abs(decode_image(row["truth"]).astype(int) - decode_image(want["truth"]).astype(int)).max() <= 1
