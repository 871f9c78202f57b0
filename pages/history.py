"""History: your runs in the store, with their settings, status and final accuracy.

Runs of an anonymous visitor belong to the tab that started them; the sidebar's "Keep my
runs" code brings them to another tab. Pick a run to reopen it in the Playground, train it again, delete it (your own runs
only), or download it (per-round table as CSV; config and every event as JSON). When the
host makes runs public (or you are an admin), "Everyone's runs" lists the others too.
"""
import pandas as pd
import streamlit as st

from pages.components import history, host, routing, state
from pages.components.form import keyed
from pages.components.press import pressed
from fedcore.runner.record import RUN
from fedcore.tables import export_csv, export_json

routing.through_router()

st.title("Run history")
host.store_banner()
store = state.manager().store
scope = history.scope_picker("hist.scope")
records = history.visible_runs(store.list_jobs(RUN), scope)
if not records:
    st.info("No runs yet: press Run in the Playground and they will be listed here.")
    if host.signed_in() is None:
        st.caption("Started runs in another tab or on an earlier visit? Enter the code you saved under "
                   "**Keep my runs** in the sidebar to bring them here.")
    st.stop()

st.dataframe(pd.DataFrame(history.overview(records)), hide_index=True, width="stretch",  # as tall as its rows (10 at most)
             column_config=history.COLUMNS)

by_id = {r.id: r for r in records}
if st.session_state.get("hist.run") not in by_id:
    st.session_state["hist.run"] = records[0].id
run_id = keyed(st.selectbox, "Run", list(by_id), key="hist.run", format_func=lambda i: history.title(by_id[i]))
record = by_id[run_id]

mine = host.may_control(record)
actions = st.container(horizontal=True)  # a row that wraps: every label whole on a 1024 px projector
if actions.button("Open in Playground", icon=":material/open_in_new:", type="primary", width="content"):
    state.open_in_playground(run_id)
if pressed(actions, "Run again", key="hist.rerun", icon=":material/replay:", width="content",
           help="Train the same settings again in a new run (ignores the stored result)."):
    new_id = state.start_run(history.config_of(record), reuse=False)
    if new_id:
        state.open_in_playground(new_id)
if actions.button("Delete", icon=":material/delete:", width="content", disabled=not mine,
                  help=None if mine else "Only the person who started a run can delete it."):
    st.session_state["hist.confirm"] = run_id
run = state.run(run_id)
actions.download_button("CSV (per round)", export_csv(run), file_name=f"{run_id}.csv", mime="text/csv",
                        icon=":material/table:", width="content")
stored = store.get_job_dict(run_id) or {}  # the download carries the record as stored (its JSON), not the typed one
actions.download_button("JSON (config + events)", export_json(stored, run), file_name=f"{run_id}.json",
                        mime="application/json", icon=":material/data_object:", width="content")

if st.session_state.get("hist.confirm") == run_id:
    st.warning(f"Delete run `{run_id}` ({host.plain(record.label)}) and all its rounds?")
    yes, no, _ = st.columns([1, 1, 4])
    if yes.button("Yes, delete", type="primary"):
        st.session_state.pop("hist.confirm", None)
        if host.delete_run(run_id):
            st.session_state.pop("hist.run", None)
            st.rerun()
    if no.button("Cancel"):
        st.session_state.pop("hist.confirm", None)
        st.rerun()

if record.status == "failed":
    st.error(f"This run failed after {record.done} rounds: {host.plain(record.error, 400)}")
with st.expander("Settings of this run", expanded=False):
    st.json(record.config, expanded=False)
