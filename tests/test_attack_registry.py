"""Issue 56 §1-2: every attack registered in one shape (:data:`fedcore.attacks.ATTACKS`), and a new
attack is one registration: the watch hands it each round's vectors, ``attack --json``, the CLI report
and the attack view show what it found, with no other file changed."""
from __future__ import annotations

import json

import pytest

from fedcore.attacks import ATTACKS
from fedcore.attacks.registry import Attack, reconstruction_game, register
from fedcore.cli import main

FEDSGD = ["--set", "local.steps=1", "--set", "local.batch_size=1", "--set", "rounds=2"]


def test_every_attack_is_registered_with_its_paper_equation_kind_needs_and_game():
    assert {"inversion", "informed", "gradient_matching", "lira", "rmia"} <= set(ATTACKS.names())
    for entry in ATTACKS.entries():
        a = entry.obj
        assert entry.paper and a.equation and a.kind in ("reconstruction", "membership") and a.layer in ("linear", "any")
        assert set(a.needs) <= {"raw", "upload", "aggregate", "model"} and a.game("central").key
    assert ATTACKS.get("lira").game("record").unit == "record" and ATTACKS.get("rmia").score is not None


def _score(watch, seen) -> None:
    for row in seen.out:
        row["dummy_found"] = True


@pytest.fixture
def dummy(monkeypatch):
    ATTACKS.entries()                                        # every module imported: their entries kept
    monkeypatch.setattr(ATTACKS, "_entries", dict(ATTACKS._entries))
    register(Attack("dummy", "reconstruction", "x̂ = 0", ("raw", "upload", "aggregate"), "any", reconstruction_game,
                    _score, "dummy_found"), summary="A test's attack.", paper="none")


def test_a_registered_attack_reaches_the_json_the_report_and_the_view(dummy, capsys):
    assert main(["attack", "--preset", "demo", *FEDSGD, "--no-membership", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reconstruction"]["dummy_found"] == 1.0 and out["reconstruction"]["matched"] is not None
    assert main(["attack", "--preset", "demo", *FEDSGD, "--no-membership"]) == 0
    assert "100.0 % (dummy)" in capsys.readouterr().out

    from streamlit.testing.v1 import AppTest

    def view():
        from fedcore.events import AttackRow
        from pages.components import attack_view

        row = {"client": 0, "used": 1, "n": 10, "chance": 0.1, "cap": 0.5, "epsilon": 1.0, "matched": True,
               "dummy_found": True}
        records = [(AttackRow("anyone", "anyone", "the noised upload", True, (row,)),)]
        attack_view._success(records, records[0][0], "k", "r", plain=False)

    at = AppTest.from_function(view).run()
    assert not at.exception and any("dummy 100 %" in c.value for c in at.caption)
