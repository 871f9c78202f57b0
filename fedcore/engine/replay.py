"""A run's privacy spend without its training: the round loop's accounting half, replayed.

The ledger of a run records what each round released, and for every mechanism here what
is released (who uploads, at which noise, how many steps) depends on the configuration and
the run's random client sampling, not on the values of the updates. :func:`replay_headline`
therefore replays a run with every client's update equal to zero: the same client
sampling and selection (:func:`~fedcore.engine.rounds.choose_clients`, the run's own
``numpy`` generator), the same mechanism, aggregator and ledger
(:func:`~fedcore.engine.rounds.server_round`), no local training and no evaluation. It
returns the headline ε the real run would end with.

The exception is a mechanism whose *accounting* follows the update values: ULDP-FED's
update recall (a recalled round releases nothing new). There the replay is an estimate,
and the caller checks the real run's figure (:func:`fedcore.equal_privacy`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np
import torch

from .flat import flatten
from .rounds import charge_empty_round, choose_clients, new_ledger, server_round
from .setup import RunSetup, build_components, prepare


def replay_headline(cfg, base: Optional[RunSetup] = None) -> float:
    """Headline ε (inf = no guarantee) that a run of ``cfg`` spends, replayed without training:
    the largest of :func:`replay_headlines`."""
    headline = replay_headlines(cfg, base)
    return float(headline.max()) if len(headline) else math.inf


def replay_headlines(cfg, base: Optional[RunSetup] = None) -> np.ndarray:
    """Each client's headline ε ``[N]`` (inf = no guarantee) that a run of ``cfg`` spends, replayed
    without training.

    ``base``: a :class:`RunSetup` of the same data, split and model (only the privacy
    settings may differ), reused so that a calibration loads and splits the data once.
    """
    s = _with_privacy(base, cfg) if base is not None else prepare(cfg.replace(device="cpu"))
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator(device=s.device).manual_seed(cfg.seed)
    global_flat = flatten(s.params)
    ledger = new_ledger(s)
    for rnd in range(1, cfg.rounds + 1):
        selected, _ = choose_clients(s, rnd, rng)
        if len(selected) == 0:
            charge_empty_round(s, ledger, rnd)
            continue
        sel = torch.as_tensor(np.asarray(selected), dtype=torch.long, device=s.device)
        same = global_flat.expand(len(selected), -1).clone()      # every update is zero
        global_flat = server_round(s, global_flat, ledger, same, sel, rnd, gen).global_flat
    return ledger.headline()


def _with_privacy(base: RunSetup, cfg) -> RunSetup:
    """``base`` with ``cfg``'s privacy settings (fresh mechanism, aggregator and context)."""
    params = {k: v.clone() for k, v in base.params.items()}
    mechanism, aggregator, ctx = build_components(cfg, base.ctx, base.model)
    return dataclasses.replace(base, cfg=cfg, params=params, ctx=ctx, mechanism=mechanism, aggregator=aggregator)
