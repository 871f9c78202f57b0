"""A page that forces the fragment-queue race of a busy server (``tests/test_browser_shared.py``).

Layout like the live run view: one block holding a line, a polling fragment, a line and a
second polling fragment (both every 0.2 s). Every full run after the first sleeps 0.6 s
(the browser's fragment timers fire meanwhile, so fragment runs queue behind this run),
then blocks the server's event loop for 1 s, as twenty busy sessions do: nothing this run
writes reaches the browser before the queued fragment run starts, and Streamlit drops
the fragments' part of it (see :mod:`pages.components.pacing`).

``?mode=bare``: plain ``st.fragment`` (the page dies: "Bad delta path index");
otherwise :func:`pages.components.pacing.polling_fragment`.
"""
import sys
import time
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pages.components import pacing  # noqa: E402


def block_event_loop(seconds: float) -> None:
    from streamlit.runtime import Runtime

    Runtime.instance()._get_async_objs().eventloop.call_soon_threadsafe(time.sleep, seconds)


def ticker(name: str) -> None:
    st.session_state[name] = st.session_state.get(name, 0) + 1
    st.write(f"{name} ticked {st.session_state[name]} times")


runs = st.session_state["full runs"] = st.session_state.get("full runs", 0) + 1
if runs > 1:
    time.sleep(0.6)
    block_event_loop(1.0)
if st.query_params.get("mode") == "bare":
    def poll(body, every):
        return st.fragment(run_every=every)(body)
else:
    poll = pacing.polling_fragment
with st.container():
    st.write("above the fragments")
    poll(ticker, 0.2)("first")
    st.write("between the fragments")
    poll(ticker, 0.2)("second")
st.button("Full rerun")
st.write(f"full run {runs}")
