"""Mechanisms: one client releases one number through one privacy mechanism.

Sidebar: the mechanism, its budget (eps, and delta where it applies), the true value w
and the mechanism's clipping settings. Main: what the server receives (draws from the
real registered mechanism beside the analytic law), how that noise shrinks as eps grows,
and what eps means for this mechanism in words. The numbers come from fedcore.teaching.
"""
import numpy as np
import plotly.graph_objects as go
import streamlit as st

from fedcore import teaching
from fedcore.errors import ConfigError
from fedcore.accounting.headline import THREAT_MODEL_NAMES, threat_model_text
from fedcore.mechanisms import MECHANISMS
from pages.components import plot, routing
from pages.components.audit import lower_bound_explainer

routing.through_router()

BLUE, ORANGE, GREY = "#1f77b4", "#ff7f0e", "#7f7f7f"
HEIGHT = 370
GRID_DRAWS = 5000          # draws per eps for the empirical points of the second chart
KEPT = "mech.kept"         # the page's widget values, kept across page switches
EPS_TICKS = [0.1, 0.2, 0.5, 1, 2, 5, 10]


def _layout(fig: go.Figure, key: str, **kw) -> go.Figure:
    fig.update_layout(height=HEIGHT, margin=dict(l=10, r=10, t=30, b=10), template="plotly_white",
                      uirevision=key, font=dict(size=13),
                      legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0), **kw)
    return fig


def output_chart(name: str, law: teaching.OutputLaw, samples: np.ndarray, w: float, clip: tuple) -> go.Figure:
    """The released value's distribution: empirical draws against the analytic law.

    A law on signs (its support is ±1 whatever ``w``: the error it is judged by is a wrong
    sign) is drawn as two categories; any other law on the real line, beside the clip range."""
    signs = teaching.scalar_demo(name).error == teaching.SIGN_ERROR
    fig = go.Figure()
    empirical = f"empirical ({len(samples):,} draws)"
    if law.kind == "mass":
        freq = teaching.mass_frequencies(samples, law.points)
        if signs:                   # signs live on another scale than w: categories, grouped
            x, width, offsets = [f"{p:+g}" for p in law.points], None, (None, None)
            fig.update_layout(barmode="group", bargap=0.3)
        else:                       # two-point: on the real line, beside the clip range and w
            x, width = list(law.points), 0.13 * (law.points[1] - law.points[0])
            offsets = (-width, 0.0)
            fig.update_layout(barmode="overlay")
        for label, y, colour, offset in ((empirical, freq, BLUE, offsets[0]),
                                         ("analytic", law.probs, ORANGE, offsets[1])):
            fig.add_trace(go.Bar(x=x, y=list(y), name=label, marker_color=colour, width=width, offset=offset,
                                 # upright in (or, for a short bar, above) its own bar: two neighbours' labels
                                 # never run into each other on a narrow screen
                                 text=[f"{v:.3f}" for v in y], textposition="auto", textangle=-90,
                                 insidetextanchor="end", textfont=dict(size=12),
                                 hovertemplate="%{x}: P = %{y:.4f}<extra></extra>"))
        fig.update_yaxes(title_text="probability", range=[0, 1.12])
        if signs:
            fig.update_xaxes(title_text="released sign", type="category")
        else:
            fig.update_xaxes(title_text="released value", range=law.plot_range(), zeroline=False)
    else:
        lo, hi = law.plot_range()
        centres, density, width = teaching.histogram_density(samples, lo, hi, bins=60)
        fig.add_trace(go.Bar(x=centres, y=density, width=width, name=empirical,
                             marker=dict(color=BLUE, opacity=0.55, line=dict(width=0)),
                             hovertemplate="%{x:.3g}: density %{y:.3g}<extra></extra>"))
        x = np.linspace(lo, hi, 400)
        fig.add_trace(go.Scatter(x=x, y=law.density(x), name=f"analytic, {law.scale_name} = {law.scale:.3g}",
                                 mode="lines", line=dict(color=ORANGE, width=2.5)))
        fig.update_xaxes(title_text="released value", range=[lo, hi])
        fig.update_yaxes(title_text="density", rangemode="tozero")
    if not signs:                # the input's scale: clip range and true w, named in the legend
        fig.add_vrect(x0=clip[0], x1=clip[1], fillcolor=GREY, opacity=0.15, line_width=0, layer="below")
        fig.add_vline(x=w, line=dict(color="black", dash="dash", width=1.5))
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"true w = {w:.3g}",
                                 line=dict(color="black", dash="dash", width=1.5)))
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"clip range [{clip[0]:.3g}, {clip[1]:.3g}]",
                                 marker=dict(symbol="square", size=12, color=GREY, opacity=0.3)))
    return fig


def error_chart(demo: teaching.ScalarDemo, curve_eps, curve, points_eps, points, eps: float,
                current: float) -> go.Figure:
    """The price of privacy against eps: analytic curve and empirical points."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=curve_eps, y=curve, name="analytic", mode="lines",
                             line=dict(color=ORANGE, width=2.5)))
    fig.add_trace(go.Scatter(x=points_eps, y=points, name=f"empirical ({GRID_DRAWS:,} draws each)",
                             mode="markers", marker=dict(color=BLUE, size=9)))
    fig.add_trace(go.Scatter(x=[eps], y=[current], name=f"current ε = {eps:g}", mode="markers",
                             marker=dict(color="black", size=14, symbol="star")))
    fig.update_xaxes(title_text="ε (log scale)", type="log", tickvals=EPS_TICKS,
                     ticktext=[f"{t:g}" for t in EPS_TICKS])
    if demo.error == teaching.SIGN_ERROR:
        fig.update_yaxes(title_text="P(wrong sign)", range=[0, 0.55])
    else:
        fig.update_yaxes(title_text="variance (log scale)", type="log", dtick=1, exponentformat="power")
    return fig


def kept(key: str, default):
    """``key`` for a widget whose value survives a visit to another page (Streamlit drops
    the state of widgets it does not draw), seeded with ``default`` the first time."""
    if key not in st.session_state:
        st.session_state[key] = st.session_state.setdefault(KEPT, {}).get(key, default)
    return key


# --- sidebar: what to release, and how -----------------------------------------------------
main = st.container()  # the main area, for a mechanism the page cannot draw
with st.sidebar:
    st.header("Release one number")
    linked = st.query_params.get("mechanism")      # ?mechanism=laplace opens that demo
    demos = teaching.SCALAR_DEMOS
    name = st.selectbox("Mechanism", MECHANISMS.names(),
                        key=kept("mech.name", linked if linked in MECHANISMS else "two_point"),
                        format_func=lambda m: m if m in demos else f"{m} (no one-number demo)",
                        help="Every registered mechanism. Those that calibrate to what local training can "
                             "move (dp_sgd, hw_gaussian) or add nothing (none) supply no one-number law.")
    st.query_params["mechanism"] = name
    entry = MECHANISMS.entry(name)
    summary = entry.summary.replace("*", r"\*")       # a literal product, not markdown emphasis
    st.caption(f"{summary}  \n*Paper:* {entry.paper or '–'}")
    kind = MECHANISMS.get(name).threat_model
    st.caption(f"**Threat model: {THREAT_MODEL_NAMES.get(kind, kind)}.** {threat_model_text(kind)}")
    if name not in demos:
        main.title("Mechanisms")
        main.info(f"**{name}** supplies no one-number law, so this page has nothing to draw for it; "
                "the Playground trains it.")
        st.stop()
    demo = teaching.scalar_demo(name)
    eps = st.select_slider("Privacy budget ε", options=list(teaching.EPSILON_CHOICES), key=kept("mech.eps", 1.0),
                           format_func=lambda v: f"{v:g}",
                           help="Per release of this one number. Smaller ε: more privacy, more noise.")
    delta = None
    if demo.needs_delta:
        delta = st.select_slider("δ", options=list(teaching.DELTA_CHOICES), key=kept("mech.delta", 1e-5),
                                 format_func=lambda v: f"{v:.0e}",
                                 help="Probability mass on which the e^ε bound may fail.")
    with st.expander("Clipping and calibration", expanded=False):
        settings = {}
        for knob in demo.knobs:
            cast = int if knob.integer else float
            settings[knob.name] = st.number_input(knob.label, min_value=cast(knob.low), max_value=cast(knob.high),
                                                  step=cast(knob.step), format="%d" if knob.integer else "%.4g",
                                                  key=kept(f"mech.{name}.{knob.name}", cast(knob.default)),
                                                  help=knob.help)
        if demo.fixed:
            st.caption("Fixed for this demo: " + ", ".join(f"{k} = {v}" for k, v in demo.fixed.items()))
    lo, hi = teaching.clip_range(name, settings)
    w_key = kept(f"mech.{name}.w", round(hi / 2, 6))
    if not lo <= st.session_state[w_key] <= hi:        # the clip range just shrank
        st.session_state[w_key] = round(hi / 2, 6)
    w = st.slider("True value w", min_value=float(lo), max_value=float(hi), step=float((hi - lo) / 200),
                  key=w_key, format="%.4g", help="The number the client holds, inside the clip range.")
    with st.expander("Sampling", expanded=False):
        n = st.select_slider("Draws N", options=[1000, 5000, 20000, 100000], key=kept("mech.n", 20000),
                             format_func=lambda v: f"{v:,}")
        seed = st.number_input("Seed", min_value=0, max_value=2 ** 31 - 1, step=1, key=kept("mech.seed", 0))
st.session_state[KEPT].update({k: v for k, v in st.session_state.items() if k.startswith("mech.") and k != KEPT})

# --- main: the release, the price, the meaning -------------------------------------------
st.title("Mechanisms")
st.caption(f"One client releases one number w through **{name}**: left, what the server receives "
           "(draws from the real mechanism against the analytic law); right, how the noise shrinks as ε grows.")

dlt = 1e-5 if delta is None else delta         # pure-eps mechanisms ignore delta
try:
    teaching.check_budget(eps, delta)
    law = teaching.output_law(name, w, eps, dlt, settings)
    samples = teaching.sample_outputs(name, w, eps, dlt, settings, n=int(n), seed=int(seed))
    curve_eps = np.geomspace(*teaching.EPSILON_RANGE, 80)
    curve = teaching.error_curve(name, w, curve_eps, dlt, settings)
    points_eps = np.geomspace(*teaching.EPSILON_RANGE, 9)
    points = teaching.empirical_error(name, w, points_eps, dlt, settings, n=GRID_DRAWS, seed=int(seed))
    current = float(teaching.error_curve(name, w, [eps], dlt, settings)[0])
    reading = teaching.epsilon_reading(name, w, eps, dlt, settings)
except (ValueError, ConfigError) as err:
    st.error(f"Cannot show this setting: {err}")
    st.stop()

st.markdown(reading.guarantee)
left, right = st.columns(2)
left.markdown(f"**What the server receives when the client holds w = {w:.3g}**")
plot.chart(_layout(output_chart(name, law, samples, w, (lo, hi)), "mech-output"), "mech-output", left,
           width="stretch")
sign = demo.error == teaching.SIGN_ERROR
right.markdown("**Probability that the released sign is wrong, against ε**" if sign
               else "**Variance of the released value, against ε**")
plot.chart(_layout(error_chart(demo, curve_eps, curve, points_eps, points, eps, current), "mech-error"),
           "mech-error", right, width="stretch")

st.subheader(f"What ε = {eps:g} means here")
st.markdown(reading.meaning)
st.markdown("\n".join(f"- {line}" for line in reading.worked))
if reading.warning:
    st.warning(reading.warning, icon=":material/warning:")
lower_bound_explainer(name, eps, dlt, settings, int(seed))
