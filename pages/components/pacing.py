"""Keep a shared server responsive: pace the live views by how busy the server is.

Why the health endpoint stalled with 20 sessions: every live view re-ran its fragment
every 0.5 s and rebuilt its Plotly figures from scratch (``go.Figure`` validates every
trace and layout property: 20-90 ms per figure on this machine, in the server process,
under the interpreter lock). Twenty sessions asked for more than a core of such work per
second, so the web server's own thread (which answers ``/_stcore/health`` and every
websocket message) waited for the lock for seconds.

Two rules bound that work:

- :func:`poll_seconds`: the polling interval grows with the number of runs queued or
  training (``base`` up to :data:`RELAXED_UP_TO` active runs, then proportionally).
- :func:`figure`: a figure is rebuilt only when its run has new rounds *and* the last
  build is at least :func:`rebuild_seconds` old (or the run ended); otherwise the
  server-wide cache hands back the figure already built. The round counter, status and
  numbers above the charts still update on every poll.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable

import streamlit as st

RELAXED_UP_TO = 4
"""Up to this many active runs the views poll at their base interval."""
MAX_POLL_S = 3.0
REBUILD_PER_ACTIVE_RUN_S = 0.25
"""Seconds between rebuilds of one chart, per active run on the server (at least the poll)."""
CACHE_SIZE = 512


def active_runs() -> int:
    from . import state

    manager = state.manager()
    return manager.queue_length() + len(manager._procs)


def poll_seconds(base: float) -> float:
    """``base`` while the server is quiet; longer (up to :data:`MAX_POLL_S`) when busy."""
    return min(max(base, MAX_POLL_S), base * max(1.0, active_runs() / RELAXED_UP_TO))


def rebuild_seconds(scale: float = 1.0) -> float:
    """Least seconds between two builds of one chart: ``scale x`` 0.25 s per active run."""
    return max(0.5, REBUILD_PER_ACTIVE_RUN_S * active_runs()) * scale


class _FigureCache:
    """``(run, chart, options) -> (rounds shown, built at, figure)``, least recently used dropped."""

    def __init__(self, size: int):
        self.size, self._items, self._lock = size, OrderedDict(), threading.Lock()

    def get(self, key):
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _cache() -> _FigureCache:
    return _FigureCache(CACHE_SIZE)


DETAIL_SCALE = 4.0
"""Slow-changing charts (privacy spent, participation, events) rebuild 4x less often."""


def figure(record: dict, events: list[dict], chart: str, build: Callable[[], object], *options):
    """The figure ``build()`` makes for ``record``'s ``chart``, rebuilt only when it is due
    (the accuracy chart ``"acc"`` at :func:`rebuild_seconds`, the others 4x less often)."""
    rounds = sum(1 for e in events if e.get("type") == "round")
    ended = bool(events) and events[-1].get("type") == "end"
    key = (record["id"], chart, options)
    cached = _cache().get(key)
    now = time.monotonic()
    if cached is not None:
        shown, built, fig, was_ended = cached
        if shown == rounds and was_ended == ended:
            return fig
        if not ended and now - built < rebuild_seconds(1.0 if chart == "acc" else DETAIL_SCALE):
            return fig
    fig = build()
    _cache().put(key, (rounds, now, fig, ended))
    return fig
