"""Plotly figures of a run's tables (from :mod:`fedcore.tables`).

Every figure sets ``uirevision`` so a user's zoom survives live updates, and the pages
draw them with a stable ``key=``. Drawing only: the numbers come from fedcore.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

pio.templates.default = "plotly_white"
"""Every figure's template, set once per process: a new figure takes the default template
without validating it, while ``update_layout(template=...)`` deep-copies the whole template
(a fifth of a Playground script run, under the interpreter lock, was that copy)."""

HEIGHT = 330
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


def layout(fig: go.Figure, title: str, revision: str, height: int = HEIGHT, **kw) -> go.Figure:
    legend = kw.pop("legend", dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)),
                      height=height, margin=dict(l=10, r=10, t=48, b=10),
                      uirevision=revision, legend=legend, **kw)
    return fig


def accuracy_loss(table: pd.DataFrame, total_rounds: int, revision: str) -> go.Figure:
    """Test accuracy (left axis) and loss (right axis) per round."""
    fig = go.Figure()
    if len(table):
        acc = table.dropna(subset=["accuracy"])
        loss = table.dropna(subset=["loss"])
        fig.add_trace(go.Scatter(x=acc["round"], y=acc["accuracy"], name="test accuracy",
                                 mode="lines+markers", line=dict(color=COLORS[0], width=2.5),
                                 marker=dict(size=6)))
        fig.add_trace(go.Scatter(x=loss["round"], y=loss["loss"], name="test loss", mode="lines",
                                 line=dict(color=COLORS[1], dash="dot"), yaxis="y2"))
    return layout(fig, "Test accuracy and loss", revision, height=300,
                   xaxis=dict(title="round", range=[0.5, max(total_rounds, 1) + 0.5]),
                   yaxis=dict(title="accuracy", range=[0, 1.02]),
                   yaxis2=dict(title="loss", overlaying="y", side="right", showgrid=False, rangemode="tozero"))


def epsilon_lines(rounds: Sequence[int], matrix: np.ndarray, view: str, budgets: Sequence[float],
                  revision: str, total_rounds: int, budget_text: str = "budget ε={b}",
                  legend: bool = True) -> go.Figure:
    """Cumulative epsilon of each client (one line per client) under ``view``; a dashed line
    per budget (``budget_text`` with ``{b}`` for the number, written for people: 13,000);
    ``legend=False``: no client legend (the presentation layout: it would need a scrollbar)."""
    from fedcore.accounting.words import people

    fig = go.Figure()
    for i in range(matrix.shape[1] if matrix.ndim == 2 else 0):
        fig.add_trace(go.Scatter(x=list(rounds), y=matrix[:, i], name=f"client {i}", mode="lines",
                                 line=dict(color=COLORS[i % len(COLORS)], width=1.8),
                                 hovertemplate=f"client {i}<br>round %{{x}}<br>ε %{{y:,.3~r}}<extra></extra>"))
    if budgets and len(set(budgets)) <= 3:
        for b in sorted(set(budgets)):
            fig.add_hline(y=b, line=dict(color="#999", dash="dash", width=1),
                          annotation_text=budget_text.format(b=people(b)), annotation_position="top left")
    fig.update_xaxes(title_text="round", range=[0.5, max(total_rounds, 1) + 0.5])
    fig.update_yaxes(title_text="ε spent so far", rangemode="tozero", tickformat=",~r")
    return layout(fig, f"Privacy spent per client ({view})", revision, showlegend=legend and matrix.shape[1] <= 10,
                   legend=dict(orientation="v", x=1.02, xanchor="left", y=1.0, yanchor="top", font=dict(size=11)))


def epsilon_heatmap(rounds: Sequence[int], matrix: np.ndarray, view: str, revision: str) -> go.Figure:
    """Cumulative epsilon as a clients x rounds heatmap (for many clients)."""
    fig = go.Figure(go.Heatmap(z=matrix.T, x=list(rounds), y=list(range(matrix.shape[1])),
                               colorscale="Viridis", colorbar=dict(title="ε"),
                               hovertemplate="client %{y}<br>round %{x}<br>ε %{z:.4g}<extra></extra>"))
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="client", tickformat="d")
    return layout(fig, f"Privacy spent per client ({view})", revision)


def participation(rounds: Sequence[int], weights: np.ndarray, revision: str) -> go.Figure:
    """Aggregation weight of each client per round; blank = not selected / no upload."""
    # One colour per weight to the 3rd decimal, from 0 to the largest weight rounded up: equal
    # weights (1/m, computed in float32) never split into two shades.
    top = float(np.nanmax(weights)) if np.isfinite(weights).any() else 1.0
    fig = go.Figure(go.Heatmap(z=np.round(weights.T, 3), x=list(rounds), y=list(range(weights.shape[1])),
                               colorscale="Blues", zmin=0, zmax=max(np.ceil(top * 100) / 100, 0.01),
                               colorbar=dict(title="weight"),
                               hovertemplate="client %{y}<br>round %{x}<br>weight %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="client", autorange="reversed", tickformat="d")
    return layout(fig, "Client selection and aggregation weights", revision)


def method_events(table: pd.DataFrame, num_clients: int, total_rounds: int, revision: str) -> go.Figure:
    """Timeline of method events (recall, selection, dropout, ...) by round and client."""
    fig = go.Figure()
    for i, (kind, rows) in enumerate(table.groupby("kind", sort=True)):
        y = rows["client"].fillna(-1)
        fig.add_trace(go.Scatter(x=rows["round"], y=y, mode="markers", name=kind,
                                 marker=dict(size=8, symbol="diamond" if kind == "recall" else "circle",
                                             color=COLORS[(i + 3) % len(COLORS)]),
                                 text=rows["details"],
                                 hovertemplate=f"{kind}<br>round %{{x}}<br>client %{{y}}<br>%{{text}}<extra></extra>"))
    fig.update_xaxes(title_text="round", range=[0.5, max(total_rounds, 1) + 0.5])
    fig.update_yaxes(title_text="client (-1 = server)", range=[-1.5, max(num_clients, 1) - 0.5], tickformat="d")
    return layout(fig, "Method events (recall, selection, …)", revision, showlegend=True)


SIGNAL_WORDS = {
    "clip_threshold": "clip threshold C_k (mean)", "eps_round": "ε allotted this round (mean)",
    "noise_multiplier": "noise multiplier", "noise_multiplier_mean": "noise multiplier (mean)",
    "upload_noise_std_mean": "noise std on an upload (mean)", "recall_rate": "share of users who recalled",
    "similarity": "similarity s (mean)", "similarity_min": "similarity s (lowest)", "tau": "recall threshold τ",
    "kalman_gain": "Kalman gain", "clipped_fraction": "share of weights clipped", "empty_round": "empty round",
    "eq3_sensitivity_over_M": "eq. 3 sensitivity / M (mean)",
}
"""How a method's signal is titled on screen (its key, spaced, where it has no entry here)."""
SIGNAL_PX = 95


def signals(table: pd.DataFrame, total_rounds: int, revision: str) -> go.Figure:
    """Each scalar method signal (clip threshold, Kalman gain, ...) per round, one small panel
    each (their scales differ by orders of magnitude), titled in words."""
    from plotly.subplots import make_subplots

    cols = [c for c in table.columns if c.startswith("signal.")]
    names = [c[len("signal."):] for c in cols]
    fig = make_subplots(rows=max(1, len(cols)), cols=1, shared_xaxes=True, vertical_spacing=0.3 / max(1, len(cols)),
                        subplot_titles=[SIGNAL_WORDS.get(n, n.replace("_", " ")) for n in names])
    for i, (col, name) in enumerate(zip(cols, names), start=1):
        fig.add_trace(go.Scatter(x=table["round"], y=table[col], name=name, mode="lines+markers", marker=dict(size=4),
                                 line=dict(color=COLORS[i % len(COLORS)]),
                                 hovertemplate=f"{name}<br>round %{{x}}<br>%{{y:.4~g}}<extra></extra>"), row=i, col=1)
    fig.update_xaxes(range=[0.5, max(total_rounds, 1) + 0.5])
    fig.update_xaxes(title_text="round", row=max(1, len(cols)), col=1)
    fig.update_yaxes(nticks=4, tickformat="~g", rangemode="tozero")   # float jitter of a flat signal stays flat
    fig.update_annotations(font=dict(size=12), x=0.0, xanchor="left")
    return layout(fig, "Method signals", revision, height=70 + SIGNAL_PX * max(1, len(cols)), showlegend=False)


def recall_check(table: pd.DataFrame, total_rounds: int, revision: str) -> go.Figure:
    """ULDP-FED's CheckSimilarity per round (seed 004, eqs 11-13): the mean and the lowest
    similarity of the round's noisy updates to the last global update, the threshold tau
    (a user recalls when its similarity is below it) and the share of users who recalled."""
    fig = go.Figure()
    r = table["round"]
    fig.add_trace(go.Scatter(x=r, y=table["signal.similarity"], name="mean similarity s",
                             mode="lines+markers", marker=dict(size=4), line=dict(color=COLORS[0])))
    if "signal.similarity_min" in table:
        fig.add_trace(go.Scatter(x=r, y=table["signal.similarity_min"], name="lowest s of the round",
                                 mode="lines", line=dict(color=COLORS[0], dash="dot")))
    fig.add_trace(go.Scatter(x=r, y=table["signal.tau"], name="τ: recall below this", mode="lines",
                             line=dict(color=COLORS[3], dash="dash", width=2)))
    if "signal.recall_rate" in table:
        fig.add_trace(go.Bar(x=r, y=table["signal.recall_rate"], name="share of users recalling",
                             marker=dict(color="rgba(127,127,127,0.35)"), yaxis="y2"))
    return layout(fig, "Recall check: similarity to the last global update vs τ", revision,
                   xaxis=dict(title="round", range=[0.5, max(total_rounds, 1) + 0.5]),
                   yaxis=dict(title="similarity s"), height=HEIGHT + 40,
                   legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0.0),
                   yaxis2=dict(title="users recalling", overlaying="y", side="right", range=[0, 1],
                               tickformat=".0%", showgrid=False))


def label_distribution(label_counts: np.ndarray, revision: str, title: str = "Label distribution per client",
                       height: Optional[int] = None) -> go.Figure:
    """Samples of each class (columns) on each client (rows)."""
    counts = np.asarray(label_counts)
    n = counts.shape[0]
    fig = go.Figure(go.Heatmap(z=counts, x=[str(c) for c in range(counts.shape[1])], y=list(range(n)),
                               colorscale="YlGnBu", colorbar=dict(title="samples"),
                               hovertemplate="client %{y}<br>class %{x}<br>%{z} samples<extra></extra>"))
    fig.update_xaxes(title_text="class", type="category")
    fig.update_yaxes(title_text="client", autorange="reversed", tickformat="d")
    return layout(fig, title, revision, height=height or min(600, max(HEIGHT, 60 + 14 * n)))


def compare_accuracy(series: list[dict], revision: str) -> go.Figure:
    """Accuracy per round of several runs or seed groups.

    ``series``: dicts with ``name``, ``band`` (a :func:`~fedcore.tables.mean_band`
    frame) and ``n`` (runs in the group; a band is drawn when > 1).
    """
    fig = go.Figure()
    for i, s in enumerate(series):
        color, band = COLORS[i % len(COLORS)], s["band"]
        if s["n"] > 1:
            fig.add_trace(go.Scatter(x=list(band["round"]) + list(band["round"])[::-1],
                                     y=list(band["high"]) + list(band["low"])[::-1], fill="toself",
                                     fillcolor=_rgba(color, 0.18), line=dict(width=0), hoverinfo="skip",
                                     showlegend=False, name=s["name"] + " range"))
        fig.add_trace(go.Scatter(x=band["round"], y=band["mean"], mode="lines",
                                 name=s["name"] + (f" (mean of {s['n']} seeds)" if s["n"] > 1 else ""),
                                 line=dict(color=color, width=2.2)))
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="test accuracy", range=[0, 1.02])
    return layout(fig, "Accuracy per round", revision, height=460,
                   legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0.0))


def accuracy_vs_epsilon(points: pd.DataFrame, view: str, revision: str) -> go.Figure:
    """Final accuracy against the largest final epsilon, one marker per run; runs that spend no
    finite ε (nothing noised) have no place on the axis, and a note says how many are left out."""
    fig = go.Figure()
    eps = pd.to_numeric(points["epsilon"], errors="coerce")
    left_out = int((~np.isfinite(eps)).sum())
    groups = list(points.groupby("group", sort=False))    # before the filter: a group keeps its colour
    points = points[np.isfinite(eps)]
    if left_out:
        fig.add_annotation(text=f"{left_out} run{'s' if left_out > 1 else ''} without noise (ε = ∞) not drawn",
                           x=0.5, y=0.04 if len(points) else 0.5, xref="paper", yref="paper", showarrow=False,
                           font=dict(size=12, color="#555"))
    for i, (name, _) in enumerate(groups):
        rows = points[points["group"] == name]
        if not len(rows):
            continue
        fig.add_trace(go.Scatter(x=rows["epsilon"], y=rows["accuracy"], mode="markers", name=name,
                                 marker=dict(size=11, color=COLORS[i % len(COLORS)]), text=rows["label"],
                                 cliponaxis=False,
                                 hovertemplate="%{text}<br>ε %{x:.4g}<br>accuracy %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title_text=f"largest final ε per client ({view})", rangemode="tozero")
    fig.update_yaxes(title_text="final test accuracy", range=[0, 1.02])
    return layout(fig, "Accuracy vs privacy spent", revision, height=400, showlegend=False)


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{alpha})"
