"""Issue 40 §2 on the Frontier (AppTest): under the attack panels, one attacked point's membership ROC on
log-log axes inside the region its ε allows, LiRA and RMIA, TPR at 0.1 % and 1 % FPR in a table; with Plain
words on (the default) no term of art."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.sweep.attack import membership_of, stored_rows
from pages.components import narrow
from pages.components.attack_frontier import roc_points
from test_attack_view import TERMS_OF_ART, walk

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_the_stored_attacked_frontier_keeps_every_points_roc():
    rows = stored_rows()
    attacked = [r for r in rows if r.get("reidentified_cap") is not None]
    assert attacked and all(membership_of(r) for r in attacked)
    assert len(roc_points(rows)) == len(attacked)


@pytest.fixture(scope="module")
def frontier(store_dir):
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/frontier.py")
    return at.run()


def roc_chart(at):
    return next((c for c in at.get("plotly_chart") if not c.proto.id.endswith(narrow.STACKED)
                 and any(t.get("meta") == "rmia" for t in json.loads(c.proto.spec)["data"])), None)


def roc_texts(at) -> list[str]:
    """The texts of the point's ROC section: from its title up to the CSV download."""
    out, inside = [], False
    for e in walk(at.main):
        value = getattr(e, "value", None)
        if isinstance(value, str) and value.startswith(("**Who was in the data", "**Membership ROC of one point")):
            inside = True
        elif getattr(e, "type", "") == "download_button":
            break
        if inside and isinstance(value, str):
            out.append(value)
    return out


def test_with_plain_words_the_frontiers_roc_uses_no_term_of_art(frontier):
    at = frontier
    assert not at.exception
    chart = roc_chart(at)
    assert chart is not None
    section = "\n".join(roc_texts(at))
    table = at.table[-1].value
    names = "\n".join(str(t.get("name")) for t in json.loads(chart.proto.spec)["data"])
    words = "\n".join([section, names, *map(str, table.columns), *map(str, table.index)])
    for term in TERMS_OF_ART:
        assert term not in words, term
    assert "Who was in the data, one point at a time" in section


def test_the_frontiers_roc_is_log_log_inside_the_shaded_region_with_both_attacks(frontier):
    at = frontier
    at.session_state["pg.student"] = False        # Plain words off (the Playground's switch)
    at.run()
    assert not at.exception
    spec = json.loads(roc_chart(at).proto.spec)
    assert spec["layout"]["xaxis"]["type"] == "log" and spec["layout"]["yaxis"]["type"] == "log"
    assert any(t.get("fill") == "toself" for t in spec["data"])
    assert {t.get("meta") for t in spec["data"] if t.get("mode") == "lines" and t.get("meta")} == {"membership", "rmia"}
    picker = next(s for s in at.selectbox if s.label in ("Point", "Which run"))
    assert len(picker.options) == len(roc_points(stored_rows()))
