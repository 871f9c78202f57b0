"""Any figure may be empty (issue 38): a figure without traces is drawn saying "No points yet",
through the stacked phone copy too, and the Frontier page of an attack sweep at its first row
(a reference run: no point on the accuracy panels yet) raises nothing."""
from __future__ import annotations

import json
import time
from pathlib import Path

import plotly.tools
from plotly.subplots import make_subplots
from streamlit.testing.v1 import AppTest

from fedcore.runner.store import JobStore
from fedcore.sweep.attack import DEFAULT_SHADOWS, stored_rows
from fedcore.sweep.rows import dumps_frontier
from fedcore.sweep.job import rows_path, sweep_fields, sweep_id
from fedcore.sweep.spec import SweepSpec
from pages.components import narrow, plot

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def empty_faceted():
    """Three columns of two panels each, titled, without one trace (a frontier before its first point)."""
    return make_subplots(rows=2, cols=3, subplot_titles=["a", "b", "c"])


def test_a_figure_without_traces_passes_streamlits_check_and_says_so():
    stacked = narrow.stacked(empty_faceted())
    assert isinstance(stacked, dict) and not stacked.get("data")    # the dict Streamlit rejected
    sent = plotly.tools.return_figure_from_figure_or_data(plot.drawable(stacked), True)
    assert sent["layout"]["annotations"][-1]["text"] == plot.EMPTY_TEXT
    assert len(sent["layout"]["annotations"]) == 4                     # the panels' titles are kept
    full = {"data": [{"type": "scatter", "x": [1], "y": [2]}], "layout": {}}
    assert plot.drawable(full) is full                                 # a figure with traces is sent as it is


def _panels_of_an_empty_figure():
    from plotly.subplots import make_subplots
    from pages.components import narrow

    narrow.panels_chart(make_subplots(rows=2, cols=3, subplot_titles=["a", "b", "c"]), "empty", width="stretch")


def test_panels_chart_draws_an_empty_faceted_figure_both_ways():
    at = AppTest.from_function(_panels_of_an_empty_figure, default_timeout=60).run()
    assert not at.exception
    charts = {c.proto.id.endswith(narrow.STACKED): json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    assert set(charts) == {False, True}                                # as built, and stacked for a phone
    for spec in charts.values():
        assert not spec["data"] and spec["layout"]["annotations"][-1]["text"] == plot.EMPTY_TEXT


def test_the_frontier_page_of_an_attack_sweep_at_its_first_row_raises_nothing(store_dir):
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/frontier.py")
    at.query_params.update(methods="ldp_fl", eps="1", seeds="1")
    at.run()
    at.toggle(key="fr.attack").set_value(True).run()                  # the manager is up; the page is attacked
    assert not at.exception
    spec = SweepSpec(preset="demo", methods=("ldp_fl",), epsilons=(1.0,), seeds=1, match="headline",
                     scenario="iid")
    fields = sweep_fields(spec, attack=DEFAULT_SHADOWS)
    first = next(r for r in stored_rows() if r["method"] == "ldp_fl" and r["reference"] == "no_privacy")
    store = JobStore(store_dir)
    store.create_job(sweep_id(fields["key"]), "sweep", **{**fields, "done": 1})
    store.update_job(sweep_id(fields["key"]), status="running", started=time.time())
    rows_path(store_dir, fields["key"]).write_text(dumps_frontier([first]))
    try:
        at.run()
        assert not at.exception, at.exception
        assert "Stopped" not in " ".join(str(w.value) for w in at.warning)
        charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
        assert charts and any(a.get("text") == plot.EMPTY_TEXT for c in charts for a in c["layout"].get("annotations", []))
    finally:
        store.update_job(sweep_id(fields["key"]), status="stopped")
