"""Teaching controls of a run: Speed (slow motion), Pause / Resume, Step (one more round).

They sit in one row under the Run button *before* anything trains: the Speed a teacher picks
applies to the next run the moment it starts (:func:`apply_to_new_run`), and Pause / Step act
on the run on screen as soon as it is active. Speed is a row of buttons (a segmented control),
not a drop-down: a drop-down closes when the page's polling redraws it, a click cannot.

The worker honours them between two rounds (:mod:`fedcore.runner.tempo`), so a paused run's
numbers are those of an unpaused one. Anybody but the run's owner (or an admin) sees only
whether the run is paused.
"""
from __future__ import annotations

from typing import Optional

import streamlit as st

from fedcore.errors import FedcoreError
from fedcore.runner.record import JobRecord
from fedcore.runner.tempo import SLOW_MOTION, read_tempo, set_tempo, step

from . import host, state

SPEED_KEY = "pg.speed"
"""The Speed this session picked (a :data:`SLOW_MOTION` name), kept across runs."""
SPEED_HELP = ("Slow motion waits after every round so a class can follow the charts; pick it before or "
              "during a run. Paused or slowed time counts towards this server's time limit per run.")


def current(run_id: str) -> dict:
    """The run's tempo: ``{"paused": bool, "steps": int, "delay": seconds}``."""
    return read_tempo(state.manager().store, run_id)


def speed() -> str:
    """The Speed picked in this session (``"full speed"`` until one is picked)."""
    picked = st.session_state.get(SPEED_KEY)
    return picked if picked in SLOW_MOTION else next(iter(SLOW_MOTION))


def slow_motion() -> bool:
    """A slow Speed is picked: the class wants to watch the rounds, so Run trains live (never a replay)."""
    return SLOW_MOTION[speed()] > 0


def apply_to_new_run(run_id: str) -> None:
    """Give a run this session just started the Speed picked before it."""
    delay = SLOW_MOTION[speed()]
    if delay:
        _change(run_id, set_tempo, delay=delay)


def _change(run_id: str, action, **kw) -> None:
    try:
        action(state.manager().store, run_id, by=host.viewer(), **kw)
    except FedcoreError as exc:
        st.toast(host.plain(exc))


def bar(record: Optional[JobRecord], key: str = "pg", compact: bool = False) -> None:
    """Speed, Pause / Resume and Step in one row, shown before and during a run.

    ``record``: the run on screen (None before the first run); Pause / Step act on it while it
    is active and this viewer controls it, and are greyed out otherwise. ``compact``: no labels
    (the presentation layout).
    """
    from fedcore.runner import ACTIVE

    run_id = record.id if record is not None else None
    live = record is not None and record.status in ACTIVE and host.may_control(record)
    tempo = current(run_id) if live else {"paused": False, "delay": SLOW_MOTION[speed()]}
    if SPEED_KEY not in st.session_state:
        st.session_state[SPEED_KEY] = speed()

    def pace():
        if st.session_state.get(SPEED_KEY) not in SLOW_MOTION:  # a second click on the picked one clears it
            st.session_state[SPEED_KEY] = next(iter(SLOW_MOTION))
        if live:
            _change(run_id, set_tempo, delay=SLOW_MOTION[st.session_state[SPEED_KEY]])

    row = st.container(horizontal=True, vertical_alignment="bottom")   # wraps: every label whole at any width
    row.segmented_control("Speed", list(SLOW_MOTION), key=SPEED_KEY, on_change=pace, help=SPEED_HELP,
                             label_visibility="collapsed" if compact else "visible")
    if live and tempo["paused"]:
        row.button("Resume", icon=":material/play_arrow:", key=f"{key}-resume", width="content",
                       on_click=_change, args=(run_id, set_tempo), kwargs={"paused": False},
                       help="Train the remaining rounds.")
    else:
        row.button("Pause", icon=":material/pause:", key=f"{key}-pause", width="content", disabled=not live,
                       on_click=_change, args=(run_id, set_tempo), kwargs={"paused": True},
                       help="Hold the run after the round that is training now (the numbers do not change)."
                            + ("" if live else " Works once your run is training."))
    row.button("Step", icon=":material/skip_next:", key=f"{key}-step", width="content", disabled=not live,
                  on_click=_change, args=(run_id, step),
                  help="Train one more round, then hold (pauses a running run after its next round)."
                       + ("" if live else " Works once your run is training."))

