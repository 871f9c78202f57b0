"""The attack lesson shows both sides of ε at once (issue 54 §3): ``attack_lesson`` trains a model that
learns while the attacker finds the digits of its high-ε clients and not those of its low-ε ones."""
from __future__ import annotations

from fedcore.attacks import watch
from fedcore.attacks.run import per_client
from fedcore.engine import iter_run
from fedcore.equal_privacy import match_headline
from fedcore.events import RoundEvent
from fedcore.layering import build_config


def test_attack_lesson_learns_while_the_attacker_finds_more_the_larger_the_clients_epsilon():
    cfg = build_config("attack_lesson", None, [])
    matched = match_headline(cfg, max(cfg.privacy.epsilons(cfg.num_clients)))
    rounds = [e for e in iter_run(matched.config, watch=watch.live_watch) if isinstance(e, RoundEvent)]
    assert rounds[-1].accuracy >= 0.8
    records = [r.attack for r in rounds if r.attack]
    found = per_client(records, records[-1][0].key)
    shown = [found[c]["matched"] for c in range(6)]   # the six clients the view shows, ε = 1 ... 100,000
    assert shown[0] <= 0.05 < shown[3] < shown[4] < shown[5], shown   # seed 0: 0, 0.01, 0.04, 0.27, 0.78, 1.0
    assert not any(s["above_cap"] for s in found.values())
