"""Mechanisms: one client releases one number through one privacy mechanism.

Sidebar: the mechanism, its budget (eps, and delta where it applies), the true value w
and the mechanism's clipping settings. Main: what the server receives (draws from the
real registered mechanism beside the analytic law), how that noise shrinks as eps grows,
and what eps means for this mechanism in words. The numbers come from fedcore.teaching.
"""
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # `streamlit run pages/mechanisms.py` on its own
    sys.path.insert(0, str(ROOT))

from fedcore import teaching  # noqa: E402
from fedcore.errors import ConfigError  # noqa: E402
from fedcore.mechanisms import MECHANISMS  # noqa: E402

BLUE, ORANGE, GREY = "#1f77b4", "#ff7f0e", "#7f7f7f"
HEIGHT = 360
GRID_DRAWS = 5000          # draws per eps for the empirical points of the second chart

st.set_page_config(layout="wide")


def _layout(fig: go.Figure, title: str, key: str, **kw) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)),
                      height=HEIGHT, margin=dict(l=10, r=10, t=56, b=10), template="plotly_white",
                      uirevision=key, bargap=0.0, font=dict(size=13),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0), **kw)
    return fig


def output_chart(name: str, law: teaching.OutputLaw, samples: np.ndarray, w: float, clip: tuple) -> go.Figure:
    """The released value's distribution: empirical draws against the analytic law."""
    fig = go.Figure()
    if law.kind == "mass":
        freq = [float(np.mean(samples == p)) for p in law.points]
        labels = [f"{p:+.3g}" for p in law.points]
        fig.add_trace(go.Bar(x=labels, y=freq, name=f"empirical ({len(samples):,} draws)", marker_color=BLUE,
                             text=[f"{f:.3f}" for f in freq], textposition="outside"))
        fig.add_trace(go.Bar(x=labels, y=list(law.probs), name="analytic", marker_color=ORANGE,
                             text=[f"{p:.3f}" for p in law.probs], textposition="outside"))
        fig.update_layout(barmode="group", bargap=0.35)
        fig.update_xaxes(title_text="released value", type="category")
        fig.update_yaxes(title_text="probability", range=[0, 1.1])
    else:
        lo, hi = law.plot_range()
        centres, density, width = teaching.histogram_density(samples, lo, hi, bins=60)
        fig.add_trace(go.Bar(x=centres, y=density, width=width, name=f"empirical ({len(samples):,} draws)",
                             marker=dict(color=BLUE, opacity=0.55, line=dict(width=0)),
                             hovertemplate="%{x:.3g}: density %{y:.3g}<extra></extra>"))
        x = np.linspace(lo, hi, 400)
        fig.add_trace(go.Scatter(x=x, y=law.density(x), name=f"analytic ({law.scale_name} = {law.scale:.3g})",
                                 mode="lines", line=dict(color=ORANGE, width=2.5)))
        fig.update_xaxes(title_text="released value", range=[lo, hi])
        fig.update_yaxes(title_text="density", rangemode="tozero")
    if name != "ldp_sign":       # ldp_sign releases signs: w lives on another scale
        fig.add_vrect(x0=clip[0], x1=clip[1], fillcolor=GREY, opacity=0.08, line_width=0,
                      annotation_text="clip range", annotation_position="top left")
        if law.kind != "mass":
            fig.add_vline(x=w, line=dict(color="black", dash="dash", width=1.5),
                          annotation_text=f"true w = {w:.3g}", annotation_position="top right")
    return fig


def error_chart(demo: teaching.ScalarDemo, curve_eps, curve, points_eps, points, eps: float,
                current: float) -> go.Figure:
    """The price of privacy against eps: analytic curve and empirical points."""
    sign = demo.error == teaching.SIGN_ERROR
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=curve_eps, y=curve, name="analytic", mode="lines",
                             line=dict(color=ORANGE, width=2.5)))
    fig.add_trace(go.Scatter(x=points_eps, y=points, name=f"empirical ({GRID_DRAWS:,} draws each)",
                             mode="markers", marker=dict(color=BLUE, size=9)))
    fig.add_trace(go.Scatter(x=[eps], y=[current], name=f"current ε = {eps:g}", mode="markers",
                             marker=dict(color="black", size=13, symbol="star")))
    fig.update_xaxes(title_text="ε (log scale)", type="log")
    if sign:
        fig.update_yaxes(title_text="P(wrong sign)", range=[0, 0.55])
    else:
        fig.update_yaxes(title_text="variance (log scale)", type="log", exponentformat="power")
    return fig


# --- sidebar: what to release, and how -----------------------------------------------------
with st.sidebar:
    st.header("Mechanism")
    name = st.selectbox("Mechanism", list(teaching.SCALAR_DEMOS), key="mech.name",
                        help="Registered mechanisms that can release a single number. dp_sgd and "
                             "hw_gaussian calibrate to what local training can move, so they are not shown.")
    demo = teaching.scalar_demo(name)
    entry = MECHANISMS.entry(name)
    st.caption(f"{entry.summary}  \n*Paper:* {entry.paper}")
    eps = st.select_slider("Privacy budget ε", options=list(teaching.EPSILON_CHOICES), value=1.0,
                           key="mech.eps", format_func=lambda v: f"{v:g}",
                           help="Per release of this one number. Smaller ε: more privacy, more noise.")
    delta = None
    if demo.needs_delta:
        delta = st.select_slider("δ", options=list(teaching.DELTA_CHOICES), value=1e-5, key="mech.delta",
                                 format_func=lambda v: f"{v:.0e}",
                                 help="Probability mass on which the e^ε bound may fail.")
    with st.expander("Clipping and calibration", expanded=False):
        settings = {}
        for knob in demo.knobs:
            cast = int if knob.integer else float
            settings[knob.name] = st.number_input(knob.label, min_value=cast(knob.low), max_value=cast(knob.high),
                                                  value=cast(knob.default), step=cast(knob.step),
                                                  format="%d" if knob.integer else "%.4g",
                                                  key=f"mech.{name}.{knob.name}", help=knob.help)
        if demo.fixed:
            st.caption("Fixed for this demo: " + ", ".join(f"{k} = {v}" for k, v in demo.fixed.items()))
    lo, hi = teaching.clip_range(name, settings)
    w_key = f"mech.{name}.w"
    if w_key not in st.session_state or not lo <= st.session_state[w_key] <= hi:
        st.session_state[w_key] = round(hi / 2, 6)
    w = st.slider("True value w", min_value=float(lo), max_value=float(hi), step=float((hi - lo) / 200),
                  key=w_key, format="%.4g", help="The number the client holds, inside the clip range.")
    with st.expander("Sampling", expanded=False):
        n = st.select_slider("Draws N", options=[1000, 5000, 20000, 100000], value=20000, key="mech.n",
                             format_func=lambda v: f"{v:,}")
        seed = st.number_input("Seed", min_value=0, max_value=2 ** 31 - 1, value=0, step=1, key="mech.seed")

# --- main: the release, the price, the meaning -------------------------------------------
st.title("Mechanisms")
st.caption(f"One client releases one number w through **{name}**: left, what the server receives "
           "(draws from the real mechanism against the analytic law); right, how the noise shrinks as ε grows.")

try:
    teaching.check_budget(eps, delta)
    law = teaching.output_law(name, w, eps, delta or 1e-5, settings)
    samples = teaching.sample_outputs(name, w, eps, delta or 1e-5, settings, n=int(n), seed=int(seed))
    curve_eps = np.geomspace(*teaching.EPSILON_RANGE, 80)
    curve = teaching.error_curve(name, w, curve_eps, delta or 1e-5, settings)
    points_eps = np.geomspace(*teaching.EPSILON_RANGE, 9)
    points = teaching.empirical_error(name, w, points_eps, delta or 1e-5, settings, n=GRID_DRAWS, seed=int(seed))
    current = float(teaching.error_curve(name, w, [eps], delta or 1e-5, settings)[0])
    reading = teaching.epsilon_reading(name, w, eps, delta or 1e-5, settings)
except (ValueError, ConfigError) as err:
    st.error(f"Cannot show this setting: {err}")
    st.stop()

st.markdown(reading.guarantee)
left, right = st.columns(2)
left.plotly_chart(_layout(output_chart(name, law, samples, w, (lo, hi)),
                          f"What the server receives for w = {w:.3g}", "mech-output"),
                  key="mech-output", width="stretch")
sign = demo.error == teaching.SIGN_ERROR
right.plotly_chart(_layout(error_chart(demo, curve_eps, curve, points_eps, points, eps, current),
                           "Wrong-sign probability vs ε" if sign else "Variance of the released value vs ε",
                           "mech-error"),
                   key="mech-error", width="stretch")

st.subheader(f"What ε = {eps:g} means here")
st.markdown(reading.meaning)
st.markdown("\n".join(f"- {line}" for line in reading.worked))
if reading.warning:
    st.warning(reading.warning, icon=":material/warning:")
