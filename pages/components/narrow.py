"""Faceted figures on a phone: their panels one under another.

A Plotly figure cannot change its layout with the screen, and Streamlit does not tell the
script how wide the screen is. At 390 px the frontier's three panels side by side are 110 px
wide each, and their titles and axis titles run into each other (issue 32). So a faceted figure
is sent twice, as built and stacked (:func:`stacked`), and CSS shows the one that fits the
screen (:func:`panels_chart`; at :data:`BREAKPOINT_PX` or narrower, where Streamlit itself stacks
columns). Layout only: the traces, their axes and their data are the figure's own.
"""
from __future__ import annotations

import copy
import math
import re

import streamlit as st

from . import plot

BREAKPOINT_PX = 640
"""Screens this wide or narrower get the stacked figure (Streamlit stacks its columns there too)."""
PANEL_PX = 200
"""Height of each stacked panel's plot area."""
TITLE_LINE_PX = 19
"""Height of one line of a panel title above its panel."""
TICKS_PX = 30
"""Room under a panel for its x tick labels."""
SHARED_X_PX = 22
"""Room between two panels sharing an x axis (no tick labels between them: their y ticks' ends)."""
XTITLE_PX = 56
"""Room under a panel for its x tick labels and its axis title."""
STACKED = "-stacked"
"""The key suffix of a figure's stacked copy (:func:`panels_chart`): AppTest lists both copies;
``[c for c in at.get("plotly_chart") if not c.proto.id.endswith(STACKED)]`` are the figures as built."""
ROW_Y_KEYS = ("title", "tickformat", "ticksuffix", "tickprefix")
"""What a row's y axis in column 1 shows that its shared neighbours leave out (every stacked panel shows it)."""
LEGEND_ROW_PX = 24
LEGEND_WIDTH_PX = 330
"""The width a phone's horizontal legend wraps at (390 px, less the page's and the figure's margins)."""


def _legend_px(data: list[dict]) -> int:
    """The height of the horizontal legend of ``data`` at a phone's width (an estimate: 7 px a character)."""
    rows, used = 0, LEGEND_WIDTH_PX
    for trace in data:
        if trace.get("showlegend", True) is False or not trace.get("name"):
            continue
        width = 45 + 7 * len(str(trace["name"]))
        if used + width > LEGEND_WIDTH_PX:
            rows, used = rows + 1, 0
        used += width
    return rows * LEGEND_ROW_PX


def stacked(fig) -> dict:
    """``fig`` (a Plotly figure or its dict, of panels made by ``make_subplots``) with its columns
    of panels one under another, each full width: column 1's panels, then column 2's, ...; each
    column's title above its panels, every panel with its y tick labels and its row's y title,
    the legend below. A figure of one panel comes back as it is (as a dict)."""
    out = fig.to_dict() if hasattr(fig, "to_dict") else copy.deepcopy(fig)
    lay = out.setdefault("layout", {})
    panels = [(name, "yaxis" + axis.get("anchor", "y")[1:]) for name, axis in lay.items()
              if re.fullmatch(r"xaxis\d*", name) and isinstance(axis, dict)]
    if len(panels) < 2:
        return out
    x_dom = {x: lay[x].get("domain", [0, 1]) for x, _ in panels}
    y_dom = {y: lay.setdefault(y, {}).get("domain", [0, 1]) for _, y in panels}
    cols = sorted({round(d[0], 6) for d in x_dom.values()})
    rows = sorted({round(d[0], 6) for d in y_dom.values()}, reverse=True)          # top row first
    grid = {(cols.index(round(x_dom[x][0], 6)), rows.index(round(y_dom[y][0], 6))): (x, y) for x, y in panels}
    top = max(d[1] for d in y_dom.values())
    titles = {}                                     # column -> its title (make_subplots' subplot_titles)
    for note in lay.get("annotations", []):
        if note.get("xref") == "paper" and note.get("yref") == "paper" and abs(note.get("y", 0) - top) < 1e-3:
            for c in range(len(cols)):
                x, _ = grid.get((c, 0), (None, None))
                if x and abs(note.get("x", -1) - sum(x_dom[x]) / 2) < 1e-3:
                    titles[c] = note
    row_y = {r: {k: v for k, v in lay[grid[(0, r)][1]].items() if k in ROW_Y_KEYS} if (0, r) in grid else {}
             for r in range(len(rows))}            # what a shared y axis shows in column 1 only

    cursor, gap, tops = 0.0, 0.0, {}                # pixels from the top of the plot area
    for c in range(len(cols)):
        first = True
        for r in range(len(rows)):
            if (c, r) not in grid:
                continue
            cursor += gap                           # the panel above's tick labels (and axis title)
            if first and c in titles:
                cursor += TITLE_LINE_PX * (titles[c].get("text", "").count("<br>") + 1) + 6   # its lines
            first, tops[(c, r)] = False, cursor
            cursor += PANEL_PX
            x = lay[grid[(c, r)][0]]
            gap = XTITLE_PX if (x.get("title") or {}).get("text") else TICKS_PX if x.get("showticklabels", True) else SHARED_X_PX
    height = cursor
    for (c, r), (x, y) in grid.items():
        lay[x]["domain"] = [0.0, 1.0]
        lay[y]["domain"] = [1 - (tops[(c, r)] + PANEL_PX) / height, 1 - tops[(c, r)] / height]
        lay[y].update({"showticklabels": True, **copy.deepcopy({k: v for k, v in row_y[r].items() if k not in lay[y]})})
    for c, note in titles.items():
        note.update(x=0.5, xanchor="center", y=1 - (tops[(c, 0)] - 4) / height, yanchor="bottom")
    margin = {**lay.get("margin", {}), "t": 10}
    margin["b"] = int(gap + _legend_px(out.get("data", [])) + 10)
    lay["margin"] = margin
    lay["legend"] = {**lay.get("legend", {}), "orientation": "h", "x": 0.0, "xanchor": "left",
                     "y": -gap / height, "yanchor": "top"}
    lay["height"] = int(math.ceil(height + margin["t"] + margin["b"]))
    return out


def css_class(key: str) -> str:
    """The CSS class Streamlit gives the element of widget key ``key`` (as its frontend writes it)."""
    return "st-key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key.strip())


def one_x_title(fig):
    """``fig`` (a Plotly figure or its dict) with one x axis title where three or more panels side by side
    repeat the same one: the middle panel keeps it. At 1,024 px with the sidebar open (a projector) each
    of three panels is about 170 px wide, and three copies of "ε spent (log; smaller = more private)"
    ran into each other. Layout only; a figure without such a repeat comes back as it is (as a dict)."""
    out = fig.to_dict() if hasattr(fig, "to_dict") else copy.deepcopy(fig)
    lay = out.get("layout", {})
    titled = [(name, axis) for name, axis in lay.items() if re.fullmatch(r"xaxis\d*", name) and isinstance(axis, dict)
              and (axis.get("title") or {}).get("text")]
    if len(titled) < 3 or len({axis["title"]["text"] for _, axis in titled}) > 1:
        return out
    titled.sort(key=lambda item: sum(item[1].get("domain", [0, 1])))
    for i, (_, axis) in enumerate(titled):
        if i != len(titled) // 2:
            axis["title"] = {**axis["title"], "text": ""}
    return out


def panels_chart(fig, key: str, narrow=None, memo=None, **kwargs) -> None:
    """:func:`.plot.chart` of ``fig`` (key ``key``) on a wide screen, and its panels stacked
    (``narrow``, default :func:`stacked` of ``fig``; key ``key`` + :data:`STACKED`) on a phone: both
    are sent, CSS hides the one that does not fit the screen. With ``memo`` (a key: what the
    figure shows, e.g. its rows' count), ``fig`` is the function that builds it, called, and its
    stacked copy made, only when ``memo`` changes (:func:`.pacing.memo`; a polled page)."""
    if memo is not None:
        from . import pacing

        build = fig
        fig, narrow = pacing.memo(memo, lambda: (lambda built: (one_x_title(built), stacked(built)))(build()))
    else:
        narrow, fig = (stacked(fig) if narrow is None else narrow), one_x_title(fig)
    wide, phone = css_class(key), css_class(key + STACKED)
    st.html(f"<style>@media (width <= {BREAKPOINT_PX}px) {{.{wide} {{display: none;}}}}"
            f"@media (width > {BREAKPOINT_PX}px) {{.{phone} {{display: none;}}}}</style>")
    plot.chart(fig, key, **kwargs)
    plot.chart(narrow, key + STACKED, **kwargs)
