"""Every figure a page draws goes through :func:`chart`, so any figure may be empty.

Streamlit validates a figure given as a dict with plotly's ``return_figure_from_figure_or_data``,
which raises for a dict without traces, and in plotly 7.1.0 raises a name plotly no longer has
(``PlotlyEmptyDataError``): a Frontier page whose attack sweep had its first row crashed (issue 38).
A figure object is not checked there, so a figure without traces is sent as one, and says so.
"""
from __future__ import annotations

import streamlit as st

EMPTY_TEXT = "No points yet"
"""What a figure without traces says in its middle."""


def traces(fig) -> int:
    """How many traces ``fig`` (a plotly figure or its dict) holds."""
    return len(fig.get("data") or ()) if isinstance(fig, dict) else len(fig.data)


def drawable(fig):
    """``fig`` as it is when it has traces; else a plotly figure of its layout that says
    :data:`EMPTY_TEXT` (a figure object: Streamlit sends it without plotly's empty-data check)."""
    if traces(fig):
        return fig
    import plotly.graph_objects as go

    out = go.Figure(fig)
    out.add_annotation(text=EMPTY_TEXT, xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                       font=dict(size=14, color="#555"))
    return out


def chart(fig, key: str, where=None, **kwargs) -> None:
    """``st.plotly_chart(fig, key=key, **kwargs)`` (in container ``where`` when given) of any figure,
    one without traces included (:func:`drawable`)."""
    (where or st).plotly_chart(drawable(fig), key=key, **kwargs)
