"""Audited privacy on the dashboard: what an empirical lower bound on ε means, and a small
audit of the mechanism the page shows (numbers from :mod:`fedcore.audit`; drawing only)."""
from __future__ import annotations

import json
import math

import plotly.graph_objects as go
import streamlit as st

from fedcore.audit.run import audit_release
from fedcore.errors import ConfigError

from . import pacing, plot
from .plain import plain
from .press import pressed, start_job

DRAWS = 10000

EXPLANATION = """\
The **accountant's ε is an upper bound**: a proof that *no* attacker, however clever, can learn
more than e^ε about which input the client held. An **audit** gives the matching **lower bound**:
it plays one real attacker against the real mechanism. It feeds the mechanism two inputs as far
apart as the clipping allows (or, to catch a mechanism that forgets to clip, even further out),
draws {draws:,} outputs for each, and guesses from each output which input produced it. For any
(ε, δ)-DP mechanism the attacker's error rates must obey FPR + e^ε·FNR ≥ 1 − δ, so the rates it
actually achieves force

  ε ≥ ln((1 − δ − FNR) / FPR),

with the rates replaced by their 95 % Clopper–Pearson upper limits, so the bound holds with 95 %
confidence.

- The mechanism's **true ε lies between the two numbers**.
- If the lower bound ever **exceeds** the upper bound, the accounting or the code is wrong: this
  is how audits catch bugs. If it exceeds a **paper's claimed ε**, the claim is false for the
  mechanism as it runs.
- A lower bound far below the upper bound proves nothing: the proof may be loose, or this
  attacker may be weak. **An audit can show that a mechanism leaks; it can never show that it
  is private.**
- Finitely many draws can only show so much: with n draws per input the bound cannot pass
  about ln(n / 3.7) (the "most these draws can show" line).

`python -m fedcore audit --preset NAME` audits a whole configuration: one report for local
mechanisms, or canaries inserted into one training run for central and record-level ones.
"""


@st.cache_data(show_spinner="Auditing: drawing outputs from the mechanism…", max_entries=64)
def _audit(name: str, eps: float, delta: float, settings_json: str, seed: int) -> dict:
    r = audit_release(name, eps, delta, json.loads(settings_json), trials=DRAWS, seed=seed)
    return {"lower": r.epsilon_lower, "estimate": r.epsilon_estimate, "upper": r.accountant_epsilon,
            "basis": r.accountant_basis, "claims": r.claims, "ceiling": r.ceiling, "inputs": r.inputs,
            "fpr": r.test.fpr, "fnr": r.test.fnr, "seconds": r.seconds}


def _metrics(numbers: list) -> None:
    """``(label, value, help)`` metrics in a row that wraps: each label whole at any width (three columns
    cut "accountant's ε (upper bound)" in an 800 px window with the sidebar open)."""
    row = st.container(horizontal=True, gap="large")
    for label, value, help in numbers:
        row.metric(label, value, help=help, width="content")


def _fmt(x) -> str:
    return "∞" if x is None or math.isinf(x) else f"{x:.3g}"


def bounds_chart(lower: float, upper: float, ceiling: float, claim=None) -> go.Figure:
    """ε axis: the interval [audited lower bound, accountant's upper bound] with the markers."""
    top = max(v for v in (lower, upper if math.isfinite(upper) else 0, claim or 0, 1e-3)) * 1.25
    fig = go.Figure()
    if math.isfinite(upper):
        fig.add_shape(type="rect", x0=lower, x1=upper, y0=-0.3, y1=0.3, fillcolor="#2ca02c", opacity=0.18,
                      line_width=0)
    marks = [("audited lower bound (95 %)", lower, "#1f77b4", "triangle-right"),
             ("accountant's upper bound", upper if math.isfinite(upper) else top, "#d62728", "triangle-left")]
    if claim is not None:
        marks.append(("paper's claim", claim, "#7f7f7f", "diamond"))
    for label, x, colour, symbol in marks:
        fig.add_trace(go.Scatter(x=[x], y=[0], mode="markers", name=f"{label}: {_fmt(x)}",
                                 marker=dict(color=colour, size=16, symbol=symbol)))
    if ceiling < top:
        fig.add_vline(x=ceiling, line=dict(color="black", dash="dot", width=1))
    fig.update_yaxes(visible=False, range=[-1, 1])
    fig.update_xaxes(title_text="ε (the true ε of one release lies in the green band)", range=[0, top])
    fig.update_layout(height=200, margin=dict(l=10, r=10, t=10, b=10), template="plotly_white",
                      uirevision="mech-audit", legend=dict(orientation="h", yanchor="top", y=-0.55, x=0))
    return fig


def lower_bound_explainer(name: str, eps: float, delta: float, settings: dict, seed: int = 0) -> None:
    """The Mechanisms page's section on audited privacy for the release it shows."""
    st.subheader("Audited privacy: an empirical lower bound on ε", anchor="audited-privacy")  # the Frontier links here
    with st.expander("What a lower bound means", expanded=False):
        st.markdown(EXPLANATION.format(draws=DRAWS))
    try:
        r = _audit(name, float(eps), float(delta), json.dumps(settings, sort_keys=True), int(seed))
    except (ValueError, ConfigError) as err:
        st.info(f"No audit for this setting: {plain(err, 400)}")
        return
    claim_label, claim = next(((k, v) for k, v in r["claims"].items() if k.lower().startswith("paper")),
                              (None, None))
    _metrics([("paper's claim", _fmt(claim) if claim is not None else "—",
               claim_label or "This mechanism's paper states no separate figure for one release."),
              ("accountant's ε (upper bound)", _fmt(r["upper"]), r["basis"]),
              ("audited ε (lower bound, 95 %)", _fmt(r["lower"]),
               f"Best threshold test on {DRAWS:,} draws per input; the most these draws can show "
               f"is {_fmt(r['ceiling'])}.")])
    plot.chart(bounds_chart(r["lower"], r["upper"], r["ceiling"], claim), "mech-audit", width="stretch")
    st.caption(f"Inputs: {r['inputs']}. The attacker's error rates on the held-out draws: FPR {r['fpr']:.4f}, "
               f"FNR {r['fnr']:.4f}. One release of one number, δ = {delta:.0e}.")
    if r["lower"] > r["upper"]:
        st.error("The audited lower bound exceeds the accountant's ε: the accounting or the mechanism is wrong.")
    elif claim is not None and r["lower"] > claim:
        st.warning("The audited lower bound exceeds the paper's claimed ε: the claim does not hold for this release.")


def three_numbers(result: dict, key: str = "audit") -> None:
    """The three numbers of any :meth:`fedcore.audit.run.AuditResult.to_dict` (a run, a frontier
    point): the paper's claim, the accountant's upper bound and the audited lower bound."""
    def shown(name):
        return "∞" if result.get(name + "_infinite") else _fmt(result.get(name)) if result.get(name) is not None else "—"

    _metrics([("paper's claim", shown("paper_claim"), result.get("paper_claim_label") or "none stated"),
              ("accountant's ε (upper bound)", shown("accountant_epsilon"), result.get("accountant_basis")),
              (f"audited ε (lower bound, {result.get('confidence', 0.95):.0%})", shown("audited_epsilon"),
               f"{result.get('kind')}" + (f"; {result.get('estimate_basis')}: {shown('audited_estimate')}"
                                          if result.get("audited_estimate") is not None else ""))])
    st.caption(f"Scope: {result.get('scope')}. {result.get('verdict', '')}.")


# --- auditing a finished run (the Playground): a job of the server's one job manager -------
def run_audit_panel(cfg, key: str = "pg-audit") -> None:
    """"Audit this run": the paper's claim, the accountant's ε and an audited lower bound side
    by side. The audit is a job (queued beside runs, under the same limits, owned by who
    pressed the button: seconds to minutes); the panel polls."""
    from fedcore.runner.audits import AUDIT, DEFAULT_TRIALS, start_audit

    from .host import manager, viewer

    with st.expander("Audited privacy: the accountant's upper bound against an empirical lower bound",
                     icon=":material/policy:"):
        st.caption("An audit attacks the real mechanism (one report for local DP, canaries in one "
                   "training run for central and record-level DP) and turns the attacker's success into "
                   "an ε that holds with 95 % confidence. It costs time, so it is optional; the Mechanisms "
                   "page explains what the lower bound means.")
        if not AUDIT.asked(manager(), cfg, DEFAULT_TRIALS):
            if pressed(st, "Audit this run", key=f"{key}-go", icon=":material/play_arrow:"):
                start_job(lambda: start_audit(manager(), cfg, DEFAULT_TRIALS, owner=viewer().owner))
            return
        done = AUDIT.result(manager().store_dir, cfg, DEFAULT_TRIALS)
        pacing.polling_fragment(_audit_state, pacing.poll_seconds(2.0) if done is None else None)(
            cfg, DEFAULT_TRIALS, key)


def _audit_state(cfg, trials: int, key: str) -> None:
    from fedcore.runner.audits import AUDIT

    from .host import manager
    from .queue_words import result_job_state

    def show(done: dict) -> None:
        if "error" in done:
            st.warning(f"The audit could not run: {plain(done['error'], 400)}")
        else:
            three_numbers(done, key=key)

    result_job_state(AUDIT.id(cfg, trials), AUDIT.result(manager().store_dir, cfg, trials), key,
                     "Auditing in the background… this page stays live.", "Stop the audit",
                     "The audit was stopped before it finished.", show,
                     "Another visitor's audit: you can watch it; only they can stop it.")
