"""Which run the Playground shows (its id in the session state): below both the host's claim and the
page state, which read and set it."""
from __future__ import annotations

from typing import Optional

import streamlit as st


def shown_run() -> Optional[str]:
    return st.session_state.get("pg.run")


def show_run(run_id: Optional[str]) -> None:
    st.session_state["pg.run"] = run_id
