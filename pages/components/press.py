"""Buttons whose press is not lost when the script run it started is interrupted.

Streamlit reruns the page when any widget or component reports a value; a value that arrives
while the run of a click is still going (the browser's "keep my runs" code reports itself
once a page has loaded, :func:`.host.visitor_from_browser`) stops that run and starts one with
the newer widget states, where the button reads ``False``: a Run clicked in the first second
of a page started nothing. A press here is written to session state by the button's callback,
which Streamlit calls before the script starts, and read where the button is drawn, so the run
that reaches the button acts on it whichever run that is.
"""
from __future__ import annotations

import streamlit as st


WAITING = "A moment: this page is reading who you are from your browser."
"""The help of a button that waits for the page to know its visitor."""


def _press(flag: str) -> None:
    st.session_state[flag] = True


def pressed(where, label: str, *, key: str, disabled: bool = False, **kwargs) -> bool:
    """Draw ``where.button(label, ...)`` (``where``: ``st`` or a column); True once per press,
    in the first script run that reaches the button after it (never while it is disabled).
    It is disabled until the page knows its visitor (:func:`.host.visitor_known`): a press before
    that started work under a fresh identity."""
    from .host import visitor_known

    flag = f"{key}.pressed"
    if not visitor_known():  # a press already made waits for the run that knows the visitor
        where.button(label, key=key, disabled=True, **{**kwargs, "help": WAITING})
        return False
    where.button(label, key=key, disabled=disabled, on_click=_press, args=(flag,), **kwargs)
    return bool(st.session_state.pop(flag, False)) and not disabled


def start_job(start) -> None:
    """``start()`` a job and rerun the page, or say in one line why the host refuses it (a limit)."""
    from fedcore.errors import FedcoreError

    from .plain import plain

    try:
        start()
        st.rerun()
    except FedcoreError as exc:
        st.error(plain(exc), icon=":material/hourglass_top:")
