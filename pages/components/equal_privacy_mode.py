"""Equal-privacy mode: the Playground's "Spend exactly ε in total" switch and what follows from it.

With it on (the default, up to :data:`MATCH_MAX_ROUNDS` rounds), Run first solves the method's own
budget so that the whole run spends exactly the ε set (:func:`start_matched`); :func:`matched_note`
reads that solve back from a run's record, and :func:`same_settings` tells whether the run on
screen was started from the sidebar's settings in the same mode.
"""
from __future__ import annotations

from typing import Optional

import streamlit as st

from fedcore.accounting.words import epsilon_unit
from fedcore.config import RunConfig
from fedcore.runner.record import CacheKey, EqualPrivacy, JobRecord

from . import state
from .form import keyed

MATCH_KEY = "pg.match"
MATCH_HELP = ("Every method reads ε its own way (per weight per round, per round, the whole run). With this "
              "on, Run first solves the method's own budget so that the whole run spends exactly the ε you "
              "set (within 1 %, never more): the same fair comparison as the Frontier page's equal privacy.")
MATCH_MAX_ROUNDS = 100
"""Equal privacy replays the run's accounting before it starts, in the worker (it says so while it
solves): a few seconds up to this many rounds (LDP-FL: 7 s at 100 rounds, over two minutes at 2000),
so every one-click method on the demo (HW-DPFL: 80 rounds) can spend exactly its ε. Longer runs
start with the ε as the method reads it; ``python -m fedcore sweep --match headline`` matches any length."""


def match_on(flat: Optional[dict] = None) -> bool:
    flat = flat if flat is not None else st.session_state.get("pg.flat") or {}
    return bool(st.session_state.get(MATCH_KEY, True)) and int(flat.get("rounds") or 0) <= MATCH_MAX_ROUNDS


def match_toggle(flat: dict, disabled: bool = False) -> None:
    """"Spend exactly ε in total": the equal-privacy setting, on by default."""
    if MATCH_KEY not in st.session_state:
        st.session_state[MATCH_KEY] = True
    too_long = int(flat.get("rounds") or 0) > MATCH_MAX_ROUNDS
    keyed(st.toggle, "Spend exactly ε in total", key=MATCH_KEY, help=MATCH_HELP, disabled=too_long or disabled)
    mech = flat.get("privacy.mechanism") or "none"
    if mech == "none":
        return
    if too_long:
        st.caption(f"*Spend exactly ε in total* works up to {MATCH_MAX_ROUNDS} rounds here (solving it replays "
                   "the run's accounting first); for longer runs use `python -m fedcore sweep --match headline`. "
                   f"This method reads your ε **{epsilon_unit(mech)}**.")
    elif match_on(flat):
        st.caption(f"Your ε is what the whole run spends; Run solves this method's own budget "
                   f"({epsilon_unit(mech)}) to match it.")
    else:
        st.caption(f"This method reads your ε **{epsilon_unit(mech)}**; the run's total is shown beside it.")


def matched_note(record: JobRecord) -> Optional[EqualPrivacy]:
    """The equal-privacy note of a run started with "spend exactly ε in total" on
    (:class:`~fedcore.runner.store.EqualPrivacy`): ``target``; once its worker solved the budget
    also ``headline``, ``reached``, ``knob``."""
    return record.match


def start_matched(cfg: RunConfig, *, reuse: bool = True) -> Optional[str]:
    """Start ``cfg``; with "spend exactly ε in total" on, its worker first solves the budget."""
    return state.start_run(cfg, reuse=reuse, match=match_on({"rounds": cfg.rounds}))


def same_settings(record: JobRecord, cfg: RunConfig) -> bool:
    """Whether the run on screen was started from the sidebar's settings ``cfg`` (the config it
    asked for, in the same equal-privacy mode: its result cache key)."""
    exact = match_on({"rounds": cfg.rounds}) and cfg.privacy.mechanism != "none"
    return record.cache_key == CacheKey(cfg.config_hash(), spend_exactly=bool(exact))
