"""The Frontier view's pieces: its sweep jobs, its link, its figure and its lessons.

Drawing only: rows come from :mod:`fedcore.sweep` (trained in a background process by
:class:`fedcore.sweep.job.SweepJobs`); the figure plots what the rows say.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import plotly.graph_objects as go
import streamlit as st

from fedcore.errors import FedcoreError
from fedcore.sweep.job import SweepJobs
from fedcore.sweep.rows import summarize

from .charts import COLORS, _layout

EPS_GRID = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
"""Target ε values the range slider offers (log-spaced)."""
DEFAULT_RANGE = (0.1, 100.0)
MAX_SEEDS = 5


@st.cache_resource(show_spinner=False)
def _jobs(folder: str) -> SweepJobs:
    return SweepJobs(folder)


def jobs() -> SweepJobs:
    """The server's sweep jobs; results live beside the run store (``<store>/sweeps``)."""
    from fedcore.runner import default_store_dir

    return _jobs(str(Path(default_store_dir()) / "sweeps"))


def epsilons_in(low: float, high: float) -> tuple[float, ...]:
    return tuple(e for e in EPS_GRID if low <= e <= high)


def _fmt(e: float) -> str:
    return f"{e:g}"


def from_link(params) -> dict:
    """Widget values from the page's query parameters (``preset``, ``methods``, ``eps``,
    ``seeds``); raises FedcoreError naming the parameter on a bad value."""
    from fedcore.sweep.spec import parse_epsilons, parse_methods

    out = {}
    if "preset" in params:
        from fedcore.catalog import PRESETS

        if params["preset"] not in PRESETS:
            raise FedcoreError(f"preset: {params['preset'][:60]!r} is not a known preset")
        out["preset"] = params["preset"]
    if "methods" in params:
        out["methods"] = list(parse_methods(params["methods"]))
    if "eps" in params:
        eps = parse_epsilons(params["eps"])
        off = [e for e in eps if e not in EPS_GRID]
        if off:
            raise FedcoreError(f"eps: {off[0]:g} is not on this page's grid ({', '.join(map(_fmt, EPS_GRID))})")
        if list(eps) != list(epsilons_in(eps[0], eps[-1])):
            raise FedcoreError("eps: must be a contiguous range of the grid, e.g. 0.1,0.3,1,3,10")
        out["range"] = (eps[0], eps[-1])
    if "seeds" in params:
        text = str(params["seeds"])
        if not text.isdigit() or not 1 <= int(text) <= MAX_SEEDS:
            raise FedcoreError(f"seeds: {text[:20]!r} must be a whole number from 1 to {MAX_SEEDS}")
        out["seeds"] = int(text)
    return out


def to_link(preset: str, methods: list[str], eps: tuple, seeds: int) -> dict:
    return {"preset": preset, "methods": ",".join(methods), "eps": ",".join(map(_fmt, eps)), "seeds": str(seeds)}


def figure(rows: list[dict], paper: list[dict], revision: str) -> go.Figure:
    """Accuracy vs headline ε (log x): per method the seed mean with a ± std band, each
    seed as a dot, the no-privacy reference as a dashed line, the papers' points as stars."""
    fig = go.Figure()
    stats = summarize(rows)
    methods = list(dict.fromkeys(s["method"] for s in stats))
    for i, m in enumerate(methods):
        color = COLORS[i % len(COLORS)]
        pts = sorted((s for s in stats if s["method"] == m and s["epsilon"] is not None
                      and s["headline_mean"] is not None and s["headline_mean"] > 0),
                     key=lambda s: s["headline_mean"])
        if pts:
            x = [s["headline_mean"] for s in pts]
            mean = [s["accuracy_mean"] for s in pts]
            lo = [s["accuracy_mean"] - s["accuracy_std"] for s in pts]
            hi = [s["accuracy_mean"] + s["accuracy_std"] for s in pts]
            fig.add_trace(go.Scatter(x=x + x[::-1], y=hi + lo[::-1], fill="toself", fillcolor=color,
                                     opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False,
                                     legendgroup=m))
            fig.add_trace(go.Scatter(
                x=x, y=mean, name=m, mode="lines+markers", legendgroup=m, line=dict(color=color, width=2.5),
                marker=dict(size=8), customdata=[[s["epsilon"], s["accuracy_std"], s["n"]] for s in pts],
                hovertemplate=(f"{m}<br>headline ε %{{x:.3g}} (target %{{customdata[0]:g}})<br>"
                               "accuracy %{y:.3f} ± %{customdata[1]:.3f} (%{customdata[2]} seeds)<extra></extra>")))
        dots = [r for r in rows if r["method"] == m and r["epsilon"] is not None
                and r["epsilon_accountant"] and r["accuracy"] is not None]
        if dots:
            fig.add_trace(go.Scatter(x=[r["epsilon_accountant"] for r in dots], y=[r["accuracy"] for r in dots],
                                     mode="markers", marker=dict(color=color, size=5, opacity=0.5),
                                     legendgroup=m, showlegend=False, name=f"{m} seeds",
                                     hovertemplate=f"{m} seed %{{text}}<br>ε %{{x:.3g}}<br>acc %{{y:.3f}}<extra></extra>",
                                     text=[r["seed"] for r in dots]))
        ref = next((s for s in stats if s["method"] == m and s["epsilon"] is None), None)
        if ref is not None:
            fig.add_hline(y=ref["accuracy_mean"], line=dict(color=color, dash="dash", width=1.2),
                          annotation_text=f"{m}: no privacy {ref['accuracy_mean']:.3f}",
                          annotation_position="bottom right" if i % 2 == 0 else "top left",
                          annotation_font=dict(size=10, color=color))
    stars = [p for p in paper if p["epsilon"] is not None]
    if stars:
        fig.add_trace(go.Scatter(x=[p["epsilon"] for p in stars], y=[p["accuracy"] for p in stars],
                                 mode="markers", name="paper (its own ε claim)",
                                 marker=dict(symbol="star", size=13, color="#222", line=dict(color="white", width=1)),
                                 text=[p["label"] for p in stars],
                                 hovertemplate="%{text}<br>paper's ε %{x:g}<br>reported accuracy %{y:.3f}<extra></extra>"))
    for p in paper:
        if p["epsilon"] is None:
            fig.add_hline(y=p["accuracy"], line=dict(color="#222", dash="dot", width=1),
                          annotation_text=f"paper, no privacy {p['accuracy']:.3f}", annotation_position="top left")
    fig.update_xaxes(type="log", title_text="headline ε spent (largest over clients, rigorous bound; log scale)")
    fig.update_yaxes(title_text="final test accuracy", range=[0, 1.02])
    return _layout(fig, "Accuracy vs privacy spent", revision, height=470,
                   legend=dict(orientation="v", x=1.01, xanchor="left", y=1.0, yanchor="top"))


def table(rows: list[dict]) -> list[dict]:
    """Mean ± std per method (lines) and target ε (columns), headline ε in brackets."""
    stats = summarize(rows)
    eps = sorted({s["epsilon"] for s in stats if s["epsilon"] is not None})
    out = []
    for m in dict.fromkeys(s["method"] for s in stats):
        line = {"method": m}
        for e in eps + [None]:
            s = next((s for s in stats if s["method"] == m and s["epsilon"] == e), None)
            col = "no privacy" if e is None else f"ε {e:g}"
            if s is None:
                line[col] = ""
                continue
            text = f"{s['accuracy_mean']:.3f} ± {s['accuracy_std']:.3f}"
            if e is not None:
                h = s["headline_mean"]
                text += " (ε∞)" if h is None else f" (ε {h:.3g})"
            line[col] = text
        out.append(line)
    return out


LESSONS = {
    "local": "Local DP noises every upload against an untrusted server; the noise only averages out over many "
             "clients (its error on the mean shrinks like 1/√clients), and 10 clients are few.",
    "central": "Central DP trusts the aggregator with the sum: one noise draw covers all sampled users, so it "
               "needs users per round (here every client takes part) and rounds to average it away.",
    "record": "Record-level DP (DP-SGD) protects single training examples, not a whole client: its noise "
              "per step is scaled by the per-sample clip and divided by the batch.",
}


def lesson(method: str, check: dict) -> Optional[str]:
    """Why a method's frontier does (not) show the trade-off, in words; None if it does."""
    if check["visible"]:
        return None
    parts = []
    if check["low"] > 0.3:
        infl = check["inflation"]
        parts.append(f"even its smallest target ε = {check['low_epsilon']:g} still reaches "
                     f"{check['low']:.0%}")
        if infl and infl > 10:
            parts.append(f"because its ε is a per-coordinate, per-round figure: the rigorous headline it "
                         f"actually spends is {infl:,.0f}× larger")
    if check["gap"] > 0.05:
        parts.append(f"at ε = {check['high_epsilon']:g} it is still {check['gap']:.0%} below no privacy")
    why = LESSONS.get(check["threat_model"], "")
    return f"**{method}**: " + "; ".join(parts) + (". " + why if why else ".")


def finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))
