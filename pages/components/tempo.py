"""Teaching controls of a live run: Pause / Resume, Step (one more round), slow motion.

The run's owner (or an admin) sees them under the Run button while the run trains; the
worker honours them between two rounds (:mod:`fedcore.runner.tempo`), so a paused run's
numbers are those of an unpaused one. Anybody else sees only whether the run is paused.
"""
from __future__ import annotations

import streamlit as st

from fedcore.errors import FedcoreError
from fedcore.runner.tempo import SLOW_MOTION, read_tempo, set_tempo, step

from . import host, state


def current(run_id: str) -> dict:
    """The run's tempo: ``{"paused": bool, "steps": int, "delay": seconds}``."""
    return read_tempo(state.manager().store, run_id)


def controls(record: dict, key: str, compact: bool = False) -> None:
    """Pause / Resume, Step and the slow-motion picker of an active run this viewer controls
    (``compact``: the picker's label hidden, for the presentation layout)."""
    run_id, store = record["id"], state.manager().store
    tempo = current(run_id)
    speeds = list(SLOW_MOTION)
    delay_key = f"{key}-slow-{run_id}"
    if delay_key not in st.session_state:
        st.session_state[delay_key] = next((n for n, s in SLOW_MOTION.items() if s == tempo["delay"]), speeds[0])

    def change(action, **kw):
        try:
            action(store, run_id, by=host.viewer(), **kw)
        except FedcoreError as exc:
            st.toast(host.plain(exc))

    c_pause, c_step, c_slow = st.columns([1, 1, 2], vertical_alignment="bottom")
    if tempo["paused"]:
        c_pause.button("Resume", icon=":material/play_arrow:", key=f"{key}-resume-{run_id}", width="stretch",
                       on_click=change, args=(set_tempo,), kwargs={"paused": False},
                       help="Train the remaining rounds.")
    else:
        c_pause.button("Pause", icon=":material/pause:", key=f"{key}-pause-{run_id}", width="stretch",
                       on_click=change, args=(set_tempo,), kwargs={"paused": True},
                       help="Hold the run after the round that is training now (the numbers do not change).")
    c_step.button("Step", icon=":material/skip_next:", key=f"{key}-step-{run_id}", width="stretch",
                  on_click=change, args=(step,),
                  help="Train one more round, then hold (pauses a running run after its next round).")
    c_slow.selectbox("Speed", speeds, key=delay_key, label_visibility="collapsed" if compact else "visible",
                     on_change=lambda: change(set_tempo, delay=SLOW_MOTION[st.session_state[delay_key]]),
                     help="Slow motion waits after every round so a class can follow the charts. "
                          "Paused or slowed time counts towards this server's time limit per run.")
