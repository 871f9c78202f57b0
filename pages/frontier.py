"""Frontier: accuracy against the privacy actually spent, for several methods at once.

Pick a scenario (where each paper's idea matters), methods, a range of ε and seeds; by
default every method is calibrated to spend exactly the column's headline ε (equal privacy,
``sweep --match headline``). The sweep is a job of the server's one job manager
(``fedcore.sweep.job``: queued beside runs, owned by who pressed Train; runs x clients in one
vmap) and its points appear as they finish, one panel per threat model. The link (``?preset=&scenario=&match=&methods=&eps=&seeds=&audit=``) restores the
view, and a finished frontier reopens at once. "Audit each point" adds every run's audited ε
lower bound (``fedcore.sweep.audit``, the same as ``sweep --audit``) beside the accountant's.
"""
import pandas as pd
import streamlit as st

from fedcore.catalog import METHODS
from fedcore.errors import FedcoreError
from fedcore.catalog import PRESETS, method_title
from fedcore.sweep.papers import paper_points
from fedcore.sweep.attack import DEFAULT_SHADOWS
from fedcore.sweep.audit import DEFAULT_TRIALS, findings
from fedcore.sweep.rows import rows_csv, summary_lines, trade_off
from fedcore.sweep.scenarios import SCENARIOS
from fedcore.sweep.shipped import shipped
from fedcore.sweep.spec import SweepSpec
from pages.components import attack_frontier as af
from pages.components.form import keyed
from pages.components import frontier as fr
from pages.components import narrow
from pages.components import pacing
from pages.components import routing
from pages.components.plain import plain
from pages.components.press import pressed, start_job

routing.through_router()
RANGE_PX, SEEDS_PX = 300, 90   # widths of the ε range slider and the seeds box in the settings row (it wraps)

st.title("Privacy–accuracy frontier")
st.caption("Each point is a training run; the x axis is the **headline ε** it spent — the tightest proven "
           "bound for its threat model, the largest over clients. Each threat model has its own panel: "
           "an ε under one is not comparable with an ε under another.")

if "fr.init" not in st.session_state:
    st.session_state["fr.init"] = True
    try:
        linked = fr.from_link(st.query_params)
    except FedcoreError as exc:
        st.session_state["fr.link_error"] = str(exc)
        linked = {}
    st.session_state["fr.preset"] = linked.get("preset", "demo")
    st.session_state["fr.scenario"] = linked.get("scenario", "iid")
    st.session_state["fr.match"] = linked.get("match", "headline")
    st.session_state["fr.methods"] = linked.get("methods", list(SCENARIOS[st.session_state["fr.scenario"]].methods))
    st.session_state["fr.range0"] = linked.get("range", fr.DEFAULT_RANGE)  # the slider's value= (a range)
    st.session_state["fr.step"] = linked.get("step", "decade")
    st.session_state["fr.seeds"] = linked.get("seeds", 3)
    st.session_state["fr.audit"] = linked.get("audit", False)
if st.session_state.get("fr.link_error"):
    st.warning(f"The link's settings were not used: {plain(st.session_state['fr.link_error'])}",
               icon=":material/link_off:")


def _scenario_methods():
    st.session_state["fr.methods"] = list(SCENARIOS[st.session_state["fr.scenario"]].methods)


s1, s2 = st.columns([1, 1])
scenario = keyed(s1.selectbox, "Scenario", list(SCENARIOS), key="fr.scenario", on_change=_scenario_methods,
                        format_func=lambda k: SCENARIOS[k].title,
                        help="Where each paper's idea makes a difference; picking one also picks its methods.")
s1.caption(f"Exercises {SCENARIOS[scenario].exercises}.")
match = keyed(s2.radio, "Compare at", list(fr.MATCH_LABELS), key="fr.match", format_func=fr.MATCH_LABELS.get,
                 help="Equal privacy solves each method's own budget (ε per weight, per round, a noise "
                      "multiplier) so that the proven headline ε it spends equals the column's ε: a fair "
                      "comparison within one threat model. 'Each paper's own ε' writes the column's ε into "
                      "every method's setting, where it means different things.")
c1, c2 = st.columns([1, 3])
preset = keyed(c1.selectbox, "Experiment (preset)", PRESETS.names(), key="fr.preset",
                      help="Every method starts from this preset, with its demo-scale settings.")
methods = keyed(c2.multiselect, "Methods", [m for m in METHODS.names()], key="fr.methods",
                         help="Each method also gets two references with its own settings: no privacy (dashed) and clip "
                              "only (dotted).")
# one row that wraps: every label whole at 1,280 and 1,024 px and in an 800 px window with the sidebar open
settings = st.container(horizontal=True, vertical_alignment="bottom")
picked = settings.select_slider(
    "ε range (columns)", options=list(fr.EPS_GRID), value=st.session_state["fr.range0"], key="fr.range",
    format_func=fr._fmt, width=RANGE_PX,
    help="ε (epsilon) bounds how much one client's (or one record's) data can change what others see: "
         "smaller ε = more noise = more privacy. Under equal privacy each run spends exactly its column's ε; "
         "under each paper's own ε the chart places each run at the ε it really spent. See the Mechanisms page.")
step = keyed(settings.radio, "Columns", list(fr.STEPS), key="fr.step", format_func=fr.STEPS.get, horizontal=True,
             width="content")
seeds = keyed(settings.number_input, "Seeds", min_value=1, max_value=fr.MAX_SEEDS, step=1, key="fr.seeds", width=SEEDS_PX)
st.page_link("pages/mechanisms.py", label="What ε means: the Mechanisms page", icon=":material/tune:")
toggles = st.container(horizontal=True, vertical_alignment="center")   # wraps: labels whole
audit = keyed(
    toggles.toggle, "Audit each point", key="fr.audit",
    help="Attack every run to measure an empirical ε lower bound beside the accountant's upper bound, as "
         "`python -m fedcore sweep --audit` does: one client's report for local DP (a few seconds per point), "
         "canary clients or records in one extra training run for central and record-level DP (about 10–30 s "
         f"per point on this machine). {DEFAULT_TRIALS:,} draws per input. Off by default because it costs time.")
attack = keyed(
    toggles.toggle, "Attack each point", key="fr.attack",
    help="What ε buys: after training, attack every point as `python -m fedcore sweep --attack` does: "
         "re-identify a client's image from its updates and infer membership from the model "
         f"({DEFAULT_SHADOWS} shadow runs per point), each beside the cap the point's ε proves. A few seconds per "
         "point on the demo.")
low, high = picked if isinstance(picked, (tuple, list)) else (picked, picked)
eps = fr.epsilons_in(low, high, step) or (low,)
st.query_params.update(fr.to_link(preset, methods, eps, int(seeds), audit, match, scenario))
if not audit and "audit" in st.query_params:
    del st.query_params["audit"]
trials = DEFAULT_TRIALS if audit else 0
shadows = DEFAULT_SHADOWS if attack else 0

spec = error = None
if not methods:
    st.info("Pick at least one method.")
    st.stop()
try:
    spec = SweepSpec(preset=preset, methods=tuple(methods), epsilons=eps, seeds=int(seeds), match=match,
                     scenario=scenario)
    total = spec.count()
except FedcoreError as exc:
    st.error(f"These settings cannot run: {plain(exc)}", icon=":material/error:")
    st.stop()

from fedcore.distributed.jobs import configured_address, ray_installed  # noqa: E402
from fedcore.runner import ACTIVE, TERMINAL, JobRecord  # noqa: E402
from fedcore.sweep.job import spec_key, start_sweep, sweep_rows, sweep_status  # noqa: E402
from pages.components import host  # noqa: E402

manager = host.manager()
ray = ray_installed() and keyed(
    toggles.toggle, "Train on Ray", key="fr.ray", disabled=audit or attack,
    help=f"Send the sweep to the Ray cluster at '{configured_address()}' (host setting FEDCORE_RAY_ADDRESS; "
         "'local' starts Ray on this server). Stop cancels it. Not with auditing: the cluster's tasks do not "
         "audit or attack.") and not audit and not attack
key = spec_key(spec, trials, shadows)
stored = shipped(key)   # the default view is shipped, trained once (fedcore.sweep.shipped)


def status_and_rows() -> tuple[JobRecord, list]:
    """The sweep's job record and rows; the shipped frontier where this server has not trained it
    (a finished record of its own, marked ``shipped``)."""
    now, rows = sweep_status(manager, key), sweep_rows(manager, key)
    if now.status == "none" and stored:
        return JobRecord.from_dict({"id": now.id, "kind": "sweep", "status": "finished", "done": len(stored["rows"]),
                                    "total": len(stored["rows"]), "shipped": True}), stored["rows"]
    return now, rows


state = status_and_rows()[0]
shown_shipped = bool(state.get("shipped"))   # stored with the app: a class can still watch it train
train = pressed(settings, "Train it live" if shown_shipped else "Train frontier" if state.status != "finished"
                else "Trained", disabled=state.status in ACTIVE or (state.status == "finished" and not shown_shipped),
                type="primary", icon=":material/play_arrow:", key="fr.train", width="content",
                help="This frontier is stored with the app; train it again on this server and watch its points "
                     "appear." if shown_shipped else None)
st.caption(f"{total} runs: {len(methods)} method(s) × ({len(eps)} ε + no privacy + clip only) × {int(seeds)} "
           "seed(s), trained together in batches in the background"
           + ("; each method's budget is first solved for, so it spends exactly the column's ε"
              if match == "headline" else "")
           + ("; each run is then audited, one after another (slower)" if audit else "")
           + (f"; each run is then attacked: {fr.attack_estimate(total)}" if attack else "") + ".")
if train:
    start_job(lambda: start_sweep(manager, spec, owner=host.viewer().owner, audit=trials,
                                  ray=configured_address() if ray else None, attack=shadows))

live = state.status in ACTIVE


def view():
    now, rows = status_and_rows()
    if now.status in ACTIVE:
        host.keep_alive(now)  # its owner's page keeps it going; closed, it stops after the grace period
        fr.job_line(key, now, len(rows), total, bool(trials))
    elif now.status == "failed":
        st.error(f"The sweep failed: {plain(now.error or 'unknown error')}", icon=":material/error:")
    elif now.status == "stopped":
        st.warning(f"Stopped after {len(rows)} of {now.total or total} runs.", icon=":material/stop_circle:")
    if (now.status in TERMINAL) != (state.status in TERMINAL):
        st.rerun()  # the run ended: redraw the whole page (Train button, no polling)
    if not rows:
        if now.status == "none":
            st.info("Press **Train frontier** to train these runs.", icon=":material/play_arrow:")
        return
    paper = paper_points(preset)
    narrow.panels_chart(lambda: fr.figure(rows, paper, f"frontier-{key}"), "fr-chart",
                        memo=("frontier", key, len(rows), now.status, bool(now.get("shipped"))), width="stretch",
                        config={"toImageButtonOptions": {"format": "png", "filename": f"frontier-{preset}",
                                                         "scale": 2}, "displaylogo": False})
    st.caption(fr.REFERENCE_NOTE)
    if now.get("shipped"):
        st.caption(f"Stored with the app: this default view was trained once by `{stored['command']}` "
                   "(the tests retrain some of its points and compare), so it appears without waiting.")
    if trials:
        fr.audit_notes(rows, findings(rows))
    table = pd.DataFrame(summary_lines(rows))
    table["method"] = [f"{method_title(m)} ({m})" if method_title(m) != m else m for m in table["method"]]
    st.dataframe(table, hide_index=True, width="stretch")
    fr.guess_note(rows, preset)
    af.attack_section(rows, key)
    if paper:
        st.caption("★ the papers' reported accuracies at the ε *they* state (their own accounting), "
                   "for this preset's experiment.")
    d1, d2 = st.columns([1, 3], vertical_alignment="center")
    d1.download_button("CSV", rows_csv(rows), file_name=f"frontier-{preset}.csv", mime="text/csv",
                       icon=":material/download:", key="fr.csv")
    d2.caption("PNG: the camera icon at the chart's top right saves the chart as a PNG in the browser "
               "(kaleido, Plotly's server-side image export, is not installed; the browser export works offline).")
    if now.status == "finished":
        for method, check in trade_off(rows).items():
            text = fr.lesson(method, check)
            if text:
                st.info(text, icon=":material/school:")


# a container of its own: see pacing.polling_fragment (a blank page otherwise)
pacing.polling_fragment(view, pacing.poll_seconds(1.0) if live else None)()
