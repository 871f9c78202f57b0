"""After Run: where the run landed, on a stored frontier of its own recipe only (issue 40 §5).

A run is drawn on a frontier only when the frontier's runs share its recipe: every setting but the
privacy budget (and the seed) equals the recipe the frontier's sweep built for the run's method
(:meth:`fedcore.sweep.spec.SweepSpec.method_config`). Otherwise one sentence says which settings
differ. The marker always lies inside its axis: the panel's ε axis grows to hold it, and a run that
spent no finite ε (no privacy) is marked by an arrow at the axis' right end. Drawing only: the rows are
the stored sweeps' (:data:`STORED`), the run's ε spent and accuracy its events'.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import plotly.graph_objects as go
import streamlit as st

from fedcore.errors import FedcoreError
from fedcore.runner.record import JobRecord

from . import narrow

ASSETS = Path(__file__).resolve().parents[2] / "assets"
FIRST_SCREEN_SPEC = dict(preset="demo", methods=("ldp_fl", "dp_fedavg", "kdp_fl"),
                         epsilons=(1.0, 10.0, 100.0, 1000.0, 1e4), seeds=2, match="headline")
"""The sweep of ``assets/first_screen_frontier.json`` (its ``command``)."""
STORED = ((ASSETS / "first_screen_frontier.json", "the demo's frontier (10 clients)"),
          (ASSETS / "frontier" / "default.json", "the Frontier page's demo frontier (five methods)"),
          (ASSETS / "frontier" / "attack_digits.json", "the frontier of the attack_digits recipe"))
"""The stored frontiers a run may land on, and how the page names each."""
IGNORED = ("privacy.epsilon", "seed", "device")
"""What may differ between a run and its frontier's recipe: the budget the frontier varies, the seed,
where it trains."""
HEIGHT = 330
SENTENCE = "**Where your run landed** on a frontier of its own recipe (★, in the panel of its threat model):"


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and k not in ("options", "mechanism_options", "aggregator_options"):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


@st.cache_resource(show_spinner=False)
def _stored() -> list[tuple[str, str, object, list]]:
    """``(path, name, spec, rows)`` of every readable stored frontier."""
    import json

    from fedcore.sweep.job import spec_from_dict
    from fedcore.sweep.rows import read_frontier
    from fedcore.sweep.spec import SweepSpec

    out = []
    for path, name in STORED:
        try:
            rows = read_frontier(path)
            data = json.loads(path.read_text(encoding="utf-8"))
            spec = spec_from_dict(data["spec"]) if "spec" in data else SweepSpec(**FIRST_SCREEN_SPEC)
        except (FedcoreError, OSError, ValueError, KeyError, TypeError):
            continue
        out.append((str(path), name, spec, rows))
    return out


@st.cache_resource(show_spinner=False, max_entries=16)
def _recipe(path: str, method: str) -> Optional[dict]:
    """The flat config the frontier at ``path`` trains ``method`` with (None: not one of its methods)."""
    for p, _, spec, _ in _stored():
        if p == path and method in spec.methods:
            return _flat(spec.method_config(method).to_dict())
    return None


def differences(config: dict, recipe: dict) -> dict:
    """``{setting: (the run's, the frontier's)}`` of every setting but :data:`IGNORED` that differs."""
    mine = _flat(config)
    return {k: (mine.get(k), recipe.get(k)) for k in sorted(set(mine) | set(recipe))
            if k not in IGNORED and mine.get(k) != recipe.get(k)}


def own_frontier(config: dict) -> tuple[Optional[tuple], str]:
    """``((path, name, rows), "")`` of the stored frontier of ``config``'s recipe, else ``(None, why)``."""
    method = config.get("method") or ""
    nearest = None
    for path, name, spec, rows in _stored():
        recipe = _recipe(path, method)
        if recipe is None:
            continue
        diff = differences(config, recipe)
        if not diff:
            return (path, name, rows), ""
        if nearest is None or len(diff) < len(nearest[1]):
            nearest = (name, diff)
    if nearest is None:
        return None, (f"No stored frontier trains {method or 'this method'}, so your run is not drawn on one: "
                      "a frontier of another method would compare different recipes. The Frontier page trains one.")
    name, diff = nearest
    shown = "; ".join(f"{k} {_v(a)} (frontier: {_v(b)})" for k, (a, b) in list(diff.items())[:4])
    more = f" and {len(diff) - 4} more" if len(diff) > 4 else ""
    return None, (f"Your run is not drawn on a frontier: the nearest stored one, {name}, trains a different recipe "
                  f"({shown}{more}), so its curve would not say what your settings buy. Press Run on a preset's own "
                  "settings to land on its frontier, or train yours on the Frontier page.")


def _v(x) -> str:
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(map(_v, x)) + "]" if len(x) <= 3 else f"[{len(x)} values]"
    return f"{x:g}" if isinstance(x, float) else str(x)


def figure(rows: list[dict], threat: str, eps: Optional[float], acc: float, plain: bool):
    """The stored frontier (compact, as the first screen) with the run's ★ in panel ``threat``, its axis grown to
    hold it; ``eps`` None or ∞: an arrow at the right end. None when the frontier has no panel ``threat``."""
    from .frontier import facets
    from .preview import compact_figure

    panels = facets(rows)
    if threat not in panels:
        return None
    fig = compact_figure(rows, f"your-run-{threat}", HEIGHT, plain)
    col = panels.index(threat) + 1
    axis = "" if col == 1 else str(col)
    xaxis = fig.layout[f"xaxis{axis}"]
    low, high = (10 ** v for v in xaxis.range)
    finite = eps is not None and 0 < eps < math.inf
    if finite:
        low, high = min(low, eps / 2.5), max(high, eps * 2.5)
        xaxis.range = [math.log10(low), math.log10(high)]
    y = min(max(acc, 0.04), 0.98)
    text_at = "bottom center" if y > 0.8 else "top center"
    hover = "your run<br>ε spent %{x:.3g}<br>accuracy %{y:.3f}<extra></extra>"
    if finite:
        fig.add_trace(go.Scatter(x=[eps], y=[y], mode="markers+text", text=["your run"], textposition=text_at,
                                 name="your run", meta="your-run", xaxis=f"x{axis}", yaxis=f"y{axis}", cliponaxis=False,
                                 marker=dict(symbol="star", size=18, color="#111", line=dict(color="white", width=1)),
                                 hovertemplate=hover))
    else:   # no finite ε: an arrow at the right end of the axis, pointing off it
        edge = 10 ** (math.log10(low) + 0.93 * (math.log10(high) - math.log10(low)))
        fig.add_trace(go.Scatter(x=[edge], y=[y], mode="markers+text", text=["your run: ε = ∞ →"],
                                 textposition="middle left", name="your run (no finite ε: off the axis)",
                                 meta="your-run", xaxis=f"x{axis}", yaxis=f"y{axis}",
                                 marker=dict(symbol="triangle-right", size=18, color="#111"),
                                 hovertemplate=f"your run<br>no finite ε spent<br>accuracy {acc:.3f}<extra></extra>"))
    return fig


def your_run_on_frontier(record: JobRecord, run, key: str = "pg-your-run") -> None:
    """After Run: the run on the stored frontier of its own recipe, or one sentence on why it is not drawn."""
    from fedcore.accounting.headline import decode_epsilon

    from .form import student_mode

    last = run.last_round
    eps = decode_epsilon(last.epsilon_headline_run) if last else None
    acc = run.end.final_accuracy if run.end else None
    if acc is None or (eps is not None and eps != eps):
        return
    found, why = own_frontier(record.config or {})
    if found is None:
        st.caption(why)
        return
    path, name, rows = found
    fig = figure(rows, run.threat_model, eps, acc, student_mode())
    if fig is None:
        st.caption(f"Your run's threat model ({run.threat_model}) has no panel on {name}, so it is not drawn there.")
        return
    st.markdown(SENTENCE)
    narrow.panels_chart(fig, key, width="stretch")
    if eps is None or math.isinf(eps):
        st.caption("Your run spent no finite ε (nothing was noised): the arrow marks it off the right end of the axis, "
                   "at its accuracy.")
    elif len(set(_flat(record.config or {}).get("privacy.epsilon") or [])) > 1:
        st.caption(f"Stored: {name}, every client at the column's ε. Your clients spent different ε; the ★ sits at the "
                   "largest, the ε the run's guarantee is stated with.")
    else:
        st.caption(f"Stored: {name}, each point a run of your recipe at the column's ε.")
