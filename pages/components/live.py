"""The live view of one run: progress, status, and its charts, polling the store.

While the run is queued or training, the view is an ``st.fragment`` re-running every
:data:`POLL_SECONDS`; each poll reads only the new events (and so keeps the worker's
heartbeat fresh). When the run ends the whole page reruns once, the timer goes away,
and the finished run stays on screen.
"""
from __future__ import annotations

import streamlit as st

from fedcore.runner import ACTIVE, TERMINAL
from fedcore.runner.results import (BASIC, accountant_views, end_event, epsilon_matrix, method_events_table,
                                    rounds_table, start_event, weights_matrix)

from . import charts, state

POLL_SECONDS = 0.5
DETAIL_SECONDS = 2.0
MAX_CLIENT_LINES = 20
"""Up to this many clients the epsilon chart draws one line each; more: a heatmap."""
VIEW_NAMES = {BASIC: "basic composition", "rdp": "RDP accountant"}


def run_view(run_id: str, key: str = "run") -> None:
    """Show run ``run_id``; polls while it is active.

    Two fragments: the headline (progress, accuracy, privacy spent) every
    :data:`POLL_SECONDS`, the slower-changing details every :data:`DETAIL_SECONDS`, so a
    small machine spends its CPU on training rather than on redrawing charts.
    """
    record = state.manager().store.get_run(run_id)
    if record is None:
        st.info(f"Run `{run_id}` is not in the store (deleted?).")
        return
    active = record["status"] in ACTIVE
    st.fragment(run_every=POLL_SECONDS if active else None)(_headline)(run_id, key, active)
    st.fragment(run_every=DETAIL_SECONDS if active else None)(_details)(run_id, key)


def _headline(run_id: str, key: str, was_active: bool) -> None:
    import sys, time as _t
    _s = _t.perf_counter()
    print(f"HEAD start {_t.time():.2f}", file=sys.stderr, flush=True)
    try:
        _headline2(run_id, key, was_active)
    finally:
        print(f"HEAD end {_t.time():.2f} took {_t.perf_counter() - _s:.3f}", file=sys.stderr, flush=True)


def _headline2(run_id: str, key: str, was_active: bool) -> None:
    events = state.events(run_id)
    record = state.manager().store.get_run(run_id)
    if record is None:
        st.info(f"Run `{run_id}` was deleted.")
        return
    if was_active and record["status"] in TERMINAL:
        st.rerun()  # the whole page: buttons change, the polling timers stop
    status_block(record, events)
    import os
    if any(e.get("type") == "round" for e in events) and not os.environ.get("NOCHARTS"):
        main_charts(record, events, key)


def _details(run_id: str, key: str) -> None:
    events = state.events(run_id)
    record = state.manager().store.get_run(run_id)
    import os
    if record is not None and any(e.get("type") == "round" for e in events) and not os.environ.get("NOCHARTS"):
        detail_charts(record, events, key)


def status_block(record: dict, events: list[dict]) -> None:
    """Progress bar, one status line, and headline numbers."""
    total, done = record.get("rounds") or 1, record.get("rounds_done") or 0
    status = record["status"]
    st.progress(min(done / total, 1.0), text=f"Round {done} / {total} · {status}")
    start, end = start_event(events), end_event(events)
    if status == "queued":
        st.info("Waiting for a worker process…")
    elif status == "running" and start is None:
        st.info("Loading the data and building the model…")
    elif status == "failed":
        st.error(f"Run failed after {done} rounds: {record.get('error') or 'unknown error'}. "
                 "The rounds it finished are kept below.")
    elif status == "stopped":
        reason = record.get("reason") or "stopped"
        st.warning(f"Stopped after {done} of {total} rounds ({reason}).")
    elif status == "finished" and end is not None:
        acc = end.get("final_accuracy")
        st.success(f"Finished {done} rounds in {end.get('elapsed', 0):.1f} s"
                   + (f" · final test accuracy {acc:.3f}" if acc is not None else ""))
    table = rounds_table(events)
    if not len(table):
        return
    last = table.iloc[-1]
    cols = st.columns(4)
    cols[0].metric("Test accuracy", _fmt(last["accuracy"]))
    cols[1].metric("Test loss", _fmt(last["loss"]))
    cols[2].metric("Largest ε spent (basic)", _fmt(last["eps_max"], ".3g"))
    cols[3].metric("Seconds per round", _fmt(table["seconds"].median()))


def _fmt(value, spec: str = ".3f") -> str:
    return "–" if value is None or value != value else format(float(value), spec)


def main_charts(record: dict, events: list[dict], key: str) -> None:
    """Accuracy/loss and the privacy each client has spent, side by side."""
    run_id, total = record["id"], record.get("rounds") or 1
    start = start_event(events) or {}
    n = int(record["config"].get("num_clients", 1))
    rev = f"{key}-{run_id}"
    left, right = st.columns(2)
    with left:
        st.plotly_chart(charts.accuracy_loss(rounds_table(events), total, rev), key=f"{key}-acc",
                        width="stretch")
    with right:
        views = accountant_views(events)
        view = views[0]
        if len(views) > 1:
            view = st.radio("Privacy ledger", views, key=f"{key}-epsview", horizontal=True,
                            format_func=lambda v: VIEW_NAMES.get(v, v),
                            help="Basic composition adds each round's ε; the other views are "
                                 "accountants or the paper's own claimed figures, labelled.")
        rounds, matrix = epsilon_matrix(events, view)
        label = VIEW_NAMES.get(view, view)
        if matrix.size and n <= MAX_CLIENT_LINES:
            fig = charts.epsilon_lines(rounds, matrix, label, start.get("epsilon") or [], rev, total)
        else:
            fig = charts.epsilon_heatmap(rounds, matrix, label, rev)
        st.plotly_chart(fig, key=f"{key}-eps", width="stretch")


def detail_charts(record: dict, events: list[dict], key: str) -> None:
    """Participation and weights, method events (recalls, ...) and method signals."""
    run_id, total = record["id"], record.get("rounds") or 1
    n = int(record["config"].get("num_clients", 1))
    table = rounds_table(events)
    rev = f"{key}-{run_id}"
    left, right = st.columns(2)
    with left:
        w_rounds, weights = weights_matrix(events, n)
        st.plotly_chart(charts.participation(w_rounds, weights, rev), key=f"{key}-weights", width="stretch")
    with right:
        happened = method_events_table(events)
        has_signals = any(c.startswith("signal.") for c in table.columns)
        if len(happened):
            st.plotly_chart(charts.method_events(happened, n, total, rev), key=f"{key}-events", width="stretch")
        if has_signals:
            st.plotly_chart(charts.signals(table, total, rev), key=f"{key}-signals", width="stretch")
        if not len(happened) and not has_signals:
            st.caption("Method events (e.g. ULDP-FED recalls) and signals (clip threshold, Kalman "
                       "gain) appear here for methods that emit them; this one emits none.")
    recalls = happened[happened["kind"] == "recall"] if len(happened) else happened
    if len(recalls):
        with st.expander(f"Recall events ({len(recalls)})"):
            st.dataframe(recalls[["round", "client", "details"]], hide_index=True, width="stretch")


def worker_badge(poll: bool = True) -> None:
    """"Worker ready" once the pre-started worker has imported torch and loaded the data.

    Polls (every second, until ready) only when ``poll``: not while a run is on screen,
    whose own polling must not be interrupted by a second fragment.
    """
    ready = state.manager().warm_ready()
    st.fragment(run_every=None if ready or not poll else 1.0)(_worker_badge_body)()


def _worker_badge_body() -> None:
    if state.manager().warm_ready():
        st.caption(":material/bolt: worker ready: the next run starts at once")
    else:
        st.caption(":material/hourglass_top: starting a worker (importing torch)…")
