"""Keep every page behind ``app.py``'s router, even on a fresh server's first deep link.

Streamlit still knows the old multipage mode, where each file in ``pages/`` is a page of
its own. Until some session has run ``app.py`` and called ``st.navigation``, a fresh
server assumes that mode (``PagesManager.uses_pages_directory``, set once per process
from the mere existence of ``pages/``). So the first visitor who opens ``/papers`` or
``/history`` directly gets the page run *without* ``app.py``: no top menu, no wide
layout, and a sidebar listing raw file names ("app", "compare", ...). Every page calls
:func:`through_router` first. In that state it switches the server to ``st.navigation``
mode and reruns; the rerun goes through ``app.py``, which routes to the same page,
because both modes hash a page by its URL path.

Only a session's first script run is redirected: a rerun would drop a button click made
in the run it replaces, and ``AppTest`` resets the flag before every run it makes, so later
runs there execute the page file directly, as they always did.
"""
from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def through_router() -> None:
    """Rerun through ``app.py`` if Streamlit ran this page file on its own for a new session."""
    if PagesManager.uses_pages_directory and len(st.session_state) == 0:
        PagesManager.uses_pages_directory = False
        st.rerun()
