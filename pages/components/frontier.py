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
    ``seeds``, ``audit``); raises FedcoreError naming the parameter on a bad value."""
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
    if "audit" in params:
        text = str(params["audit"])
        if text not in ("0", "1"):
            raise FedcoreError(f"audit: {text[:20]!r} must be 1 (audit each point) or 0")
        out["audit"] = text == "1"
    return out


def to_link(preset: str, methods: list[str], eps: tuple, seeds: int, audit: bool = False) -> dict:
    """The link's parameters; ``audit`` appears only when it is on (an old link reads off)."""
    link = {"preset": preset, "methods": ",".join(methods), "eps": ",".join(map(_fmt, eps)), "seeds": str(seeds)}
    return {**link, "audit": "1"} if audit else link


AUDIT_MARK = dict(symbol="diamond-open", size=11, line=dict(width=2))
NOTHING_FOUND = dict(symbol="triangle-left-open", size=11, line=dict(width=2))
AUDIT_LEGEND = "audited ε ≥ (lower bound, 95 %): ◇ joined to its run"


def audited_points(rows: list[dict]) -> list[dict]:
    """The private rows with an audited lower bound and a finite headline: the ones drawn."""
    return [r for r in rows if r.get("epsilon_audited") is not None and r["epsilon"] is not None
            and r["epsilon_accountant"] and r["accuracy"] is not None]


def _x_range(rows: list[dict], paper: list[dict]) -> tuple[float, float]:
    """The log axis' ends (ε): every headline, positive audited bound and paper ε, with a margin;
    the left end leaves room for the "audit found nothing" marks (lower bound 0)."""
    xs = [r["epsilon_accountant"] for r in rows if r["epsilon"] is not None and r["epsilon_accountant"]]
    xs += [r["epsilon_audited"] for r in audited_points(rows) if r["epsilon_audited"] > 0]
    xs += [p["epsilon"] for p in paper if p["epsilon"]]
    if not xs:
        return 0.1, 10.0
    return min(xs) / 2.5, max(xs) * 1.6


def _audit_note(row: dict) -> str:
    """The hover's words on how a run was audited, and whether its draws capped what it could show."""
    note = f"({row.get('audit_kind') or 'audit'})"
    ceiling = row.get("audit_ceiling")
    if ceiling is not None and row["epsilon_audited"] >= 0.99 * ceiling:
        note += f"<br>= the most these draws can show ({ceiling:.3g}): more draws could show more"
    return note


def _audit_traces(fig: go.Figure, rows: list[dict], method: str, color: str, floor: float) -> None:
    """Each audited run of ``method``: a hollow diamond at (audited ε, accuracy) joined by a dotted
    segment to the run's own point (headline ε, accuracy); a bound of 0 (the audit found
    nothing) is a hollow ◁ at the axis' left end. They belong to the method's legend group:
    clicking the method in the legend hides its audit marks with its curve."""
    mine = [r for r in audited_points(rows) if r["method"] == method]
    if not mine:
        return
    seg_x, seg_y = [], []
    for r in mine:
        seg_x += [max(r["epsilon_audited"], floor), r["epsilon_accountant"], None]
        seg_y += [r["accuracy"], r["accuracy"], None]
    fig.add_trace(go.Scatter(x=seg_x, y=seg_y, mode="lines", line=dict(color=color, width=1.5, dash="dot"),
                             hoverinfo="skip", showlegend=False, legendgroup=method, name=f"{method} audit"))
    for found, mark in ((True, AUDIT_MARK), (False, NOTHING_FOUND)):
        pts = [r for r in mine if (r["epsilon_audited"] > 0) == found]
        if not pts:
            continue
        fig.add_trace(go.Scatter(
            x=[r["epsilon_audited"] if found else floor for r in pts], y=[r["accuracy"] for r in pts],
            mode="markers", marker=dict(color=color, **mark), showlegend=False, legendgroup=method,
            name=f"{method} audited", text=[_audit_note(r) for r in pts],
            customdata=[[r["epsilon_audited"], r["epsilon_accountant"], r["epsilon"], r["seed"]] for r in pts],
            hovertemplate=(f"{method} (target ε %{{customdata[2]:g}}, seed %{{customdata[3]}})<br>"
                           "audit shows ε ≥ %{customdata[0]:.3g} %{text}<br>"
                           "accountant says ε ≤ %{customdata[1]:.3g}<br>accuracy %{y:.3f}<extra></extra>")))


def figure(rows: list[dict], paper: list[dict], revision: str) -> go.Figure:
    """Accuracy vs headline ε (log x): per method the seed mean with a ± std band, each
    seed as a dot, the no-privacy reference as a dashed line, the papers' points as stars;
    an audited sweep adds each run's audited ε lower bound (:func:`_audit_traces`)."""
    fig = go.Figure()
    x_low, x_high = _x_range(rows, paper)
    floor = x_low * 1.25
    refs: list[str] = []   # the no-privacy lines' labels: one line above the plot, not one per line
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
            fig.add_trace(go.Scatter(x=x + x[::-1], y=hi + lo[::-1], mode="lines", fill="toself", fillcolor=color,
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
        _audit_traces(fig, rows, m, color, floor)
        ref = next((s for s in stats if s["method"] == m and s["epsilon"] is None), None)
        if ref is not None:
            fig.add_hline(y=ref["accuracy_mean"], line=dict(color=color, dash="dash", width=1.2))
            refs.append(f"<span style='color:{color}'>{m} {ref['accuracy_mean']:.3f}</span>")
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
    if audited_points(rows):
        # a key to the marks, in no method's group (clicking it hides only itself)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines+markers", name=AUDIT_LEGEND, legendgroup="audit-key",
                                 line=dict(color="#555", width=1.5, dash="dot"),
                                 marker=dict(color="#555", **AUDIT_MARK)))
    if refs:
        fig.add_annotation(xref="paper", yref="paper", x=1.0, y=1.0, xanchor="right", yanchor="bottom",
                           showarrow=False, font=dict(size=11), text="dashed, no privacy: " + " · ".join(refs))
    title = "headline ε spent (largest over clients, rigorous bound; log scale)"
    if audited_points(rows):
        title = "ε, log scale: ● headline ε spent (the accountant's upper bound), ◇ audited lower bound"
    fig.update_xaxes(type="log", range=[math.log10(x_low), math.log10(x_high)], title_text=title)
    fig.update_yaxes(title_text="final test accuracy", range=[0, 1.02])
    return _layout(fig, "Accuracy vs privacy spent", revision, height=470,
                   legend=dict(orientation="v", x=1.01, xanchor="left", y=1.0, yanchor="top"))


def table(rows: list[dict]) -> list[dict]:
    """Mean ± std per method (lines) and target ε (columns; one seed: no ± std), headline ε in
    brackets (``ε ≤``: the accountant's upper bound), and an audited sweep's smallest audited lower
    bound over the seeds (``≥``)."""
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
            text = f"{s['accuracy_mean']:.3f}" + (f" ± {s['accuracy_std']:.3f}" if s["n"] > 1 else "")
            audited = s["audited_min"]
            if e is not None:
                h = s["headline_mean"]
                bound = "∞" if h is None else f"{h:.3g}"
                text += f" (ε ≤ {bound}, ≥ {audited:.3g})" if audited is not None else f" (ε {bound})"
            elif audited is not None:
                text += f" (ε ≥ {audited:.3g})"
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


MECHANISMS_AUDIT = "mechanisms?mechanism=two_point#audited-privacy"
"""The Mechanisms page's section on what a lower bound means (relative: works under any base path).
It names the mechanism the page would pick anyway: a page that rewrites its query string drops the
``#`` part before the heading can scroll to it."""
AUDIT_CAPTION = (
    "**◇ Audited ε: a lower bound.** A real attack on the run's mechanism (one client's report for local "
    "DP; canary clients or records inserted into one extra training run for central and record-level DP) "
    "shows that the run leaks *at least* this much, with 95 % confidence. **● The accountant's ε is an upper "
    "bound**: a proof that no attacker can learn more. The true ε lies on the dotted segment between them. "
    "A lower bound above the upper bound would mean the accounting or the code is wrong; a gap proves "
    "nothing (the proof may be loose, or the attack weak): an audit can show a leak, never privacy. "
    "◁ at the left edge: the attack found nothing (lower bound 0). "
    f"[What a lower bound means]({MECHANISMS_AUDIT}) (Mechanisms page)."
)


def audit_notes(rows: list[dict], found: list[dict]) -> None:
    """Under the chart of an audited frontier: what the ◇ marks mean, with a link to the Mechanisms
    page's section, the points whose audit could not run, and the audits that contradict a stated ε
    (``found``: :func:`fedcore.sweep.audit.findings`)."""
    st.caption(AUDIT_CAPTION)
    failed = [r for r in rows if r.get("audit_error")]
    if failed:
        st.info(f"{len(failed)} point(s) have no audit: {failed[0]['audit_error']}", icon=":material/info:")

    def where(f: dict) -> str:
        target = "no privacy" if f["epsilon"] is None else f"target ε {f['epsilon']:g}"
        return f"{f['method']} ({target}, seed {f['seed']})"

    violations = [f for f in found if f["kind"] == "violation"]
    claims = [f for f in found if f["kind"] == "claim"]
    if violations:
        f = violations[0]
        st.error(f"The audit exceeds the accountant's ε at {len(violations)} point(s), e.g. {where(f)}: "
                 f"ε ≥ {f['audited']:.3g} against ≤ {f['bound']:.3g}. The accounting or the code is wrong there.",
                 icon=":material/error:")
    if claims:
        shown = "; ".join(f"{where(f)}: paper claims {f['bound']:.3g}, audit shows ≥ {f['audited']:.3g}"
                          for f in claims[:3])
        st.warning(f"The audit refutes the paper's claimed ε at {len(claims)} point(s): {shown}"
                   f"{f'; and {len(claims) - 3} more' if len(claims) > 3 else ''}. "
                   "The claim does not hold for the mechanism as it runs "
                   "(the accountant's rigorous ε still does).", icon=":material/gavel:")
