"""The attacked frontier shipped with the app (assets/frontier/attacks.json, drawn on the Frontier
page): no point above its cap, attack success grows with ε, and a stored point retrains to the
stored numbers, so the file cannot drift from what the code produces."""
from __future__ import annotations

import math

import pytest

from fedcore.sweep.attack import STORED_COMMAND, attack_columns, attack_summary, stored_rows
from fedcore.sweep.spec import SweepSpec
from pages.components import narrow


@pytest.fixture(scope="module")
def rows():
    found = stored_rows()
    assert found, "assets/frontier/attacks.json is missing or unreadable"
    return found


def test_no_stored_point_is_above_its_cap(rows):
    assert not any(r["attack_above_cap"] for r in rows)
    for s in attack_summary(rows):
        trials = 200 * s["n"]
        assert s["matched"] <= s["cap"] + 3 * math.sqrt(max(s["cap"], 1 / trials) / trials), s


def test_the_attack_finds_more_as_epsilon_grows(rows):
    stats = attack_summary(rows)
    for method in {s["method"] for s in stats}:
        private = sorted((s for s in stats if s["method"] == method and not s["reference"]), key=lambda s: s["epsilon"])
        none = next(s for s in stats if s["method"] == method and s["reference"] == "no_privacy")
        assert private[0]["matched"] <= private[-1]["matched"] + 0.02, method
        assert none["matched"] == 1.0 and none["cap"] == 1.0        # nothing noised: the server finds every image


@pytest.mark.parametrize("method", ["dp_fedavg", "hw_dpfl"])
def test_a_stored_point_retrains_to_the_stored_numbers(rows, method):
    assert "--attack 16" in STORED_COMMAND and "--seeds 2" in STORED_COMMAND
    spec = SweepSpec(preset="demo", methods=(method,), epsilons=(1.0, 10.0), seeds=(0,), match="headline",
                     reference=False, sets=("local.steps=1", "local.batch_size=1"))
    point = spec.points()[1]   # the stored sweep's order: a column's solve starts from the previous one's scale
    stored = next(r for r in rows if r.get("config_hash") == point.config.config_hash())
    again = attack_columns(point.config, 16)
    for key in ("matched", "reidentified", "reidentified_cap", "mia_auc", "mia_tpr_at_1pct_fpr", "worst_tpr_at_1pct_fpr"):
        assert again[key] == pytest.approx(stored[key], rel=1e-6, abs=1e-9), key
    assert (stored["worst_tpr_at_1pct_fpr"] is None) == (method == "dp_fedavg")   # one upload: local only


def test_the_worst_case_record_comes_closer_to_the_cap_than_real_digits(rows):
    """Local methods at ε >= 10: the worst-case record's TPR at 1 % FPR is above LiRA's on real
    digits and under the cap: the cap is nearly reached by the record it is tight for, not by real data."""
    local = [s for s in attack_summary(rows) if s["threat_model"] == "local" and not s["reference"] and s["epsilon"] >= 10]
    assert local
    for s in local:
        assert s["mia_tpr"] <= s["worst_tpr"] <= s["mia_cap"] + 0.01, s


def test_the_frontier_page_draws_the_stored_attack_panels(rows, store_dir):
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.switch_page("pages/frontier.py")
    at.run()
    assert not at.exception
    assert "What ε buys: what an attacker gets" in [h.value for h in at.subheader]
    fig = json.loads([c for c in at.get("plotly_chart") if not c.proto.id.endswith(narrow.STACKED)][1].proto.spec)
    names = {t.get("name") for t in fig["data"]}
    assert {"LDP-FL", "DP-FedAvg", "KDP-FL", "the most ε allows (cap)", "no privacy"} <= names
    assert any(a.get("text") == "<b>Record-level DP</b>" for a in fig["layout"]["annotations"])
    titles = {v.get("title", {}).get("text") for k, v in fig["layout"].items() if k.startswith("yaxis")}
    assert "tells it for the easiest record" in titles      # Plain words, on by default
    assert any("canary audit" in str(t.get("text")) for t in fig["data"])
    assert "Stored with the app, for the demo's methods" in "\n".join(c.value for c in at.caption)
