"""Playground: set up one federated experiment, run it, watch it train.

Sidebar: the experiment (preset, recipe, data, clients, split, privacy, local training).
Main: Run / Stop, then the live run (accuracy, privacy spent, participation, method
events), the data split the config produces, and the config itself.
"""
import streamlit as st

from fedcore.config import RunConfig
from fedcore.runner import ACTIVE, TERMINAL
from fedcore.runner.labels import run_label
from fedcore.links import VIEW_PARAMS, cli_command
from pages.components import (attack_view, audit, equal_privacy_mode, host, live, membership_roc, presentation,
                               preview, routing, sidebar, state, tempo, your_run)
from pages.components.press import pressed

routing.through_router()

manager = state.manager()  # created with the first page: its warm worker is ready by the first Run
if "pg.flat" not in st.session_state and not set(st.query_params) - set(VIEW_PARAMS):
    state.load_config(sidebar.student_default(), state.DEFAULT_PRESET)  # a private method: privacy costs show
flat = state.playground_flat()

worker_slot = st.sidebar.container()  # the worker's start-up badge, above the form (off the projector)
with st.sidebar:
    sidebar.experiment_form(flat)  # its groups, and what a lesson link hides or locks (?hide=...&lock=...)

cfg, error = state.build_config(flat)
state.write_url(cfg)
if cfg is not None:
    error = preview.data_error(cfg)  # settings only the data rules out (clients > samples, ...)
refused = host.submission_error(cfg) if cfg is not None and not error else None  # this host's limits

present = presentation.on()
if not present:
    st.title("Playground")
host.store_banner()
url_error = state.flashed("pg.url_error")
if url_error:
    host.link_warning("Showing the previous settings: the link's settings could not be loaded —", url_error)
url_dropped = state.flashed("pg.url_dropped")
if url_dropped:
    host.link_warning("The rest of the link is loaded; ignored, since no setting has that name here:", url_dropped)

run_id = state.shown_run()
record = manager.store.get_job(run_id) if run_id else None
active = record is not None and record.status in ACTIVE
mine = record is not None and host.may_control(record)  # a shared link shows a run read-only

# one row that wraps: "Run", "Stop" and "Presentation" stay whole at any width (a 1,024 px projector, a
# half-screen window of 800 px with the sidebar open, a phone)
head = st.container(horizontal=True, vertical_alignment="center")
if pressed(head, "Run", key="pg.run_button", type="primary", icon=":material/play_arrow:", width="content",
                disabled=bool(error or refused) or (active and mine),
                help="Train this configuration (a finished identical run is replayed; in Presentation or "
                     "slow motion it always trains live)."):
    # "spend exactly ε in total": budgets solved first; on the projector or in slow motion the class
    # watches it train, never a replay (whose notice would also push the attack view below 720 px)
    new_id = equal_privacy_mode.start_matched(cfg, reuse=not (present or tempo.slow_motion()))
    if new_id:
        state.show_run(new_id)
        tempo.apply_to_new_run(new_id)  # the Speed picked before Run
        replay = manager.store.get_job(new_id)
        if replay and replay.status in TERMINAL:
            st.toast("Same settings finished before: replayed from the run store.")
            st.session_state["pg.replayed"] = new_id
        st.rerun()
if record is not None and not mine:
    head.caption(":material/visibility: shared run, read-only", width="content")
elif pressed(head, "Stop", key="pg.stop_button", icon=":material/stop:", disabled=not active, width="content"):
    host.stop_run(run_id)
    st.rerun()
if cfg is not None:
    head.caption(run_label(cfg))
with worker_slot:
    if not present:  # start-up badges stay off the projector (whose layout hides the sidebar too)
        live.worker_badge(poll=not active)
with head:
    present = presentation.toggle()
tempo.bar(record if mine else None, key="pg", compact=present)  # Speed before Run; Pause / Step at once
if (record is not None and cfg is not None and st.session_state.get("pg.replayed") == run_id
        and equal_privacy_mode.same_settings(record, cfg)):
    c1, c2 = st.columns([3, 1.2], vertical_alignment="center")   # "Train again" whole at 1,024 px
    c1.caption("This result is a replay: the same settings finished before, and a seeded run gives the "
               "same numbers. Train again to watch it live.")
    if pressed(c2, "Train again", icon=":material/replay:", key="pg-train-again", disabled=bool(error or refused)):
        new_id = equal_privacy_mode.start_matched(cfg, reuse=False)
        if new_id:
            st.session_state.pop("pg.replayed", None)
            state.show_run(new_id)
            tempo.apply_to_new_run(new_id)
            st.rerun()
if error:
    st.error(f"Invalid setting — {host.plain(error, 400)}")
elif refused:
    st.error(f"Not allowed on this server — {host.plain(refused, 400)}", icon=":material/block:")

if present:  # the live run only: no tabs, accuracy and privacy side by side
    tab_run, tab_split, tab_config = st.container(), None, None
else:
    tab_run, tab_split, tab_config = st.tabs(["Training", "Data split", "Config"])

with tab_run:
    if run_id and record is not None:
        if cfg is not None and not equal_privacy_mode.same_settings(record, cfg):
            st.caption(f"Showing run `{run_id}` ({host.plain(record.label)}); the settings in the sidebar "
                       "have changed since. Press Run to train them.")
        finished = record.status == "finished" and not present
        if finished:  # where the first screen's frontier was, on the first screen (issue 40 §5)
            your_run.your_run_on_frontier(record, state.run(run_id))
        live.run_view(run_id, key="pg", teaching=True, present=present)
        if not present:
            attack_view.attack_panel(run_id, key="pg")
        if finished:
            membership_roc.run_panel(RunConfig.from_dict(record.config), state.current_preset())
            audit.run_audit_panel(RunConfig.from_dict(record.config))
    else:
        if run_id:
            host.link_warning("No such run here (deleted, or a mistyped link):", run_id)
        preview.first_screen_tradeoff()  # the trade-off before any click (it says to press Run)

if present:
    st.stop()

with tab_split:
    if cfg is None:
        st.caption("Fix the setting above to preview the split.")
    else:
        preview.split_preview(cfg, key="pg-split")

with tab_config:
    if cfg is not None:
        st.markdown("Same run from the command line:")
        st.code(cli_command(cfg, state.current_preset()), language="bash", wrap_lines=True)
        st.caption("The page address holds these settings: copy the link to share this experiment.")
        st.json(cfg.to_dict(), expanded=1)
