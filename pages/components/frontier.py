"""The Frontier view's pieces: its sweep's job line, its link, its figure and its lessons.

Drawing only: rows come from :mod:`fedcore.sweep` (trained as a job of the server's one
job manager, :func:`fedcore.sweep.job.start_sweep`); the figure plots what the rows say.
"""
from __future__ import annotations

import math
from typing import Optional

import plotly.graph_objects as go
import streamlit as st

from fedcore.errors import FedcoreError
from fedcore.catalog import method_title
from fedcore.runner.record import JobRecord
from fedcore.sweep.shipped import DEFAULT_SPEC
from fedcore.sweep.rows import accountant_of, cells, method_caveat, pld_differs

from .charts import COLORS, layout

EPS_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 1e4, 3e4, 1e5)
"""ε values the range slider offers (half decades). Under equal privacy local DP on a
650-weight model needs ε in the thousands before it learns; central and record-level DP
learn by ε = 10: the default range spans both."""
DECADES = tuple(e for e in EPS_GRID if abs(math.log10(e) - round(math.log10(e))) < 1e-9)
STEPS = {"decade": "every ×10", "half": "every ×3"}
DEFAULT_RANGE = (DEFAULT_SPEC.epsilons[0], DEFAULT_SPEC.epsilons[-1])
"""The default view is :data:`fedcore.sweep.shipped.DEFAULT_SPEC`, whose frontier ships with the app."""
MAX_SEEDS = 5


def job_line(key: str, status: JobRecord, done: int, total: int, audited: bool) -> None:
    """The sweep's progress (queued: its place in the one queue), with Stop for its owner (or an
    admin) only; anyone else watches it read-only (:func:`.job_progress.job_line`)."""
    from .job_progress import job_line as progress_line

    progress_line(f"sweep:{key}", status, done=done, total=total, noun="sweep",
                  doing="Training and auditing" if audited else "Training", stop_key="fr.stop")


def epsilons_in(low: float, high: float, step: str = "half") -> tuple[float, ...]:
    """The grid's ε in ``[low, high]``: every half decade, or only the decades (``step="decade"``)."""
    grid = DECADES if step == "decade" else EPS_GRID
    return tuple(e for e in grid if low <= e <= high)


def _fmt(e: float) -> str:
    return f"{e:g}"


MATCH_LABELS = {"headline": "Equal privacy: every method spends the same proven ε",
                "target": "Each paper's own ε (methods read it differently)"}


def from_link(params) -> dict:
    """Widget values from the page's query parameters (``preset``, ``methods``, ``eps``,
    ``seeds``, ``audit``, ``match``, ``scenario``); raises FedcoreError naming the parameter
    on a bad value (the value is quoted; the page shows the message through ``plain``)."""
    from fedcore.sweep.scenarios import SCENARIOS
    from fedcore.sweep.spec import parse_epsilons, parse_methods

    out = {}
    for name, known in (("match", MATCH_LABELS), ("scenario", SCENARIOS)):
        if name in params:
            if params[name] not in known:
                raise FedcoreError(f"{name}: {params[name][:40]!r} must be one of: " + ", ".join(known))
            out[name] = params[name]
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
        step = next((k for k in STEPS if list(eps) == list(epsilons_in(eps[0], eps[-1], k))), None)
        if step is None:
            raise FedcoreError("eps: must be a contiguous range of the grid, every decade (1,10,100) "
                               "or every half decade (0.1,0.3,1,3,10)")
        out["range"], out["step"] = (eps[0], eps[-1]), step
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


def to_link(preset: str, methods: list[str], eps: tuple, seeds: int, audit: bool = False,
            match: str = "headline", scenario: str = "iid") -> dict:
    """The link's parameters; ``audit`` appears only when it is on (an old link reads off)."""
    link = {"preset": preset, "scenario": scenario, "match": match, "methods": ",".join(methods),
            "eps": ",".join(map(_fmt, eps)), "seeds": str(seeds)}
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


def _audit_traces(fig: go.Figure, rows: list[dict], method: str, color: str, floor: float, col: int = 1) -> None:
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
                             hoverinfo="skip", showlegend=False, legendgroup=method, name=f"{method} audit"),
                  row=1, col=col)
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
                           "accountant says ε ≤ %{customdata[1]:.3g}<br>accuracy %{y:.3f}<extra></extra>")),
            row=1, col=col)


FACETS = {
    "local": ("Local DP", "the server is not trusted: every upload is private on its own; ε protects a "
                          "client's whole data"),
    "central": ("Central, user-level DP", "the aggregator (or secure aggregation) is trusted with the sum; "
                                          "ε protects a client's whole data"),
    "record": ("Record-level DP", "DP-SGD: the server sees each client's noisy update; ε protects one "
                                  "training record, not a client"),
}
"""Each threat model's facet: its title and, in words, who is trusted and what one unit of ε protects."""
REFERENCE_NOTE = ("Per method: **dashed** = no privacy (no clipping, no noise), **dotted** = clip only (its "
                  "own clipping, noise at ε = 10⁶). The gap no privacy → clip only is what clipping costs; "
                  "clip only → the curve is what the noise costs.")


def threat_of(rows: list[dict], method: str) -> str:
    """The threat model of ``method``'s private rows (``none`` if it has none)."""
    return next((r["threat_model"] for r in rows if r["method"] == method and r["epsilon"] is not None
                 and r["threat_model"] in FACETS), "none")


def facets(rows: list[dict]) -> list[str]:
    """The threat models present, in the order local, central, record."""
    present = {threat_of(rows, m) for m in {r["method"] for r in rows}}
    return [t for t in FACETS if t in present]


def figure(rows: list[dict], paper: list[dict], revision: str) -> go.Figure:
    """Accuracy vs headline ε (log x), one panel per threat model (:data:`FACETS`: ε of
    different threat models never share an axis): per method the seed mean with a ± std
    band, each seed as a dot, its no-privacy (dashed) and clip-only (dotted) references in
    its own panel, the papers' points as stars; an audited sweep adds each run's audited ε
    lower bound (:func:`_audit_traces`)."""
    from plotly.subplots import make_subplots

    from .form import student_mode

    panels = facets(rows) or ["local"]
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[facet_title(t) for t in panels])
    stats = cells(rows)
    methods = list(dict.fromkeys(s["method"] for s in stats))
    for col, threat in enumerate(panels, start=1):
        mine = [r for r in rows if threat_of(rows, r["method"]) == threat]
        x_low, x_high = _x_range(mine, paper if col == 1 else [])
        for i, m in enumerate(methods):
            if threat_of(rows, m) != threat:
                continue
            _method_traces(fig, rows, stats, m, COLORS[i % len(COLORS)], x_low * 1.25, col)
        fig.update_xaxes(type="log", range=[math.log10(x_low), math.log10(x_high)], row=1, col=col,
                         title_text=PLAIN_AXIS if student_mode() else
                         f"headline ε spent (log; {AXIS_ACCOUNTANT[accountant_of(mine)]})")
    _paper_traces(fig, paper)
    if audited_points(rows):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines+markers", name=AUDIT_LEGEND, legendgroup="audit-key",
                                 line=dict(color="#555", width=1.5, dash="dot"),
                                 marker=dict(color="#555", **AUDIT_MARK)))
    fig.update_yaxes(range=[0, 1.02])
    fig.update_yaxes(title_text="final test accuracy", row=1, col=1)
    fig.update_annotations(font=dict(size=12))
    layout(fig, "", revision, height=480,
            legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.18, yanchor="top"))
    lines = max(facet_title(t).count("<br>") for t in panels)      # the subtitle's lines under each title
    fig.update_layout(margin=dict(l=10, r=10, t=30 + SUBTITLE_LINE_PX * lines, b=10))
    return fig


SUBTITLE_PX, SUBTITLE_LINE_PX, SUBTITLE_CHARS = 11, 14, 30
"""A panel's subtitle (who is trusted, what ε protects): its font, line height and line length. Readable
from the back of a classroom, and three panels' lines still fit side by side at 1024 px (about 150 px each)."""


def facet_title(threat: str) -> str:
    """A threat model's panel title: its name, and under it in smaller type who is trusted and what ε protects."""
    name, words = FACETS[threat]
    return f"<b>{name}</b><br><span style='font-size:{SUBTITLE_PX}px'>{_wrap(words, SUBTITLE_CHARS)}</span>"


def _wrap(text: str, width: int = 48) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width))


def _method_traces(fig: go.Figure, rows: list[dict], stats: list[dict], m: str, color: str, floor: float,
                   col: int) -> None:
    """One method in panel ``col``: mean ± std, the seeds, the audit marks, the two references."""
    pts = sorted((s for s in stats if s["method"] == m and s["epsilon"] is not None
                  and s["headline_mean"] is not None and s["headline_mean"] > 0), key=lambda s: s["headline_mean"])
    where = dict(row=1, col=col)
    if pts:
        x = [s["headline_mean"] for s in pts]
        mean = [s["accuracy_mean"] for s in pts]
        lo = [s["accuracy_mean"] - s["accuracy_std"] for s in pts]
        hi = [s["accuracy_mean"] + s["accuracy_std"] for s in pts]
        fig.add_trace(go.Scatter(x=x + x[::-1], y=hi + lo[::-1], mode="lines", fill="toself", fillcolor=color,
                                 opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False,
                                 legendgroup=m), **where)
        match = next((r.get("match") for r in rows if r["method"] == m and r["epsilon"] is not None), "target")
        column = "equal-privacy target" if match == "headline" else "configured ε"
        caveat = method_caveat(rows, m)
        note = f"<br>caveat: {_wrap(caveat)}" if caveat else ""
        fig.add_trace(go.Scatter(
            x=x, y=mean, name=method_title(m), meta=m, mode="lines+markers", legendgroup=m,
            line=dict(color=color, width=2.5),
            marker=dict(size=8), customdata=[[s["epsilon"], s["accuracy_std"], s["n"], pld_text(s)] for s in pts],
            hovertemplate=(f"{method_title(m)} ({m})<br>headline ε %{{x:.3g}} ({accountant_of(rows, m).upper()}; "
                           f"{column} %{{customdata[0]:g}})%{{customdata[3]}}<br>"
                           f"accuracy %{{y:.3f}} ± %{{customdata[1]:.3f}} (%{{customdata[2]}} seeds){note}"
                           "<extra></extra>")),
            **where)
    dots = [r for r in rows if r["method"] == m and r["epsilon"] is not None
            and r["epsilon_accountant"] and r["accuracy"] is not None]
    if dots:
        fig.add_trace(go.Scatter(x=[r["epsilon_accountant"] for r in dots], y=[r["accuracy"] for r in dots],
                                 mode="markers", marker=dict(color=color, size=5, opacity=0.5),
                                 legendgroup=m, showlegend=False, name=f"{m} seeds",
                                 hovertemplate=f"{m} seed %{{text}}<br>ε %{{x:.3g}}<br>acc %{{y:.3f}}<extra></extra>",
                                 text=[r["seed"] for r in dots]), **where)
    _audit_traces(fig, rows, m, color, floor, col)
    for kind, dash in (("no_privacy", "dash"), ("clip_only", "dot")):
        ref = next((s for s in stats if s["method"] == m and s["reference"] == kind), None)
        if ref is not None:
            label = "no privacy" if kind == "no_privacy" else "clip only"
            fig.add_trace(go.Scatter(
                x=[1e-300, 1e300], y=[ref["accuracy_mean"]] * 2, mode="lines", legendgroup=m, showlegend=False,
                line=dict(color=color, dash=dash, width=1.2), name=f"{m} {label}",
                hovertemplate=f"{m}, {label}: accuracy {ref['accuracy_mean']:.3f}<extra></extra>"), **where)


PLAIN_AXIS = "ε spent over the whole run (log; smaller = more private)"
"""The ε axis's title with Plain words on: which ε it is, no accountant named (the table names it)."""
AXIS_ACCOUNTANT = {"pld": "exact PLD accountant", "rdp": "RDP accountant",
                   "pld+rdp": "PLD; RDP where the hover says so: not comparable"}
"""The accountant of a panel's headline ε, on its axis (:func:`fedcore.sweep.rows.accountant_of`)."""


def pld_text(cell: dict) -> str:
    """`` · PLD x`` when the cell's PLD ε differs from its headline (an RDP one) by more than 10 %, else ""."""
    return f" · PLD {cell['pld_mean']:.3g}" if pld_differs(cell) else ""


def _paper_traces(fig: go.Figure, paper: list[dict]) -> None:
    """The papers' reported accuracies at the ε they state (their own accounting), in the first panel."""
    stars = [p for p in paper if p["epsilon"] is not None]
    if stars:
        fig.add_trace(go.Scatter(x=[p["epsilon"] for p in stars], y=[p["accuracy"] for p in stars],
                                 mode="markers", name="paper (its own ε claim)",
                                 marker=dict(symbol="star", size=13, color="#222", line=dict(color="white", width=1)),
                                 text=[p["label"] for p in stars],
                                 hovertemplate="%{text}<br>paper's ε %{x:g}<br>reported accuracy %{y:.3f}<extra></extra>"),
                      row=1, col=1)
    for p in paper:
        if p["epsilon"] is None:
            fig.add_hline(y=p["accuracy"], line=dict(color="#222", dash="dot", width=1), row=1, col=1,
                          annotation_text=f"paper, no privacy {p['accuracy']:.3f}", annotation_position="top left")


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


def guess_note(rows: list[dict], preset: str) -> None:
    """A warning naming the points whose mean accuracy is no better than a blind guess (issue 40 §6)."""
    from fedcore.blind_guess import chance, guessing
    from fedcore.resolve import preset_config

    try:
        dataset = preset_config(preset).dataset
    except FedcoreError:
        return
    points = [(f"{method_title(s['method'])} at ε {_fmt(s['epsilon'])}" if s["epsilon"] is not None
               else f"{method_title(s['method'])} ({s['reference'].replace('_', ' ')})", s["accuracy_mean"])
              for s in cells(rows)]
    found = guessing(points, dataset)
    if found:
        st.warning(f"**No better than a blind guess** ({chance(dataset):.2f}): "
                   + "; ".join(f"{label}: {acc:.3f}" for label, acc in found)
                   + ". These models learned nothing usable: their ε buys privacy for a model nobody would deploy.",
                   icon=":material/casino:")


ATTACK_POINT_SECONDS = (4.0, 9.0)
"""Seconds to train and attack one point (16 shadow runs), low and high: the stored attacked frontier took
6 min 40 s for 70 points on 2 cores (5.7 s each, docs/benchmarks.md), slower under load."""


def attack_estimate(runs: int) -> str:
    """``"120 attacked runs, ~8 min to ~18 min on this machine"``: what "Attack each point" costs, said
    before it starts (as the Papers page says a reproduction's)."""
    from fedcore.reproduce.estimate import rough_label

    low, high = (runs * s for s in ATTACK_POINT_SECONDS)
    return f"{runs} attacked runs, {rough_label(low)} to {rough_label(high)} on this machine"
