"""The Frontier page, driven headlessly with AppTest: the link restores it, bad links are
named, a finished frontier reopens from the store, Train runs a sweep in the background, and
an audited frontier draws each run's audited ε lower bound beside its headline ε."""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.sweep import SweepSpec
from fedcore.runner.store import JobStore
from fedcore.sweep.job import rows_path, spec_key, sweep_fields, sweep_id, sweep_main
from pages.components import narrow

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module", autouse=True)
def close_sweeps(store_dir):
    """``store_dir`` (conftest) for the module; the page's sweep workers are stopped after."""
    yield store_dir
    from pages.components import server

    server.manager().close()


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
    assert at.radio(key="fr.step").value == "half"
    assert at.radio(key="fr.match").value == "headline" and at.selectbox(key="fr.scenario").value == "iid"
    assert "20 runs: 2 method(s) × (3 ε + no privacy + clip only) × 2 seed(s)" in texts(at, "caption")
    assert "Train frontier" in at.button(key="fr.train").label
    # changing a widget rewrites the link
    at.number_input(key="fr.seeds").set_value(1).run()
    assert at.query_params["seeds"] in ("1", ["1"])


@pytest.mark.parametrize("query, name", [({"eps": "1,abc"}, "eps"), ({"eps": "0.5,1"}, "eps"),
                                         ({"eps": "1,3,100"}, "eps"), ({"match": "both"}, "match"),
                                         ({"scenario": "**x**"}, "scenario"),
                                         ({"methods": "nope"}, "methods"), ({"seeds": "99"}, "seeds"),
                                         ({"audit": "yes"}, "audit"),
                                         ({"preset": "<b>x</b>"}, "preset")])
def test_a_bad_link_is_named_not_a_traceback(store_dir, query, name):
    at = frontier_page(**query)
    assert not at.exception
    warning = texts(at, "warning")
    assert "link's settings were not used" in warning and name in warning


def train_here(store_dir, spec: SweepSpec, audit: int = 0) -> dict:
    """Train ``spec`` in this process as the page's sweep job does; returns its final record."""
    store = JobStore(store_dir)
    fields = sweep_fields(spec, audit=audit)
    store.create_job(sweep_id(fields["key"]), "sweep", **fields)
    sweep_main(str(store_dir), sweep_id(fields["key"]))
    return store.get_job_dict(sweep_id(fields["key"]))


def test_a_finished_frontier_reopens_with_chart_table_and_exports(store_dir):
    spec = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(1.0, 3.0), seeds=1, match="target")
    assert train_here(store_dir, spec)["status"] == "finished"  # trains 4 runs here, in lockstep
    at = frontier_page(methods="pldp_b", eps="1,3", seeds="1", match="target")
    assert not at.exception
    assert at.button(key="fr.train").disabled and at.button(key="fr.train").label == "Trained"
    charts = [c for c in at.get("plotly_chart") if not c.proto.id.endswith(narrow.STACKED)]   # less the phone's copies
    assert len(charts) == 3              # accuracy, then (stored, this sweep was not attacked) what an attacker gets
    #                                      and one stored point's membership ROC (issue 40 §2)
    fig = json.loads(charts[0].proto.spec)
    assert fig["layout"]["xaxis"]["type"] == "log"
    names = {t.get("meta"): t.get("name") for t in fig["data"]}
    assert names["pldp_b"] == "PLDP-FL rule B"           # the legend names the method as its paper does
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["method", "threat model", "configured ε 1", "configured ε 3", "clip only",
                                   "no privacy"]
    assert frame.iloc[0]["method"] == "PLDP-FL rule B (pldp_b)" and frame.iloc[0]["threat model"] == "local"
    # one seed: the accuracy and the headline ε spent (no ± std of one number, no audit)
    assert re.fullmatch(r"0\.\d{3} \(spent [0-9.,]+\)", frame.iloc[0]["configured ε 1"]), frame.iloc[0]
    assert "= clip only (its own clipping" in texts(at, "caption")
    assert any(b.proto.label == "CSV" for b in at.get("download_button"))
    assert "camera icon" in texts(at, "caption")


def test_train_runs_in_the_background_and_points_appear(store_dir):
    at = frontier_page(methods="pldp_b", eps="10,30", seeds="1")     # equal privacy (the default)
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
    assert list(frame.columns) == ["method", "threat model", "headline ε 10", "headline ε 30", "clip only",
                                   "no privacy"]
    spent = [float(frame.iloc[0][c].rsplit("spent ", 1)[1].rstrip(")")) for c in ("headline ε 10", "headline ε 30")]
    assert 0.99 * 10 <= spent[0] <= 10 and 0.99 * 30 <= spent[1] <= 30


def test_the_link_restores_the_audit_option(store_dir):
    at = frontier_page(methods="pldp_b", eps="1,3", seeds="1")
    assert at.toggle(key="fr.audit").value is False and "audit" not in at.query_params
    assert "audited" not in texts(at, "caption")
    at = frontier_page(methods="pldp_b", eps="1,3", seeds="1", audit="1")
    assert not at.exception
    assert at.toggle(key="fr.audit").value is True
    assert "each run is then audited" in texts(at, "caption")
    # switching it off drops it from the link (an old link, without it, reads off)
    at.toggle(key="fr.audit").set_value(False).run()
    assert "audit" not in at.query_params and "each run is then audited" not in texts(at, "caption")
    at.toggle(key="fr.audit").set_value(True).run()
    assert at.query_params["audit"] in ("1", ["1"])


def test_an_audited_frontier_draws_the_lower_bound_beside_each_point(store_dir):
    from fedcore.sweep.audit import DEFAULT_TRIALS
    from fedcore.sweep.rows import AUDIT_KEYS

    spec = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(0.3, 1.0), seeds=1, match="target", reference=True)
    key = train_here(store_dir, spec, DEFAULT_TRIALS)["key"]  # what the page's worker runs
    rows = json.loads(rows_path(store_dir, key).read_text())["rows"]
    assert len(rows) == 4 and all(set(AUDIT_KEYS) <= set(r) for r in rows)
    assert all(r["epsilon_audited"] is not None for r in rows if r["reference"] != "clip_only")
    private = sorted((r for r in rows if r["epsilon"] is not None), key=lambda r: r["epsilon"])

    at = frontier_page(methods="pldp_b", eps="0.3,1", seeds="1", audit="1", match="target")
    assert not at.exception
    assert at.button(key="fr.train").label == "Trained"
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    traces = {t.get("name"): t for t in fig["data"]}
    # one hollow marker per run at (audited eps, accuracy) ...
    marks = traces["pldp_b audited"]
    assert marks["marker"]["symbol"] == "diamond-open"
    assert sorted(zip(marks["x"], marks["y"])) == sorted((r["epsilon_audited"], r["accuracy"]) for r in private)
    # ... joined by a horizontal segment to the run's own point (headline eps, accuracy)
    seg = traces["pldp_b audit"]
    pairs = [(seg["x"][i], seg["x"][i + 1], seg["y"][i], seg["y"][i + 1]) for i in range(0, len(seg["x"]), 3)]
    assert sorted(pairs) == sorted((r["epsilon_audited"], r["epsilon_accountant"], r["accuracy"], r["accuracy"])
                                   for r in private)
    assert any("audited ε ≥" in (name or "") for name in traces)  # the legend says what the marks are
    # clicking the method in the legend hides its audit marks with its curve: one legend group
    assert marks["legendgroup"] == seg["legendgroup"] == traces["PLDP-FL rule B"]["legendgroup"] == "pldp_b"
    lo, hi = fig["layout"]["xaxis"]["range"]
    assert all(lo < math.log10(x) < hi for x in marks["x"] + [r["epsilon_accountant"] for r in private])
    # the caption says what a lower bound means and links to the Mechanisms page's section on it
    caption = texts(at, "caption")
    assert "lower bound" in caption and "upper bound" in caption
    assert "(mechanisms?mechanism=two_point#audited-privacy)" in caption
    # pldp_b's paper claim (eps / 3 per release) is refuted by the audit of one report
    assert "refutes the paper's claimed ε" in texts(at, "warning")
    frame = at.dataframe[0].value
    # the table: the accountant's upper bound and the audited lower bound of each cell
    one = next(r for r in private if r["epsilon"] == 1.0)
    assert frame.iloc[0]["configured ε 1"] == (f"{one['accuracy']:.3f} (ε ≤ {one['epsilon_accountant']:.3g}, "
                                               f"≥ {one['epsilon_audited']:.3g})")
    assert re.fullmatch(r"0\.\d{3} \(ε ≥ [0-9.e+-]+\)", frame.iloc[0]["no privacy"]), frame.iloc[0]["no privacy"]
    # the unaudited frontier of the same settings is another file: switching the option off shows it
    at.toggle(key="fr.audit").set_value(False).run()
    assert at.button(key="fr.train").label == "Train frontier" and not at.get("plotly_chart")


def test_another_visitors_sweep_is_read_only_and_its_owner_can_stop_it(store_dir, monkeypatch):
    """B opens A's frontier link while it trains: progress and who started it, no Stop (issue 22)."""
    import subprocess

    from fedcore.runner.owners import Viewer
    from pages.components import host

    spec = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(0.3, 1.0), seeds=1, match="target")
    worker = subprocess.Popen(["sleep", "60"])  # the sweep's worker, in another dashboard's hands
    store, job_id = JobStore(store_dir), sweep_id(spec_key(spec))
    store.create_job(job_id, "sweep", owner="session:a", **{**sweep_fields(spec), "done": 1})
    store.update_job(job_id, status="running", pid=worker.pid)
    query = dict(methods="pldp_b", eps="0.3,1", seeds="1", match="target")
    at = frontier_page(**query)
    assert not at.exception
    assert not [b for b in at.button if b.key == "fr.stop"]
    assert "Another visitor's sweep: you can watch it; only they can stop it." in texts(at, "caption")
    assert "session:a" not in texts(at, "caption")
    monkeypatch.setattr(host, "viewer", lambda: Viewer("session:a"))
    at = frontier_page(**query)
    assert [b for b in at.button if b.key == "fr.stop"] and "Another visitor" not in texts(at, "caption")
    worker.kill()
    worker.wait()
    store.delete(job_id)


def test_three_panels_side_by_side_show_their_shared_x_title_once_and_the_phone_copy_on_every_panel():
    """At 1,024 px with the sidebar open each of three panels is about 170 px wide: three copies of a long
    x title ran into each other. The wide figure keeps the middle panel's; the stacked copy keeps all."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3)
    for col in (1, 2, 3):
        fig.add_scatter(x=[1, 2], y=[0.5, 0.9], row=1, col=col)
        fig.update_xaxes(title_text="ε spent (log; smaller = more private)", row=1, col=col)
    wide = narrow.one_x_title(fig)
    shown = {name: wide["layout"][name]["title"]["text"] for name in ("xaxis", "xaxis2", "xaxis3")}
    assert shown == {"xaxis": "", "xaxis2": "ε spent (log; smaller = more private)", "xaxis3": ""}
    assert all(fig.layout[name].title.text for name in ("xaxis", "xaxis2", "xaxis3"))   # the figure itself untouched
    phone = narrow.stacked(fig)
    assert all(phone["layout"][name]["title"]["text"] for name in ("xaxis", "xaxis2", "xaxis3"))
    fig.update_xaxes(title_text="round", row=1, col=3)          # titles that differ stay as they are
    assert narrow.one_x_title(fig)["layout"]["xaxis3"]["title"]["text"] == "round"
    assert narrow.one_x_title(fig)["layout"]["xaxis"]["title"]["text"]
