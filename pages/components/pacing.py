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

:func:`polling_fragment` is how a live view polls: an ``st.fragment`` with ``run_every``,
in a container of its own. Why the container: Streamlit 1.67 drops, when a fragment run
starts, every queued message of that fragment that has not reached the browser yet
(``ForwardMsgQueue.clear(fragment_ids_this_run=...)``), including the ones the full run
just before it wrote while running the fragment inline; that full run's
``FINISHED_SUCCESSFULLY`` still arrives, so the browser removes the fragment's old
container as stale and the later siblings move up one place. The fragment run then
writes at the old index: over a sibling, or past the end of its block, and the page
dies ("Bad delta path index 3 (should be between [0, 2])": React unmounts the whole
app, a blank page). It happens when a full run (a click, or the run view's own rerun
when a run ends) is followed by a fragment the browser asked for meanwhile before the
server's event loop flushed the full run's messages, so it grows with server load: the
"lost result" of the load test (one session of four, blank, although its run finished).
As the only child of its own container a fragment can only be written at index 0 of
a block the full run emptied: no sibling moves, the fragment run fills it again. The
same drop keeps the fragment's references to messages the browser has cached
(``ref_hash``, not a delta), which then point into a container the browser no longer
has ("Cannot set a node at a delta path", the same blank page): ``.streamlit/config.toml``
turns those references off (``global.minCachedMessageSize``).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable

import streamlit as st

from fedcore.events import RunState
from fedcore.runner.record import JobRecord

RELAXED_UP_TO = 4
"""Up to this many active runs the views poll at their base interval."""
MAX_POLL_S = 3.0
REBUILD_PER_ACTIVE_RUN_S = 0.25
"""Seconds between rebuilds of one chart, per active run on the server (at least the poll)."""
CACHE_SIZE = 512


def polling_fragment(body: Callable, run_every):
    """``body`` as an ``st.fragment`` re-running every ``run_every`` s (None: never), in a
    container of its own (see the module docstring); call the result with ``body``'s arguments.

    >>> pacing.polling_fragment(_headline, 0.5)(run_id, key)   # doctest: +SKIP
    """
    def run(*args, **kwargs):
        with st.container():
            return st.fragment(run_every=run_every)(body)(*args, **kwargs)

    return run


def active_runs() -> int:
    from . import state

    return state.manager().active_count()


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


def memo(key: tuple, build: Callable[[], object]):
    """``build()``, made once per ``key`` on this server (the figure cache's, least recently used
    dropped): a page polled every second while a sweep trains rebuilds its figures only when the
    key changes (its rows), not on every poll; the frontier's two copies (wide and stacked) cost
    the Streamlit server about half a core when rebuilt each second (docs/benchmarks.md)."""
    cached = _cache().get(("memo", key))
    if cached is None:
        cached = build()
        _cache().put(("memo", key), cached)
    return cached


DETAIL_SCALE = 4.0
"""Slow-changing charts (privacy spent, participation, events) rebuild 4x less often."""


def figure(record: JobRecord, run: RunState, chart: str, build: Callable[[], object], *options):
    """The figure ``build()`` makes for ``record``'s ``chart``, rebuilt only when it is due
    (the accuracy chart ``"acc"`` at :func:`rebuild_seconds`, the others 4x less often)."""
    rounds, ended = len(run.rounds), run.end is not None
    key = (record.id, chart, options)
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
