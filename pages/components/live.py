"""The live view of one run: progress, status, and its charts, polling the store.

While the run is queued or training, the view is an ``st.fragment`` re-running every
:data:`POLL_SECONDS`; each poll reads only the new events (and so keeps the worker's
heartbeat fresh). When the run ends the whole page reruns once, the timer goes away,
and the finished run stays on screen.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import streamlit as st

from fedcore.config import RunConfig
from fedcore.runner import ACTIVE, TERMINAL
from fedcore.accounting.headline import THREAT_MODEL_NAMES, format_epsilon, threat_model_text
from fedcore.accounting.words import (EMPTY_RUN_TEXT, epsilon_unit, odds_sentence, people, plain_threat_text,
                                     run_delta, why_they_differ)
from fedcore.blind_guess import guess_note
from fedcore.events import RunState
from fedcore.runner.record import EqualPrivacy, JobRecord
from fedcore.tables import (BASIC, HEADLINE, accountant_views, epsilon_matrix, method_events_table,
                                    privacy_summary, rounds_table, weights_matrix)

from . import charts, host, pacing, plot, presentation, state, tempo
from .queue_words import queue_text  # job_progress reads it here too

POLL_SECONDS = 0.5
DETAIL_SECONDS = 2.0
MAX_CLIENT_LINES = 20
"""Up to this many clients the epsilon chart draws one line each; more: a heatmap."""
VIEW_NAMES = {HEADLINE: "headline ε (rigorous, for the threat model)", BASIC: "basic composition",
              "pld": "exact (PLD) accountant", "rdp": "RDP accountant"}
PLAIN_VIEW_NAMES = {HEADLINE: "ε spent (proven)", BASIC: "ε spent, each round's added up"}
"""The same ledger views in Plain words (the others keep their labelled names)."""


def view_name(view: str) -> str:
    """A ledger view's name, in Plain words when they are on."""
    from .form import student_mode

    return (student_mode() and PLAIN_VIEW_NAMES.get(view)) or VIEW_NAMES.get(view, view)


def run_view(run_id: str, key: str = "run", teaching: bool = False, present: bool = False) -> None:
    """Show run ``run_id``; polls while it is active.

    ``teaching``: the owner of an active run gets Pause / Step / slow motion
    (:mod:`pages.components.tempo`). ``present``: the presentation layout
    (:mod:`pages.components.presentation`): accuracy and privacy side by side, large type.

    Two fragments poll at their own pace while the run is active: the headline (round
    counter, status, numbers, accuracy chart) every :data:`POLL_SECONDS`, the rest
    (privacy spent, participation, method events) every :data:`DETAIL_SECONDS`, so a
    small machine spends its CPU on training rather than on redrawing slow-changing charts.

    Streamlit 1.67 redraws a Plotly chart from scratch when its data changes (the
    element id hashes the figure), which resets a zoom; the "Live charts" toggle pauses
    the chart updates (the round counter keeps going) so a user can zoom and pan.
    """
    record = state.manager().store.get_job(run_id)
    if record is None:
        st.info(f"Run {host.plain(run_id)} is not in the store (deleted?).")
        return
    active = record.status in ACTIVE
    # One keyed block per run, its children at the same positions whether the run is live or
    # over: a new run's view replaces the previous run's at once (no old result box under
    # "Round 0"), and the page's rerun when a run ends overwrites the live elements in place
    # (no faded duplicates below the final charts).
    with st.container(key=f"{key}-run-{run_id}"):
        live_charts = True
        if active and not present:
            c_tempo, c_live = st.columns([4, 1], vertical_alignment="bottom")
            if not teaching and host.may_control(record):  # the Playground has them under Run (tempo.bar)
                with c_tempo:
                    tempo.bar(record, key, compact=present)
            live_charts = c_live.toggle("Live charts", value=True, key=f"{key}-live-{run_id}",
                                        help="Turn off to zoom or pan while it trains: each chart update "
                                             "redraws the chart and resets the zoom. The round counter keeps going.")
        else:
            st.empty()  # the controls' place
        poll, detail = pacing.poll_seconds(POLL_SECONDS), pacing.poll_seconds(DETAIL_SECONDS)  # slower when busy
        pacing.polling_fragment(_headline, poll if active else None)(run_id, key, active, live_charts and not present,
                                                                     not present, host.may_control(record))
        holder = st.empty()  # the paused accuracy chart's place, or (presentation) accuracy | privacy
        if present:
            with holder.container():
                pacing.polling_fragment(_chart, poll if active and live_charts else None)(run_id, key, side_by_side)
        elif not live_charts:
            with holder.container():
                _chart(run_id, key, accuracy_chart)
        draw = detail_charts_below if present else detail_charts
        # each polling fragment in a container of its own: see pacing.polling_fragment (a blank page otherwise)
        pacing.polling_fragment(_chart, detail if active and live_charts else None)(run_id, key, draw)


def _headline(run_id: str, key: str, was_active: bool, with_chart: bool = True, caption: bool = True,
              was_mine: bool = False) -> None:
    run = state.run(run_id)
    record = state.manager().store.get_job(run_id)
    if record is None:
        st.info(f"Run `{run_id}` was deleted.")
        return
    if was_active and (record.status in TERMINAL or host.may_control(record) != was_mine):
        st.rerun()  # the whole page: buttons change (a claim in another browser moved them), the timers stop
    if record.status in ACTIVE:
        host.keep_alive(record)  # only the owner's page keeps a run alive
    status_block(record, run, caption, compact=not caption)
    if with_chart and run.rounds:
        accuracy_chart(record, run, key)


def _chart(run_id: str, key: str, draw) -> None:
    run = state.run(run_id)
    record = state.manager().store.get_job(run_id)
    if record is not None and run.rounds:
        draw(record, run, key)


def status_block(record: JobRecord, run: RunState, caption: bool = True, compact: bool = False) -> None:
    """Progress bar, one status line, headline numbers and (``caption``) the privacy caption.

    ``compact`` (the presentation layout): the pause and start-up notes go into the progress
    line instead of boxes of their own, so the charts below never move down."""
    pace = tempo.current(record.id) if record.status == "running" else {}
    paused = bool((pace.get("paused") or pace.get("preempted")) and pace.get("holding"))
    if paused:  # the worker writes a round's event before it holds: read after, the count is the held round
        record = state.manager().store.get_job(record.id) or record
    total, done = record.total or 1, record.done
    status = record.status
    start, end = run.start, run.end
    if compact:
        note = ("waiting for a free worker slot (fair share)" if paused and pace.get("preempted")
                else "paused: Step trains one more round, Resume the rest" if paused
                else "pausing after this round" if pace.get("paused")
                else "getting ready" if status == "running" and start is None
                else f"finished in {end.elapsed:.1f} s" if status == "finished" and end else status)
        st.progress(min(done / total, 1.0), text=f"Round {done} / {total} · {note}")
    else:
        held = "waiting for a free worker slot (fair share)" if pace.get("preempted") else "paused"
        st.progress(min(done / total, 1.0), text=f"Round {done} / {total} · {held if paused else status}")
    if compact and status != "failed":
        pass  # the progress line says it
    elif paused:
        st.info(f"Paused after round {done}: **Step** trains one more round, **Resume** the rest.",
                icon=":material/pause_circle:")
    elif pace.get("paused"):
        st.info("Pausing when the round in training ends…", icon=":material/pause_circle:")
    elif status == "queued":   # "Queued: position 3 of 5 · starts in about 40 s" (the page keeps polling)
        st.info(queue_text(state.manager().queue_info(record.id)), icon=":material/hourglass_top:")
    elif status == "running" and start is None:
        solving = record.match is not None and record.match.knob is None
        st.info("Solving the budget that spends exactly your ε (replaying the run's accounting)…" if solving
                else "Loading the data and building the model…")
    elif status == "failed":
        st.error(f"Run failed after {done} rounds: {host.plain(record.error or 'unknown error', 400)}. "
                 "The rounds it finished are kept below.")
    elif status == "stopped":
        reason = record.get("reason") or "stopped"
        st.warning(f"Stopped after {done} of {total} rounds ({reason}).")
    elif status == "finished" and end is not None:
        acc, held = end.final_accuracy, end.held_s
        took = (f"{end.elapsed - held:.1f} s of training ({held:.1f} s paused or slowed down)"
                if held else f"{end.elapsed:.1f} s")
        st.success(f"Finished {done} rounds in {took}"
                   + (f" · final test accuracy {acc:.3f}" if acc is not None else ""))
        if not run.aggregated_rounds:
            st.warning(EMPTY_RUN_TEXT, icon=":material/block:")
        else:
            cfg = record.config
            note = guess_note(acc, cfg.get("dataset", "digits"), cfg.get("test_size") or 0)
            if note:
                st.warning(note + " Its ε protects a model nobody would use: less noise, more rounds or "
                           "another method may learn.", icon=":material/casino:")
    table = rounds_table(run)
    if not len(table):
        return
    last = table.iloc[-1]
    privacy = privacy_summary(run)
    spent = privacy["headline"] if privacy["headline"] is not None else last["eps_max"]
    set_eps, unit, note = epsilon_set(record)
    cols = st.columns([1, 0.9, 1.3, 1.1])   # "ε spent, whole run" whole at 1,024 px with the sidebar open
    cols[0].metric("Test accuracy", _fmt(last["accuracy"]))
    cols[1].metric("ε you set", people(set_eps), help=f"Read by this method {unit}.", border=False)
    cols[2].metric("ε spent, whole run", people(spent) + ("*" if privacy["caveat"] else ""),
                   help="For the whole run so far, for the largest client: the tightest bound for this threat "
                        "model from dp-accounting" + {"rdp": "'s RDP accountant (the exact PLD is not composed for this run)",
                                                      "pld": "'s exact (PLD) accountant"}.get(run.last_round.accountant, "")
                        + " (the 'headline ε'; ∞: nothing is noised, no guarantee)"
                        + (f". *Not proven for what ran: {privacy['caveat']}." if privacy["caveat"]
                           else ", rigorous for what ran."))
    cols[3].metric("Test loss" if compact else "Seconds per round",
                   _fmt(last["loss"]) if compact else _fmt(table["seconds"].median()))
    if caption:
        epsilon_explained(record, spent)
        privacy_caption(privacy, start and start.device)


def epsilon_set(record: JobRecord) -> tuple[float, str, Optional[EqualPrivacy]]:
    """``(ε the student set, its unit, equal-privacy note or None)`` of a run."""
    from . import equal_privacy_mode

    cfg = record.config
    mech = (cfg.get("privacy") or {}).get("mechanism", "none")
    knob = max(float(e) for e in ((cfg.get("privacy") or {}).get("epsilon") or [1.0]))
    note = equal_privacy_mode.matched_note(record)
    if note:
        return note.target, "for the whole run (spend exactly ε in total)", note
    return knob, epsilon_unit(mech), None


def epsilon_explained(record: JobRecord, spent) -> None:
    """One sentence beside the two numbers: why the ε spent differs from the ε set."""
    mech = (record.config.get("privacy") or {}).get("mechanism", "none")
    set_eps, unit, note = epsilon_set(record)
    from .form import student_mode

    said = odds_sentence(spent, run_delta(config=record.config))
    odds = f" **In odds:** {said}." if student_mode() and said else ""
    if mech == "none":
        st.caption("**ε you set is not used:** nothing is noised, so the run spends ε = ∞." + odds)
        return
    if note and note.released is False:
        text = (f"**No budget was solved:** you asked for ε = {people(note.target)} in total, but this run "
                "releases nothing at any budget (no update is ever aggregated), so it spends ε = 0 and its model "
                "stays untrained.")
    elif note and note.knob is None:
        text = (f"**Both numbers are for the whole run.** You asked for ε = {people(note.target)} in total; "
                f"Run is solving this method's own budget ({epsilon_unit(mech)}) to spend exactly that.")
    elif note:
        text = (f"**Both numbers are for the whole run.** You asked for ε = {people(note.target)} in total; "
                f"Run set this method's own budget to {people(note.knob)} ({epsilon_unit(mech)}) so that the "
                f"finished run spends at most your ε = {people(note.target)}"
                + (f": it spends {people(note.headline)}." if note.headline is not None else "."))
        if note.reached is False:
            text += f" Even its largest budget spends only {people(note.headline)}."
        text += per_client_line(note)
    else:
        text = (f"**You set ε = {people(set_eps)} {unit}; the run spends {people(spent)} over the whole run so "
                f"far**: {why_they_differ(mech)}. Switch on *Spend exactly ε in total* to compare methods fairly.")
    st.caption(text + odds)


def per_client_line(note: EqualPrivacy) -> str:
    """With personalized budgets: each client's ε set → spent over the whole run, and whether each
    was solved on its own (the headline is the largest client's)."""
    rows = note.per_client or ()
    if len({r["set"] for r in rows}) < 2:
        return ""
    pairs = ", ".join(f"{people(r['set'])} → {people(r['spent'])}" for r in rows)
    if note.each is not False:
        return (f" **Per client, set → spent:** {pairs}: each client's budget was solved on its own, so "
                "none spends more than its own ε; the ε spent above is the largest.")
    return (f" **Per client, set → spent:** {pairs}: this method's budgets move together (one scale for "
            "all), so clients other than the largest may spend more than they were set.")


def privacy_caption(privacy: dict, device) -> None:
    """Who is trusted, in words, the paper's own claim beside the headline, and the device."""
    from . import form

    kind = privacy["threat_model"]
    parts = []
    if privacy.get("caveat"):
        parts.append(f"**\\* Caveat: the ε spent is not proven for what ran:** {privacy['caveat']}.")
    if kind and form.student_mode():
        parts.append(f"**Who is trusted:** {plain_threat_text(kind)} *(the exact term: "
                     f"{THREAT_MODEL_NAMES.get(kind, kind)}; switch off Plain words for the details)*")
    elif kind:
        parts.append(f"**Threat model: {THREAT_MODEL_NAMES.get(kind, kind)}.** {threat_model_text(kind)}")
    for label, value in privacy["claims"].items():
        parts.append(f"Paper's claim ({label.removeprefix('paper').strip(' ()') or 'paper'}): "
                     f"ε = {people(value)}, not a rigorous bound.")
    if device:
        parts.append(f"Trained on `{device}`.")
    if parts:
        st.caption("  \n".join(parts))


def _fmt(value, spec: str = ".3f") -> str:
    return "–" if value is None or value != value else format(float(value), spec)


def accuracy_chart(record: JobRecord, run: RunState, key: str, large: bool = False,
                   height: Optional[int] = None) -> None:
    """Test accuracy and loss per round (``height``: presentation's, when sentences sit below it)."""
    fig = pacing.figure(record, run, "acc", lambda: charts.accuracy_loss(
        rounds_table(run), record.total or 1, f"{key}-{record.id}"), key)
    if large:
        fig = presentation.enlarge(fig)
        if height:
            fig.update_layout(height=height)
    plot.chart(fig, f"{key}-acc", width="stretch")


def side_by_side(record: JobRecord, run: RunState, key: str) -> None:
    """Presentation: accuracy and, next to it, what an attacker gets (the attack view, where it has a
    success chart to draw: :func:`.attack_view.shown`) or else the privacy spent, all above the fold."""
    from . import attack_view

    from . import membership_roc

    cfg = RunConfig.from_dict(record.config) if record.status == "finished" else None
    membership = cfg is not None and membership_roc.wanted(cfg, state.current_preset())
    attack = not membership and attack_view.shown(run)
    left, right = st.columns(2)
    with left:
        accuracy_chart(record, run, key, large=True, height=presentation.LESSON_CHART_HEIGHT if attack else None)
        present_lesson(record, run, attack)
        if cfg is not None and not membership:
            membership_roc.start_button(cfg, state.current_preset())
    with right:
        if membership:
            membership_roc.beside_accuracy(cfg, state.current_preset())
        elif attack:
            attack_view.beside_accuracy(record, run, key)
        else:
            privacy_chart(record, run, key, large=True)


def present_lesson(record: JobRecord, run: RunState, attack: bool) -> None:
    """Presentation, under the accuracy chart at the projector's type size: a model no better than a blind
    guess said so, and which ε the class sees (the clients' one-upload ε beside the run's) as odds."""
    lines = []
    end = run.end
    if end is not None and end.final_accuracy is not None:
        cfg = record.config
        lines.append(guess_note(end.final_accuracy, cfg.get("dataset", "digits"), cfg.get("test_size") or 0) or "")
    if attack:
        from . import attack_view
        lines.append(attack_view.epsilon_line(run, privacy_summary(run)["headline"]))
    else:
        spent = privacy_summary(run)["headline"]
        if odds_sentence(spent):
            lines.append(f"**ε spent over the whole run, {people(spent)}, in odds:** {odds_sentence(spent, run_delta(run))}.")
    st.markdown("  \n".join(line for line in lines if line))


def privacy_chart(record: JobRecord, run: RunState, key: str, large: bool = False) -> None:
    """Cumulative epsilon of each client, under the ledger view the user picks."""
    n = int(record.config.get("num_clients", 1))
    views = accountant_views(run)
    view = views[0]
    if len(views) > 1 and not large:  # presentation: the headline only, so both charts start level
        view = st.selectbox("Privacy ledger", views, key=f"{key}-epsview",
                            label_visibility="collapsed" if large else "visible",
                            format_func=view_name,
                            help="Basic composition adds each round's ε; the other views are "
                                 "accountants or the paper's own claimed figures, labelled.")
    def build():
        rounds, matrix = epsilon_matrix(run, view)
        label, rev = view_name(view), f"{key}-{record.id}"
        if matrix.size and n <= MAX_CLIENT_LINES:
            line, text = budget_line(record, run, view)
            return charts.epsilon_lines(rounds, matrix, label, line, rev, record.total or 1,
                                        budget_text=text, legend=not large)
        return charts.epsilon_heatmap(rounds, matrix, label, rev)

    _, matrix = epsilon_matrix(run, view)
    if matrix.size and np.isinf(matrix).all():  # nothing noised: an empty chart would read as 0
        st.info("**ε = ∞ for every client**: nothing is noised, so this run gives no privacy guarantee "
                "and there is no curve to draw.", icon=":material/lock_open:")
        return
    fig = pacing.figure(record, run, "eps", build, key, view, view_name(view), large)
    plot.chart(presentation.enlarge(fig) if large else fig, f"{key}-eps", width="stretch")


def budget_line(record: JobRecord, run: RunState, view: str) -> tuple[list[float], str]:
    """The dashed budget line of the ε chart, in the chart's unit (ε over the whole run so far):
    the ε asked for under equal privacy; the ε set when the method reads it for the whole run;
    none when it reads it per weight or per round (a line there would mix two units)."""
    if view != HEADLINE:
        return run.start.epsilon if run.start else [], "budget ε={b}"
    set_eps, unit, note = epsilon_set(record)
    if note:
        return [note.target], "your ε = {b} for the whole run"
    if unit.startswith("for the whole run"):
        return run.start.epsilon if run.start else [], "your ε = {b}"
    return [], ""


def detail_charts(record: JobRecord, run: RunState, key: str, with_privacy: bool = True) -> None:
    """Privacy spent, participation and weights, method events (recalls, ...) and signals."""
    run_id, total = record.id, record.total or 1
    n = int(record.config.get("num_clients", 1))
    table = rounds_table(run)
    rev = f"{key}-{run_id}"
    left, right = st.columns(2)
    if with_privacy:
        with left:
            privacy_chart(record, run, key)
    with right if with_privacy else left:
        fig = pacing.figure(record, run, "weights",
                            lambda: charts.participation(*weights_matrix(run, n), rev), key)
        plot.chart(fig, f"{key}-weights", width="stretch")
    happened = method_events_table(run)
    has_signals = any(c.startswith("signal.") for c in table.columns)
    if len(happened) or has_signals:
        left, right = st.columns(2)
        if len(happened):
            fig = pacing.figure(record, run, "events", lambda: charts.method_events(happened, n, total, rev), key)
            plot.chart(fig, f"{key}-events", left, width="stretch")
        if has_signals:
            fig = pacing.figure(record, run, "signals", lambda: charts.signals(table, total, rev), key)
            plot.chart(fig, f"{key}-signals", right if len(happened) else left, width="stretch")
    else:
        st.caption("Method events (e.g. ULDP-FED recalls) and signals (clip threshold, Kalman gain) "
                   "appear here for methods that emit them; this one emits none.")
    if "signal.tau" in table.columns and "signal.similarity" in table.columns:
        fig = pacing.figure(record, run, "recall", lambda: charts.recall_check(table, total, rev), key)
        plot.chart(fig, f"{key}-recall", width="stretch")
        st.caption("**Why a user recalls** (ULDP-FED, CheckSimilarity): it compares its noisy update with the "
                   "last global update; below τ it sends the index of its most similar stored update "
                   "instead of a fresh one. When the noise dominates, the similarity hovers around 0 and a "
                   "threshold near 0 turns recall into a coin flip.")
    recalls = happened[happened["kind"] == "recall"] if len(happened) else happened
    if len(recalls):
        with st.expander(f"Recall events ({len(recalls)})"):
            st.dataframe(recalls[["round", "client", "details"]], hide_index=True, width="stretch")


def detail_charts_below(record: JobRecord, run: RunState, key: str) -> None:
    """Presentation: what comes below the side-by-side charts (privacy too, when the attack view took its place)."""
    from . import attack_view

    detail_charts(record, run, key, with_privacy=attack_view.shown(run))


def worker_badge(poll: bool = True) -> None:
    """"Worker ready" once the pre-started worker has imported torch and loaded the data.

    Polls (every second, until ready) only when ``poll``: not while a run is on screen,
    whose own polling must not be interrupted by a second fragment.
    """
    ready = state.manager().warm_ready()
    pacing.polling_fragment(_worker_badge_body, None if ready or not poll else 1.0)()


def _worker_badge_body() -> None:
    manager = state.manager()
    waiting = manager.queue_length()
    if waiting:
        st.caption(f":material/hourglass_top: {waiting} run{'s' * (waiting > 1)} waiting for a worker")
        return
    warm = manager.warm_state()
    if warm == "ready" and manager.capacity_free():
        st.caption(":material/bolt: worker ready: the next run starts at once")
    elif warm == "starting":
        st.caption(":material/hourglass_top: starting a worker (importing torch)…")
