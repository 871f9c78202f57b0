"""The Frontier page, driven headlessly with AppTest: the link restores it, bad links are
named, a finished frontier reopens from the store, Train runs a sweep in the background."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.sweep import SweepSpec
from fedcore.sweep.job import SweepJobs, spec_key, spec_to_dict, sweep_main

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module", autouse=True)
def close_sweeps(store_dir):
    """``store_dir`` (conftest) for the module; the page's sweep workers are stopped after."""
    yield store_dir
    from pages.components import frontier

    frontier.jobs().close()


def frontier_page(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/frontier.py")
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def texts(at, kind: str) -> str:
    return "\n".join(str(e.value) for e in at.get(kind))


def test_the_link_restores_the_view(store_dir):
    at = frontier_page(methods="pldp_b,kdp_fl", eps="1,3,10", seeds="2")
    assert not at.exception
    assert at.multiselect(key="fr.methods").value == ["pldp_b", "kdp_fl"]
    assert at.select_slider(key="fr.range").value == (1.0, 10.0)
    assert at.number_input(key="fr.seeds").value == 2
    assert "16 runs: 2 method(s) × (3 ε + no privacy) × 2 seed(s)" in texts(at, "caption")
    assert "Train frontier" in at.button(key="fr.train").label
    # changing a widget rewrites the link
    at.number_input(key="fr.seeds").set_value(1).run()
    assert at.query_params["seeds"] in ("1", ["1"])


@pytest.mark.parametrize("query, name", [({"eps": "1,abc"}, "eps"), ({"eps": "0.5,1"}, "eps"),
                                         ({"methods": "nope"}, "methods"), ({"seeds": "99"}, "seeds"),
                                         ({"preset": "<b>x</b>"}, "preset")])
def test_a_bad_link_is_named_not_a_traceback(store_dir, query, name):
    at = frontier_page(**query)
    assert not at.exception
    warning = texts(at, "warning")
    assert "link's settings were not used" in warning and name in warning


def test_a_finished_frontier_reopens_with_chart_table_and_exports(store_dir):
    spec = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(1.0, 3.0), seeds=1)
    folder = Path(store_dir) / "sweeps"
    folder.mkdir(exist_ok=True)
    sweep_main(str(folder), spec_key(spec), spec_to_dict(spec))  # trains 3 runs here, in lockstep
    assert SweepJobs(folder).status(spec_key(spec))["status"] == "finished"
    at = frontier_page(methods="pldp_b", eps="1,3", seeds="1")
    assert not at.exception
    assert at.button(key="fr.train").disabled and at.button(key="fr.train").label == "Trained"
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    import json

    fig = json.loads(charts[0].proto.spec)
    assert fig["layout"]["xaxis"]["type"] == "log"
    names = [t.get("name") for t in fig["data"]]
    assert "pldp_b" in names
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["method", "ε 1", "ε 3", "no privacy"]
    assert frame.iloc[0]["method"] == "pldp_b" and "±" in frame.iloc[0]["ε 1"]
    assert any(b.proto.label == "CSV" for b in at.get("download_button"))
    assert "camera icon" in texts(at, "caption")


def test_train_runs_in_the_background_and_points_appear(store_dir):
    at = frontier_page(methods="pldp_b", eps="10,30", seeds="1")
    assert not at.get("plotly_chart")
    at.button(key="fr.train").click().run()
    assert not at.exception
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        time.sleep(1.0)
        at.run()
        if at.get("plotly_chart") and at.button(key="fr.train").label == "Trained":
            break
    assert at.button(key="fr.train").label == "Trained", texts(at, "error")
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["method", "ε 10", "ε 30", "no privacy"]
