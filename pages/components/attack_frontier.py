"""The Frontier's second measured axis: what an attacker gets, against the same headline ε as accuracy.

Drawing only: the rows' attack columns come from ``sweep --attack`` (:mod:`fedcore.sweep.attack`)
and their seed means from :func:`fedcore.sweep.attack.attack_summary`. One column per threat
model (as the accuracy panels); one row per measure, each named for what it measures
(:data:`ROWS`): re-identification by the informed adversary, membership inference on the trained
model (LiRA, TPR at 1 % FPR), the same TPR for a worst-case record in one upload (local threat model
only); each beside the cap the point's ε proves (dashed) and, per method, its no-privacy value
(dotted). With Plain words on (``plain``), the titles and the caption use no term of art and the
caps are said as odds (:func:`fedcore.accounting.words.odds_sentence`).
"""
from __future__ import annotations

import math

import plotly.graph_objects as go

from fedcore.catalog import method_title
from fedcore.sweep.attack import attack_summary

from .charts import COLORS, layout
from . import narrow
from .frontier import FACETS, facets, threat_of

ROWS = (("matched", "cap", "re-identified: finds the image", "finds which image was used"),
        ("mia_tpr", "mia_cap", "membership: TPR at 1 % FPR", "tells who was in the data"),
        ("worst_tpr", "worst_cap", "worst-case record: TPR at 1 % FPR", "tells it for the easiest record"))
"""Per row: the measured column, its cap's column, the row's title, the title in Plain words."""
PLAIN_X_TITLE = "ε spent (log; smaller = more private)"
NOT_LOCAL = "one upload is not private<br>on its own here: its worst<br>case is the canary audit's"


def attacked(rows: list[dict]) -> bool:
    """Whether any row carries the attack's columns."""
    return any(r.get("reidentified_cap") is not None for r in rows)


def attack_figure(rows: list[dict], revision: str, order: tuple = (), plain: bool = False) -> go.Figure:
    """Attack success vs headline ε (log x), one column per threat model (see the module doc);
    ``order``: the methods in the accuracy figure's order, so a method keeps its colour; ``plain``:
    Plain words' titles."""
    from plotly.subplots import make_subplots

    stats = attack_summary(rows)
    panels = facets(rows) or ["local"]
    fig = make_subplots(rows=len(ROWS), cols=len(panels), shared_yaxes=True, shared_xaxes="columns", vertical_spacing=0.06,
                        horizontal_spacing=0.04, subplot_titles=[f"<b>{FACETS[t][0]}</b>" for t in panels])
    methods = list(dict.fromkeys([*order, *(s["method"] for s in stats)]))
    for col, threat in enumerate(panels, start=1):
        xs = [s["headline"] for s in stats if s["reference"] == "" and s["headline"]
              and threat_of(rows, s["method"]) == threat]
        low, high = (min(xs) / 2.5, max(xs) * 1.6) if xs else (0.1, 10.0)
        for i, m in enumerate(methods):
            if threat_of(rows, m) != threat:
                continue
            for r, (value, cap, _, _) in enumerate(ROWS, start=1):
                _traces(fig, stats, m, COLORS[i % len(COLORS)], value, cap, r, col, first=(col == 1 and r == 1))
        for r in range(1, len(ROWS) + 1):
            fig.update_xaxes(type="log", range=[math.log10(low), math.log10(high)], row=r, col=col)
        fig.update_xaxes(title_text=PLAIN_X_TITLE if plain else "headline ε spent (log)", row=len(ROWS), col=col)
        if threat != "local":
            fig.add_trace(go.Scatter(x=[math.sqrt(low * high)], y=[0.5], mode="text", text=[NOT_LOCAL], showlegend=False,
                                     hoverinfo="skip", textfont=dict(size=11, color="#555")), row=len(ROWS), col=col)
    for r, (_, _, title, words) in enumerate(ROWS, start=1):
        fig.update_yaxes(title_text=words if plain else title, row=r, col=1, range=[0, 1.02], tickformat=".0%")
        fig.update_yaxes(range=[0, 1.02], row=r)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="the most ε allows (cap)",
                             line=dict(color="#555", dash="dash")))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="no privacy",
                             line=dict(color="#555", dash="dot")))
    fig.update_annotations(font=dict(size=13))
    layout(fig, "", revision, height=760, legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.12, yanchor="top"))
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10))
    return fig


def _traces(fig, stats, method, color, value, cap, row, col, first) -> None:
    pts = sorted((s for s in stats if s["method"] == method and s["reference"] == "" and s["headline"]
                  and s[value] is not None), key=lambda s: s["headline"])
    where = dict(row=row, col=col)
    if pts:
        x = [s["headline"] for s in pts]
        fig.add_trace(go.Scatter(x=x, y=[s[value] for s in pts], name=method_title(method), meta=method,
                                 mode="lines+markers", legendgroup=method, showlegend=row == 1,
                                 line=dict(color=color, width=2.5), marker=dict(size=8),
                                 customdata=[[s[cap], s["n"]] for s in pts],
                                 hovertemplate=(f"{method_title(method)}<br>headline ε %{{x:.3g}}<br>measured %{{y:.1%}} "
                                                "(cap %{customdata[0]:.1%}, %{customdata[1]} seeds)<extra></extra>")),
                      **where)
        fig.add_trace(go.Scatter(x=x, y=[s[cap] for s in pts], mode="lines", legendgroup=method, showlegend=False,
                                 line=dict(color=color, dash="dash", width=1.2), hoverinfo="skip"), **where)
        above = [s for s in pts if s["above_cap"]]
        if above:
            fig.add_trace(go.Scatter(x=[s["headline"] for s in above], y=[s[value] for s in above], mode="markers",
                                     marker=dict(symbol="x", size=14, color="#b00020"), name="above the cap (a bug)",
                                     legendgroup="above"), **where)
    ref = next((s for s in stats if s["method"] == method and s["reference"] == "no_privacy" and s[value] is not None),
               None)
    if ref is not None:
        fig.add_trace(go.Scatter(x=[1e-300, 1e300], y=[ref[value]] * 2, mode="lines", legendgroup=method,
                                 showlegend=False, line=dict(color=color, dash="dot", width=1.2),
                                 hovertemplate=f"{method}, no privacy: {ref[value]:.1%}<extra></extra>"), **where)


CAPTION = ("**Re-identified** (first row): how often an attacker who knows a client's images picks the one its update "
           "was computed from (Balle et al. 2022), one image and one step per update (FedSGD: the attack's best case). "
           "**Membership** (second row): membership inference on the trained model (LiRA with shadow runs, Carlini et "
           "al. 2022), true positives at 1 % false positives. **Worst-case record** (third row): the same for the "
           "record the cap is tight for, a worst-case record in one upload (its update at a corner of the clip range; "
           "local threat model only): real digits sit far below the cap, a worst-case record close to it. Dashed: the "
           "most the point's ε allows any attacker (e^ε·k/n + δ; TPR ≤ e^ε·FPR + δ at every δ the run is proven for); "
           "dotted: the same attack without privacy. A point above its dashed line is a bug.")
PLAIN_CAPTION = ("**Finds which image was used** (first row): an attacker who already knows a client's images says "
                 "which one a single update was computed from. **Tells who was in the data** (second row): an "
                 "attacker who trains look-alike models guesses, from the finished model, whether a digit was used "
                 "to train it; shown is how many members it catches while wrongly accusing only 1 in 100 others. "
                 "**Tells it for the easiest record** (third row): the same guess for a record made to stand out as "
                 "much as possible, the case the limit is written for. Dashed: the most the point's ε allows any "
                 "attacker; dotted: the same attacker when nothing is noised. A point above its dashed line is a bug.")


DEMO_DELTA = 1e-5
"""The δ of every attacked sweep's runs (the demo's; a sweep's rows do not carry it): its odds say (ε, δ)."""


def attack_section(rows: list[dict], key: str) -> None:
    """The attack panels of ``rows`` when they were attacked, else of the stored attacked frontier."""
    import streamlit as st

    from fedcore.sweep.attack import STORED_COMMAND, stored_rows

    st.subheader("What ε buys: what an attacker gets", anchor=False)
    shown, stored = (rows, False) if attacked(rows) else (stored_rows(), True)
    if not shown:
        st.caption("Attack the points with `python -m fedcore sweep --attack` to draw this panel.")
        return
    from fedcore.sweep.rows import cells

    from fedcore.accounting.words import odds_sentence, people

    from .form import student_mode

    plain = student_mode()
    order = tuple(dict.fromkeys(s["method"] for s in cells(rows)))   # the accuracy figure's colours
    narrow.panels_chart(lambda: attack_figure(shown, f"attacks-{key}", order, plain),
                        f"fr-attack-chart-{'stored' if stored else key}",
                        memo=("attacks", stored or key, len(shown), order, plain), width="stretch",
                        config={"displaylogo": False})
    st.caption(PLAIN_CAPTION if plain else CAPTION)
    if plain:
        spent = sorted({s["headline"] for s in attack_summary(shown) if s["headline"]})
        if spent:
            st.caption("**The dashed line as odds:** " + "; ".join(
                f"at ε {people(e)}, {odds_sentence(e, DEMO_DELTA)}" for e in (spent[0], spent[-1])) + ".")
    if stored:
        st.caption(f"Stored with the app, for the demo's methods: made by `{STORED_COMMAND}`. "
                   "Attack your own sweep's points with `--attack` on the command line.")
    point_roc(shown, key, plain)


def _point_label(row: dict) -> str:
    from fedcore.accounting.words import people

    what = row["reference"].replace("_", " ") if row.get("reference") else f"ε {people(row['epsilon'])}"
    return f"{method_title(row['method'])} · {what} · seed {row['seed']}"


def roc_points(rows: list[dict]) -> list[dict]:
    """The attacked rows that carry a membership ROC, by method (in their order), then ε (no privacy last)."""
    from fedcore.sweep.attack import membership_of

    order = list(dict.fromkeys(r["method"] for r in rows))
    found = [r for r in rows if membership_of(r)]
    return sorted(found, key=lambda r: (order.index(r["method"]), r.get("epsilon") is None,
                                        r.get("epsilon") or 0.0, r.get("reference") or "", r.get("seed", 0)))


def point_roc(rows: list[dict], key: str, plain: bool) -> None:
    """One attacked point's membership ROC on log-log axes inside the region its ε allows, with TPR at
    0.1 % and 1 % FPR in a table (:mod:`.membership_roc`), the point picked from those that carry one."""
    import streamlit as st

    from fedcore.sweep.attack import membership_of

    from . import membership_roc

    points = roc_points(rows)
    st.markdown("**Who was in the data, one point at a time**" if plain else
                "**Membership ROC of one point** (log-log, inside the region its ε allows)")
    if not points:
        st.caption("These points were attacked before their ROC was kept: attack them again (`python -m fedcore sweep "
                   "--attack`, or *Attack each point*) to draw it.")
        return
    private = [r for r in points if r.get("epsilon") is not None]
    default = max(private, key=lambda r: (r["method"] == points[0]["method"], r["epsilon"])) if private else points[0]
    labels = {_point_label(r): r for r in points}
    pick = st.selectbox("Point" if not plain else "Which run", list(labels), index=list(labels).index(_point_label(default)),
                        key=f"fr-roc-point-{key}",
                        help="Each point's membership attack, drawn on log axes so the rare, confident guesses show.")
    membership_roc.roc_section(membership_of(labels[pick]), f"fr-roc-{key}", plain)
