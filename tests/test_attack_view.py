"""The Playground's attack view (AppTest): after a run, the attacker its threat model implies is
named, with what it received, and each client's image is shown beside the reconstruction."""
from __future__ import annotations

import pytest

from test_app import app, by_label, texts, wait_until_done

FEDSGD = {"local.steps": "1", "local.batch_size": "1", "rounds": "3"}


@pytest.mark.parametrize("method,who", [
    ("fedavg", "The server sees each client's exact update: nothing is noised."),
    ("ldp_fl", "Anyone, the server included, sees each client's noised upload."),
    ("dp_fedavg", "An outsider sees only the noised average of all uploads"),
    ("kdp_fl", "after every training step was clipped and noised (DP-SGD)"),
])
def test_the_attacker_of_each_threat_model_is_named(store_dir, method, who):
    at = app(preset="demo", method=method, **FEDSGD)
    assert not at.exception
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    shown = texts(at)
    assert "What the attacker sees" in [h.value for h in at.subheader]
    assert who in shown
    assert "each pair is the client's image (left) and what the attacker reconstructs" in shown
    if method == "dp_fedavg":  # central: the trusted server is the other attacker, one click away
        radio = by_label(at.radio, "Attacker")
        radio.set_value("trusted_server").run()
        assert "The trusted server sees each client's exact update" in texts(at)
