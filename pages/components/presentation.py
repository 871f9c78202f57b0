"""The Playground's presentation layout: for a projector in front of a class.

Large type, no settings sidebar, and the live run's accuracy and privacy charts side by
side, so that both sit above the fold of a 1280x720 screen. The teacher sets up the
experiment first, then switches *Presentation* on (or opens a link with ``present=1``);
switching it off brings the settings back, unchanged.
"""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from .form import keyed

CHART_HEIGHT = 270
"""Height of each of the two side-by-side charts (pixels)."""
LESSON_CHART_HEIGHT = 200
"""Height of the accuracy chart beside the attack view: the lesson's sentences sit under it (1,024x768)."""
ATTACK_CHART_HEIGHT = 150
"""Height of the attack view's success chart beside the accuracy chart (its images sit above it)."""
FONT_SIZE = 16
"""Plotly text size in presentation (the dashboard's default is 12)."""

_CSS = """<style>
section[data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl'],
[data-testid='stExpandSidebarButton'] {display: none;}
[data-testid='stMainBlockContainer'] {max-width: 100%; padding: 4.4rem 2rem 1rem 2rem;}
[data-testid='stMainBlockContainer'] [data-testid='stMarkdownContainer'] p,
[data-testid='stMainBlockContainer'] [data-testid='stCaptionContainer'] {font-size: 1.2rem;}
[data-testid='stMainBlockContainer'] [data-testid='stMetricValue'] p {font-size: 2.6rem; line-height: 1.1;}
[data-testid='stMetricLabel'] p {font-size: 1.1rem;}
[data-testid='stMainBlockContainer'] button p, [data-testid='stWidgetLabel'] p {font-size: 1.15rem;}
[data-testid='stProgress'] p {font-size: 1.25rem; font-weight: 600;}
[data-testid='stImageCaption'] {font-size: 1rem; white-space: nowrap;}
@media (width < 1200px) {[data-testid='stImageCaption'] {white-space: normal;}}  /* 1,024 px: two lines, not into a neighbour */
@media (height <= 740px) {  /* 1,280x720: the lesson's last sentence above the fold */
[data-testid='stMainBlockContainer'] [data-testid='stMarkdownContainer'] p {font-size: 1.1rem; line-height: 1.45;}
[data-testid='stMainBlockContainer'] [data-testid='stMetricValue'] p {font-size: 2.6rem; line-height: 1.1;}}
</style>"""


def on() -> bool:
    """Whether this session shows the presentation layout."""
    return bool(st.session_state.get("pg.present"))


def toggle() -> bool:
    """The *Presentation* switch (kept in the page's link as ``present=1``); applies the style."""
    st.session_state["pg.present_toggle"] = on()  # a link with present=1 may have set it

    def flip():
        st.session_state["pg.present"] = st.session_state["pg.present_toggle"]

    keyed(st.toggle, "Presentation", key="pg.present_toggle", on_change=flip,
              help="Large type, no settings sidebar, accuracy and privacy side by side: for a projector. "
                   "Switch off to change the settings again.")
    if on():
        st.html(_CSS)
    return on()


def enlarge(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` with presentation-size text at :data:`CHART_HEIGHT` (the cached
    figure other sessions share is left as it is)."""
    big = dict(size=FONT_SIZE)
    out = go.Figure(fig).update_layout(font=big, height=CHART_HEIGHT, title_font_size=FONT_SIZE + 3,
                                       legend_font=big)
    # explicit sizes: Streamlit's chart theme sets its own for every part it finds unset
    return out.update_xaxes(tickfont=big, title_font=big).update_yaxes(tickfont=big, title_font=big)
