"""Membership on the projector (issue 54 §2, AppTest): with ``present=1``, ``attack_membership`` starts its
membership attack when Run's run finishes and draws the ROC and its two numbers beside the accuracy chart;
any other finished run offers it with one large button."""
from __future__ import annotations

from test_app import app, by_label, texts, wait_on, wait_until_done
from test_roc_playground import roc_chart


def test_presentation_draws_the_membership_roc_after_run_on_attack_membership(store_dir):
    at = app(preset="attack_membership", present="1")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    at = wait_on(at, lambda a: roc_chart(a) is not None, 300, lambda a: texts(a)[-600:])
    assert not at.exception
    assert "Members caught while 1 in 1,000 others are wrongly accused:" in texts(at)
    assert "attacker 1" in texts(at) and "the most ε allows" in texts(at)


def test_presentation_offers_membership_on_another_finished_run_with_one_button(store_dir):
    at = app(preset="demo", present="1", rounds="2")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    assert not at.exception and roc_chart(at) is None
    assert by_label(at.button, "Who was in the training data? Attack membership")
