"""The label-distribution preview of a config's data split (before anything trains)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from fedcore.config import RunConfig
from fedcore.data.root import public_message
from fedcore.errors import DatasetUnavailable, FedcoreError
from fedcore.engine.split import partition_preview

from . import charts, narrow, plot
from .form import student_mode
from .plain import plain


@st.cache_data(show_spinner="Splitting the data…", max_entries=32)
def _split(config_json: str):
    p = partition_preview(RunConfig.from_json(config_json))
    return p.label_counts, p.sizes


@st.cache_resource(show_spinner=False, max_entries=64)
def _figure(config_json: str, key: str, title: str):
    """The heatmap of a split, built once per server (building validates every property:
    a third of a Playground script run before; ``st.plotly_chart`` does not change it)."""
    return charts.label_distribution(_split(config_json)[0], key, title=title)


def _data_fields(cfg: RunConfig) -> str:
    """The config reduced to what decides the split (so other edits hit the cache)."""
    return cfg.replace(rounds=1, privacy={}, local={}, method="").to_json()


def data_error(cfg: RunConfig):
    """The message of a setting that the data rules out (e.g. more clients than samples), or None."""
    try:
        _split(_data_fields(cfg))
    except DatasetUnavailable:
        return None  # not downloaded yet: the run itself fetches it
    except FedcoreError as exc:
        return public_message(exc)
    return None


def split_preview(cfg: RunConfig, key: str) -> None:
    """Heatmap of samples per class per client, and a line on the client sizes."""
    try:
        counts, sizes = _split(_data_fields(cfg))
    except DatasetUnavailable:
        st.caption(f"The {cfg.dataset} files are not on this machine yet: the first run downloads them, "
                   "then the split can be previewed here.")
        return
    except FedcoreError as exc:
        st.caption(f"No split to show: {plain(exc, 400)}")
        return
    title = f"Label distribution per client — {cfg.partition.kind} split of {cfg.dataset}"
    plot.chart(_figure(_data_fields(cfg), key, title), key, width="stretch")
    st.caption(f"{len(sizes)} clients · samples per client: min {sizes.min()}, median "
               f"{int(sorted(sizes)[len(sizes) // 2])}, max {sizes.max()}. Weights such as HW-DPFL's "
               "Hellinger weights are computed from these histograms (which the server thus learns).")


# --- the first screen: a trade-off before any click -----------------------------------------
FIRST_SCREEN = Path(__file__).resolve().parents[2] / "assets" / "first_screen_frontier.json"
"""An equal-privacy frontier of the demo, shipped with the code (the file names the command
that made it; ``tests/test_teaching.py`` retrains one of its points and compares)."""
FIRST_SCREEN_SENTENCE = ("**Each dot is a model trained on the bundled digits by 10 clients**: left = more "
                         "privacy, up = more accurate; **Run** adds yours.")
FIRST_SCREEN_HEIGHT = 330
"""The first screen's figure, sized so that it fits, axes and legend included, under the Playground's
controls at 1280x720 (a projector): panel titles without subtitles, the references in a caption."""


PLAIN_X_TITLE = "ε spent (log; smaller = more private)"
"""The x axis in Plain words: what the number means, not which accountant proved it."""


def compact_figure(rows: list[dict], key: str, height: int, plain: bool):
    """A frontier's figure as the first screen draws it: panel titles large without fine print, the legend
    below, in Plain words the x axis of :data:`PLAIN_X_TITLE`."""
    from .frontier import figure

    fig = figure(rows, [], key)
    for note in fig.layout.annotations:   # the panel titles: the threat model, large, no fine print
        note.text = note.text.split("<br>")[0]
        note.font.size = 15
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", x=0.0, xanchor="left", y=-0.3, yanchor="top", font=dict(size=13)))
    fig.update_xaxes(title_standoff=4, **({"title_text": PLAIN_X_TITLE} if plain else {}))
    return fig


@st.cache_resource(show_spinner=False)
def _first_screen_figure(plain: bool = False):
    from fedcore.sweep.rows import read_frontier

    return compact_figure(read_frontier(FIRST_SCREEN), "first-screen", FIRST_SCREEN_HEIGHT, plain)


@st.cache_resource(show_spinner=False)
def _first_screen_stacked(plain: bool = False) -> dict:
    """The first screen's figure with its panels one under another (a phone, :mod:`.narrow`)."""
    return narrow.stacked(_first_screen_figure(plain))


def first_screen_tradeoff(key: str = "pg-first-frontier") -> None:
    """The stored frontier of the demo and one sentence on what it shows (nothing trains)."""
    try:
        fig = _first_screen_figure(student_mode())
    except FedcoreError:
        return
    st.markdown(FIRST_SCREEN_SENTENCE)
    narrow.panels_chart(fig, key, narrow=_first_screen_stacked(student_mode()), width="stretch")
    st.caption("One panel per threat model: who you trust decides how much privacy costs. Per method, **dashed** = "
               "no privacy, **dotted** = its clipping alone (no noise). Stored with the app "
               "(`assets/first_screen_frontier.json`, 2 seeds per point); the Frontier page trains your own.")
