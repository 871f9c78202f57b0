"""One configuration attacked both ways: reconstruction from its updates, membership on its model.

:func:`attack_run` trains ``cfg`` once with an :class:`~.watch.AttackWatch` on every client
(each round, each attacker of the threat model inverts what it received) and runs the LiRA
experiment on the same recipe, scored by LiRA and by RMIA (:func:`.membership.attacks`). The result is the JSON contract of
``python -m fedcore attack --json``::

    {"threat_model", "attacker": {"key", "who", "received", "bounded"}, "epsilon_headline", "accountant",
     "accuracy", "reconstruction": {"psnr_db", "reidentified", "matched", "labels_recovered",
     "chance", "dp_cap", "cap_game", "cap_game_words", "cap_epsilon", "trials", "above_cap", ...},
     "attackers": [...],
     "membership": {"auc", "tpr_at_1pct_fpr", "dp_cap_tpr_at_1pct_fpr", "roc", "cap_curve", ...} | None,
     "rmia": {the same keys} | None,
     "worst_case": {the same keys} | None, "worst_case_note", "seconds"}

``reidentified`` is the analytic inversion's (gradient matching's for a model without a linear
first layer, on ``matching_images`` updates), ``matched`` the informed adversary's; both are
rates over (round, client) trials, beside ``chance`` and ``dp_cap`` (their means over the
trials: the mean of per-trial caps bounds the mean success). Each cap is proven for the game the
view plays (:func:`.registry.reconstruction_game`: which of the client's own images did this
round's update use?): ``cap_game`` names it, ``cap_epsilon`` is its ε (the trials' mean), which is
one round's, without amplification, for a replacement: not the run's headline. ``above_cap``: a rate more than 3
standard errors above its cap, which is a bug of the mechanism or of its accounting; so is a
membership point (LiRA's, RMIA's or the worst case's, :mod:`.worst_case`) whose TPR's lower bound lies
above the cap at its FPR's upper bound.
"""
from __future__ import annotations

import time
from typing import Optional

import torch

from ..events import summarize
from .metrics import nearest, psnr, standard_error
from .registry import of_kind

SIGMAS = 3.0
"""A rate counts as above its cap when it exceeds it by more than this many standard errors."""


def attack_run(cfg, shadows: Optional[int] = 64, matching_images: int = 4, budget_s: float = 2.0) -> dict:
    """Attack ``cfg`` (see the module doc); ``shadows`` None skips membership inference (LiRA and
    the worst case)."""
    from ..engine import iter_run
    from .membership import attacks
    from .watch import AttackWatch
    from .worst_case import not_applicable, worst_case

    t0 = time.perf_counter()
    watches: list = []

    def watch(setup):
        watches.append(AttackWatch(setup, keep=matching_images))
        return watches[-1]

    state = summarize(iter_run(cfg, watch=watch, profile=bool(shadows)))   # the membership caps need the profile
    last, end, w = state.last_round, state.end, watches[0]
    trials: dict[str, list] = {}
    for row in (a for r in state.rounds for a in r.attack):
        trials.setdefault(row.key, []).extend(row.clients)
    if w.kept:
        _match_kept(w, trials, budget_s)
    headline, profile = last and last.epsilon_headline_run, [tuple(p) for p in (end and end.epsilon_profile) or []]
    summaries = [{**_describe(a), **_summary(trials.get(a.key, [])), **_run_cap(w, a)} for a in w.attackers]
    out = {"threat_model": state.threat_model or "none", "caveat": state.caveat, "attacker": _describe(w.attackers[0]),
           "epsilon_headline": headline, "accountant": last.accountant if last else "",
           "epsilon_headline_per_client": last.epsilon_headline if last else [],
           "accuracy": end and end.final_accuracy, "reconstruction": summaries[0],
           "attackers": summaries, "membership": None, "rmia": None, "worst_case": None, "worst_case_note": not_applicable(cfg)}
    if shadows:
        scored = attacks(cfg, shadows)
        out["membership"], out["rmia"] = scored["lira"].to_dict(), scored["rmia"].to_dict()
        worst = worst_case(cfg, headline, profile=profile)
        out["worst_case"] = worst and worst.to_dict()
    out["above_cap"] = bool(summaries[0]["above_cap"] or any((out[k] or {}).get("above_cap")
                                                             for k in ("membership", "rmia", "worst_case")))
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _run_cap(w, attacker) -> dict:
    """``run_cap_epsilon``: what the whole run proves for the view's question asked of every release
    (:func:`.registry.run_game`), beside the one-round cap the view is checked against; None = ∞."""
    from .registry import run_game

    if w.ledger is None or not attacker.bounded:
        return {"run_cap_epsilon": None}
    proof = w.ledger.run_bound(run_game(w.ledger.threat_model))
    return {"run_cap_epsilon": proof.epsilon if proof.finite else None, "run_cap_basis": proof.basis}


def _describe(attacker) -> dict:
    return {"key": attacker.key, "who": attacker.who, "received": attacker.received, "bounded": attacker.bounded}


def _rate(rows: list, key: str) -> tuple[Optional[float], Optional[float]]:
    values = [bool(r[key]) for r in rows if key in r]
    if not values:
        return None, None
    return sum(values) / len(values), standard_error(sum(values), len(values))


def _summary(rows: list) -> dict:
    """Rates, chance, cap and the verdict of one attacker's trials: each registered reconstruction
    attack's success (its ``result``, e.g. ``reidentified``, ``matched``) beside them."""
    results = [a.result for a in of_kind("reconstruction") if a.result]
    if not rows:
        return {"trials": 0, **dict.fromkeys(results), "dp_cap": None, "chance": None, "above_cap": False}
    mean = lambda key: sum(float(r[key]) for r in rows if key in r) / max(1, sum(key in r for r in rows))  # noqa: E731
    rates = {key: _rate(rows, key) for key in results}
    cap = mean("cap")
    psnrs = [r["psnr"] for r in rows if "psnr" in r]
    games = sorted({r["game"].partition(" x")[0] for r in rows if r.get("game")})
    groups = sorted({int(r["game"].partition(" x")[2] or 1) for r in rows if r.get("game")})
    epsilons = [r.get("epsilon") for r in rows]
    return {"cap_game": ", ".join(games), "cap_game_words": _game_words(games), "cap_groups": groups,
            "cap_epsilon": None if None in epsilons else sum(epsilons) / len(epsilons), "trials": len(rows),
            **{k: rate for k, (rate, _) in rates.items()}, **{f"{k}_se": se for k, (_, se) in rates.items()},
            "labels_recovered": _rate(rows, "label_ok")[0], "label_chance": mean("label_chance"),
            "psnr_db": sum(psnrs) / len(psnrs) if psnrs else None, "chance": mean("chance"), "dp_cap": cap,
            "images_used": mean("used"),
            "above_cap": any(rate is not None and rate - SIGMAS * se > cap for rate, se in rates.values())}


def _game_words(keys: list) -> str:
    """The first game of ``keys`` (``Game.key``) in words ("" for none)."""
    from ..accounting.games import Game

    if not keys:
        return ""
    return Game.from_key(keys[0]).words()


def per_client(attack_records, key: str) -> dict[int, dict]:
    """Attacker ``key``'s success so far, per client, from rounds' ``RoundEvent.attack`` rows:
    ``{client: {"trials", "matched", "reidentified", "chance", "cap", "epsilon"}}`` (rates over the
    client's rounds; ``cap`` and ``chance`` their means, ``epsilon`` the latest)."""
    rows: dict[int, list] = {}
    for row in (a for record in attack_records for a in record if a.key == key):
        for client in row.clients:
            rows.setdefault(client["client"], []).append(client)
    out = {}
    for client, trials in sorted(rows.items()):
        s = _summary(trials)
        out[client] = {**{k: s[k] for k in ("trials", *(a.result for a in of_kind("reconstruction") if a.result))},
                       "chance": s["chance"], "cap": s["dp_cap"], "epsilon": trials[-1]["epsilon"],
                       "above_cap": s["above_cap"]}
    return out


def _match_kept(w, trials: dict, budget_s: float) -> None:
    """Gradient matching on the updates a conv model's watch kept: their ``reidentified`` and PSNR."""
    from .matching import match_gradient

    s = w.s
    box = (float(s.x_train.min()), float(s.x_train.max()))
    for item in w.kept:
        m = match_gradient(s.model, item["params"], item["vector"], item["label"], tuple(s.x_train.shape[1:]), box,
                           budget_s=budget_s)
        image = m.image.reshape(1, -1)
        c, mask = item["client"], item["used"]
        rows = s.padded[c, : int(s.counts[c])]
        used = s.padded[c, : len(mask)][mask]
        guess = int(rows[nearest(image, w.x[rows])[0]])
        closest = int(used[nearest(image, w.x[used])[0]])
        item["row"].update(reidentified=guess in set(used.tolist()), psnr=round(psnr(image[0], w.x[closest], w.peak), 2),
                           matching_seconds=round(m.seconds, 2), matching_iterations=m.iterations)

