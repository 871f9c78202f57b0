"""The per-client budget editor: the Privacy group's ε and δ inputs.

One ε for every client, one per client (full-width log-scale sliders up to
:data:`MAX_CLIENT_SLIDERS` clients, number inputs two per row up to :data:`MAX_CLIENT_INPUTS`, an
editable table beyond), or a paper's tiers and a table; between the mode and the values the
"spend exactly ε in total" switch (:mod:`.equal_privacy_mode`); then δ. Every value is written to
the Playground's ``flat["privacy.epsilon"]`` / ``flat["privacy.delta"]``.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from fedcore.accounting.words import people
from fedcore.budgets import TIER_PRESETS, tiered_epsilons
from fedcore.config import PrivacyConfig
from fedcore.constraints import constraint_of

from . import state
from .equal_privacy_mode import match_toggle
from .form import MATCH, is_number, keyed, lesson_drawn, number_widget, student_mode

EPSILON_HELP = ("ε bounds how much one client's data can change what the server sees: every output is at "
                "most e^ε times more likely with it than without it. Smaller ε = more privacy = more noise. "
                "What the run actually spends, for its threat model, is the 'ε spent' shown beside the chart.")
EPSILON = constraint_of(PrivacyConfig, "epsilon").inner
DELTA = constraint_of(PrivacyConfig, "delta").inner
MAX_CLIENT_SLIDERS = 6
"""Up to this many clients, each gets a full-width ε slider."""
MAX_CLIENT_INPUTS = 20
"""Up to this many clients (more than :data:`MAX_CLIENT_SLIDERS`), each gets a compact number
input, two per row (a slider that narrow is 90 pixels wide, too short to set); more get an
editable table."""
BUDGET_MODES = ("Same for all clients", "Per client", "Tiers (paper groups)")


def budgets(flat: dict) -> None:
    """Per-client epsilon: one value, a slider per client (<= 20), or tiers + a table; the
    "spend exactly ε" switch between the mode and the values; δ. A lesson link hides or locks
    ε, the switch and δ one by one."""
    eps_field = "privacy.epsilon"
    mode = lesson_drawn(eps_field, lambda lock: _budget_mode(flat, **lock), note=False)
    lesson_drawn(MATCH, lambda lock: match_toggle(flat, **lock))
    lesson_drawn(eps_field, lambda lock: _epsilons(flat, mode, **lock))
    lesson_drawn("privacy.delta", lambda lock: _delta(flat, **lock))


def _budget_mode(flat: dict, disabled: bool = False) -> str:
    """The radio "one ε / per client / tiers" (its first value from the stored ε)."""
    if flat.get("privacy.mechanism") == "none":
        st.caption("The mechanism 'none' adds no noise: budgets are recorded but not used.")
    mode_key = state.WIDGET_PREFIX + "eps_mode"
    if mode_key not in st.session_state:
        one = len(flat.get("privacy.epsilon") or [1.0]) == 1
        st.session_state[mode_key] = BUDGET_MODES[0] if one else BUDGET_MODES[1]
    return keyed(st.radio, "Privacy budget ε", BUDGET_MODES, key=mode_key, horizontal=False, help=EPSILON_HELP,
                    disabled=disabled)


def _epsilons(flat: dict, mode: str, disabled: bool = False) -> None:
    """The ε values in the budget ``mode``, written to ``flat["privacy.epsilon"]``."""
    n = int(flat.get("num_clients") or 1)
    eps = [float(e) for e in (flat.get("privacy.epsilon") or [1.0])]
    st.markdown(f"[What ε means, on one number →](/mechanisms?mechanism={flat.get('privacy.mechanism') or 'two_point'})")
    if mode == BUDGET_MODES[0]:
        one = {"eps": eps[0]}
        number_widget(one, "eps", "ε for every client", EPSILON, key=state.WIDGET_PREFIX + "eps_all",
                      disabled=disabled)
        flat["privacy.epsilon"] = [one["eps"]]
    else:
        per_client = _resize(eps, n)
        if mode == BUDGET_MODES[2]:
            per_client = _tiers(n, per_client, disabled)
        if mode == BUDGET_MODES[1] and n <= MAX_CLIENT_INPUTS:
            per_client = _client_inputs(per_client, slider=n <= MAX_CLIENT_SLIDERS, disabled=disabled)
        else:
            per_client = _client_table(per_client, disabled)
        flat["privacy.epsilon"] = per_client


def _delta(flat: dict, disabled: bool = False) -> None:
    """One δ for every client (a config with per-client values shows them in a caption)."""
    delta = list(flat.get("privacy.delta") or [1e-5])
    if len(delta) > 1:
        st.caption(f"δ: {len(delta)} per-client values from the loaded config "
                   f"({min(delta):.1e} … {max(delta):.1e}).")
        return
    one = {"delta": delta[0]}
    number_widget(one, "delta", "δ for every client", DELTA, key=state.WIDGET_PREFIX + "delta", format="%.1e",
                  disabled=disabled)
    flat["privacy.delta"] = [one["delta"]]
    if student_mode() and is_number(one["delta"]) and 0 < one["delta"] < 1:
        st.caption(f"δ = {one['delta']:.10f}".rstrip("0") + f": a 1 in {1 / one['delta']:,.0f} chance, at most, "
                   "that the ε guarantee does not hold.")


def _resize(eps: list[float], n: int) -> list[float]:
    if len(eps) == n:
        return eps
    return (eps + [eps[-1]] * n)[:n] if len(eps) > 1 else eps * n


def _tiers(n: int, current: list[float], disabled: bool = False) -> list[float]:
    key = state.WIDGET_PREFIX + "eps_tiers"
    names = list(TIER_PRESETS)

    def tiers(name: str) -> list[float]:
        return tiered_epsilons(n, TIER_PRESETS[name]["levels"], TIER_PRESETS[name]["fractions"])

    def apply():
        if key not in st.session_state:  # an earlier callback of this rerun reset the widgets
            return
        st.session_state["pg.flat"]["privacy.epsilon"] = tiers(st.session_state[key])
        st.session_state.pop(state.WIDGET_PREFIX + "eps_table", None)

    if key not in st.session_state:  # entering tier mode: start from the first group
        st.session_state[key] = names[0]
        current = tiers(names[0])
        st.session_state.pop(state.WIDGET_PREFIX + "eps_table", None)
    keyed(st.selectbox, "Tier preset", names, key=key, on_change=apply, disabled=disabled)
    st.caption(TIER_PRESETS[st.session_state[key]]["paper"] + " — edit single clients in the table.")
    return current


LOG_EPSILONS = (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0,
                70.0, 100.0)
"""The per-client ε slider's stops: a log scale from 0.1 to 100 (0.5 and 1 lie apart)."""


def _client_inputs(eps: list[float], slider: bool, disabled: bool = False) -> list[float]:
    """One ε per client: full-width sliders on a log scale (:data:`LOG_EPSILONS`; a client
    whose ε is not one of its stops, a preset's 0.05 or a link's 0.42, gets a number input
    instead, never a rounded slider), else number inputs two per row.

    The stored config is the one source of truth: every run seeds each widget from it, and a
    widget's change is written back to it in its callback (before the run that shows it). So a
    widget that was away (5 sliders, then 12 clients: number inputs, 30: a table, then 10)
    never comes back with a stale or empty value (the "every client's ε shows 0" of issue 24).
    """
    cols = [st.container()] if slider else st.columns(2)
    out = list(eps)
    for i, value in enumerate(eps):
        log = slider and value in LOG_EPSILONS
        key = f"{state.WIDGET_PREFIX}eps.{i}.{'log' if log else 'n'}"
        st.session_state[key] = value
        with cols[i % len(cols)]:
            if log:
                got = keyed(st.select_slider, f"ε client {i}", LOG_EPSILONS, key=key, format_func=people, disabled=disabled,
                                       on_change=_set_client_epsilon, args=(i, key), help=EPSILON_HELP)
            else:
                got = keyed(st.number_input, f"ε client {i}", key=key, step=0.1, format="%g", disabled=disabled,
                                      on_change=_set_client_epsilon, args=(i, key),
                                      help="Any ε > 0 (the slider's stops run from 0.1 to 100).")
        out[i] = float(got) if is_number(got) else value
    return out


def _set_client_epsilon(i: int, key: str) -> None:
    """Callback of client ``i``'s ε widget: the new value into the stored config."""
    flat = st.session_state.get("pg.flat")
    value = st.session_state.get(key)
    if flat is None or not is_number(value):
        return  # an emptied input: the stored value stays
    values = [float(e) for e in (flat.get("privacy.epsilon") or [1.0])]
    n = int(flat.get("num_clients") or 1)
    values = _resize(values, n)
    if i < len(values):
        values[i] = float(value)
        flat["privacy.epsilon"] = values


def _client_table(eps: list[float], disabled: bool = False) -> list[float]:
    key = state.WIDGET_PREFIX + "eps_table"
    if st.session_state.get("pg.eps_rows") != len(eps):  # edits of another size do not apply
        st.session_state.pop(key, None)
        st.session_state["pg.eps_rows"] = len(eps)
    frame = pd.DataFrame({"client": range(len(eps)), "epsilon": eps})
    edited = st.data_editor(
        frame, key=key, hide_index=True, num_rows="fixed", height=240,
        disabled=True if disabled else ["client"], width="stretch",
        column_config={"epsilon": st.column_config.NumberColumn("ε", format="%g")})
    return [float(v) for v in edited["epsilon"]]
