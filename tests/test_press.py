"""A press survives the script run it started being cut short (pages/components/press.py): the
browser's stored code reports itself after a page loads and restarts the run, and a Run clicked
in that first second used to start nothing (tests/test_browser.py found it under load)."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest


def app():
    import streamlit as st

    from pages.components.press import pressed

    if st.session_state.get("cut"):  # another value arrived: this run stops before the buttons
        st.session_state["cut"] = False
        st.stop()
    if pressed(st, "Go", key="go", disabled=st.session_state.get("off", False)):
        st.session_state["went"] = st.session_state.get("went", 0) + 1
    if st.button("Plain", key="plain"):
        st.session_state["n_plain"] = st.session_state.get("n_plain", 0) + 1


def test_a_press_is_acted_on_by_the_next_run_that_reaches_the_button_once():
    at = AppTest.from_function(app).run()
    at.session_state["cut"] = True
    at.button(key="go").click()
    at.button(key="plain").click().run()          # the click's run is cut short before the buttons
    assert "went" not in at.session_state and "n_plain" not in at.session_state
    at.run()                                      # the run that reaches them: Go acts, a plain button forgot
    assert at.session_state["went"] == 1 and "n_plain" not in at.session_state
    at.run()
    assert at.session_state["went"] == 1          # once per press


def test_a_press_on_a_button_disabled_by_then_does_nothing():
    at = AppTest.from_function(app).run()
    at.session_state["cut"] = True
    at.button(key="go").click().run()
    at.session_state["off"] = True                # e.g. the settings became invalid meanwhile
    at.run()
    at.session_state["off"] = False
    at.run()
    assert "went" not in at.session_state
