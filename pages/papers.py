"""Papers: each paper's headline claim, our reproduced numbers and their presets.

The numbers come from ``assets/reproduction/<paper>.json`` (written by
``python -m fedcore reproduce PAPER``); experiments without a stored result still list
the paper's numbers and presets. "Open in Playground" loads a preset there.

"Run the quick reproduction here" trains the paper's quick tables on this server as a job of
its one job manager (:mod:`fedcore.reproduce.job`: queued, owned by who pressed it, under the
host's limits, Stop for its owner), beside its estimate under the current load
(:func:`fedcore.reproduce.job.reproduction_estimate`); its progress is polled, and once it
ended its record is shown, labelled "your quick reproduction (this server, <date>)", with the
shipped record one click away.
"""
from typing import Optional

import pandas as pd
import streamlit as st

from pages.components import charts, host, pacing, plot, routing, state
from pages.components.job_progress import job_line
from pages.components.plain import plain, plain_text
from pages.components.press import pressed, start_job
from fedcore.accounting.headline import THREAT_MODEL_NAMES, format_epsilon, threat_model_text
from fedcore.resolve import preset_config
from fedcore.errors import FedcoreError
from fedcore.reproduce import job as reproduction
from fedcore.reproduce import report, results
from fedcore.reproduce.stats import RULE_TEXT
from fedcore.papers import PAPER_PRIVACY_CLAIMS, PAPERS
from fedcore.catalog import PRESETS
from fedcore.reproduce.estimate import measured_preset_seconds, preset_seconds, rough_label
from fedcore.runner.limits import offered_datasets
from fedcore.runner.record import JobRecord
from fedcore.runner.store import ACTIVE

routing.through_router()

ICONS = {True: ":material/check_circle:", False: ":material/cancel:", None: ":material/help:"}


def open_in_playground(name: str) -> None:
    state.load_config(preset_config(name), name)
    state.show_run(None)
    st.switch_page(state.PLAYGROUND, query_params={"preset": name})


def clip_only(row: dict) -> bool:
    """A table's clipping-only reference row (negligible noise: its ε, e.g. 1.65e+20, is no privacy)."""
    return row["key"].startswith("clip")


def privacy_summary(paper_key: str, tables: list[dict]) -> None:
    """Who is trusted, our headline ε ("rigorous" only where no caveat applies; the clipping-only
    references left out), and the paper's own figure, labelled."""
    threats = {}
    for t in tables:
        for r in t["rows"]:
            if r.get("threat_model") and r["threat_model"] != "none" and r.get("epsilon_headline") and not clip_only(r):
                threats.setdefault(r["threat_model"], []).append(r)
    lines = []
    for kind, rows in threats.items():
        values = [v for r in rows for v in r["epsilon_headline"]]
        finite = [v for v in values if v is not None]   # None: nothing noised
        low, high = (min(finite), max(finite)) if finite else (None, None)
        span = format_epsilon(high) if low == high else f"{format_epsilon(low)} – {format_epsilon(high)}"
        if finite and len(finite) < len(values):
            span += " (∞ for the rows that add no noise)"
        caveats = list(dict.fromkeys(report.caveat(r) for r in rows if report.caveat(r)))
        over = [r.get("short") or r["label"] for r in rows if report.over_target(r)]
        how = ("dp-accounting; largest over clients; **not proven for what ran in every row**: "
               + "; ".join(caveats) if caveats else "rigorous for what ran, dp-accounting; largest over clients")
        lines.append(f"- **{THREAT_MODEL_NAMES[kind]}**: {threat_model_text(kind)} "
                     f"Headline ε of our runs ({how}): **{span}**"
                     + (f"; spending more than their target (not equal privacy): {', '.join(over)}" if over else "")
                     + ". Clipping-only reference rows are left out.")
    if not lines:
        lines.append("- Headline ε: not recorded for these runs (rerun `python -m fedcore reproduce` to add it).")
    lines.append(f"- **Paper's claim** (not a rigorous bound unless it matches the headline): "
                 f"{PAPER_PRIVACY_CLAIMS.get(paper_key, '–')}")
    lines.append("- A run without noise has ε = ∞ (no guarantee), never 0.")
    st.markdown("\n".join(lines))


def runs_here(preset: str) -> bool:
    """Whether this server offers ``preset``'s dataset and can load it (bundled, downloadable,
    or its files present): what the Playground's dataset picker offers."""
    return bool(offered_datasets(host.limits(), [PRESETS.get(preset).get("dataset", "digits")]))


def preset_label(preset: str) -> str:
    """``name · runs here · ~2 min`` or ``name · needs cifar10 (not on this server)``."""
    dataset = PRESETS.get(preset).get("dataset", "digits")
    where = "runs here" if runs_here(preset) else f"needs {dataset} (not on this server)"
    measured = measured_preset_seconds().get(preset)
    took = f"{rough_label(measured)} measured" if measured else rough_label(preset_seconds().get(preset))
    return f"{preset} · {where}" + (f" · {took}" if took else "")


def show_table(paper_key: str, table: dict) -> None:
    st.subheader(table["title"])
    if table["status"] not in ("ran", "not run"):
        st.warning(plain(table["status"], 600))  # a stored record: no server path or exception text
    if table["status"] == "ran":
        st.markdown(f"**Verdict: {report.table_verdict(table)}** · {report.table_seeds(table)} seed(s) per row · "
                    f"mode {plain(table.get('mode') or '–')}")
        if table.get("command"):
            st.caption(f"`{plain_text(table['command'], 400)}`")
    st.dataframe(pd.DataFrame(report.table_rows(table)), hide_index=True, width="stretch")
    for note in report.caveat_notes(table):
        st.caption(f"caveat {note}")
    for c in table["claims"]:
        v = report.verdict(c, table)
        st.markdown(f"{ICONS[c.get('holds')]} {c['claim']}: **{v}** — {c['detail']}")
    for lines in (report.rule_c_causes(table), report.gap_to_paper(table), report.rounds_status(table)):
        if lines:
            st.markdown(" ".join(lines) if lines[0].startswith(("Why", "Gap")) else "\n".join(lines))
    series = results.accuracy_series(table)
    if series:
        plot.chart(charts.compare_accuracy(series, f"papers-{paper_key}-{table['key']}"),
                   f"papers-{paper_key}-{table['key']}", width="stretch")
    with st.expander("Settings the paper leaves open, and what we chose"):
        st.markdown(table["notes"])
        if table.get("quick_notes"):
            st.markdown(f"**Quick-mode reductions:** {table['quick_notes']}")


def when(created: str) -> str:
    """A record's ``created`` (ISO, UTC) as ``2026-11-25 17:40 UTC``."""
    return plain_text(created.replace("T", " ")[:16] + " UTC" if created and "T" in created else (created or "–"))


def quick_reproduction(paper) -> JobRecord:
    """The button that starts ``paper``'s quick reproduction on this server, its estimate under
    the current load (or why this server refuses it), and while it runs its progress (polled);
    returns its job's record (status ``"none"`` when it never ran here)."""
    manager = host.manager()
    key = reproduction.reproduction_key(paper.key)
    status = reproduction.reproduction_status(manager, key)
    refusal = plan = estimate = None
    try:
        plan = reproduction.plan(paper.key, limits=host.limits())
        estimate = reproduction.reproduction_estimate(manager, key, plan)
        reproduction.check_duration(paper.key, estimate, host.limits())
    except (FedcoreError, KeyError) as exc:
        refusal = exc
    # the button on its own line: its label whole at 1,024 px with the sidebar open
    go = pressed(st, "Run the quick reproduction here", key=f"papers.{paper.key}.reproduce", type="primary",
                 icon=":material/play_arrow:", disabled=refusal is not None or status.status in ACTIVE,
                 help=f"Trains what `python -m fedcore reproduce {paper.key} --quick` trains, on this server, in the "
                      "background (you can leave the tab open and read on); its record then appears below, "
                      "beside the one shipped with the app.")
    if refusal is not None:
        st.caption(f"It cannot start here: {plain(refusal)}")
    else:
        st.caption(estimate_caption(plan, estimate))
    if go:
        start_job(lambda: reproduction.start_reproduction(manager, paper.key, owner=host.viewer().owner))
    if status.status in ACTIVE:
        pacing.polling_fragment(reproduction_progress, pacing.poll_seconds(1.0))(paper.key, key)
    elif status.status == "failed":
        st.error(f"Your server's quick reproduction failed: {plain(status.error or 'unknown error', 400)}",
                 icon=":material/error:")
    elif status.status == "stopped":
        st.warning(f"The quick reproduction here was stopped after {status.done} of "
                   f"{status.total or 0} runs; the rows it finished are below.", icon=":material/stop_circle:")
    return status


def estimate_caption(plan, estimate) -> str:
    """``about 3–25 s on this machine now (load average 12.2 on 2 cores): a rough estimate, scaled by
    the load · 21 runs (1 table, 3 seeds each), in the background``; then, grouped by reason, the
    tables this server leaves out."""
    if estimate is None:
        how = "duration unknown"
    elif estimate.measured:
        how = f"{estimate.label()}: its last run here, rescaled from the load it ran under to the load now"
    else:
        how = (f"{estimate.label()}: the rough model of a run's work, scaled by the load; not measured on this "
               "server yet, so it can be several times off (once it ran here, its own time is used)")
    tables = f"{len(plan.tables)} table{'s' if len(plan.tables) > 1 else ''}"
    seeds = f"{plan.seeds} seed{'s' if plan.seeds > 1 else ''}"
    text = f"{how} · {plan.total} runs ({tables}, {seeds} each), in the background"
    reasons: dict = {}
    for table, why in plan.left_out.items():
        reasons.setdefault(why, []).append(table)
    if reasons:
        text += " · left out here: " + "; ".join(f"{', '.join(tables)} ({why})" for why, tables in reasons.items())
    return text


def reproduction_progress(paper_key: str, key: str) -> None:
    """The running reproduction's line (polled): queued or its progress, Stop for its owner; the
    whole page is drawn again once it ended (its record then shows)."""
    status = reproduction.reproduction_status(host.manager(), key)
    if status.status not in ACTIVE:
        st.rerun()
    host.keep_alive(status)  # its owner's page keeps it going; closed, it stops after the grace period
    job_line(reproduction.reproduction_id(key), status, done=status.done, total=status.total or 0,
             noun="quick reproduction", stop_key=f"papers.{paper_key}.stop")


def whose(status: JobRecord) -> str:
    """"Your" to the owner of the reproduction job ``status``, "This server's" to every other visitor."""
    owner = status.owner
    return "Your" if owner is not None and owner == host.viewer().owner else "This server's"


def shown_record(paper, status: JobRecord) -> tuple[Optional[dict], bool]:
    """The record the tab shows and whether it is this server's: the quick reproduction that ended
    here (finished or stopped) unless the visitor picks the shipped one; else the shipped one."""
    shipped = results.load(paper.key)
    key = reproduction.reproduction_key(paper.key)
    mine = reproduction.reproduction_record(host.manager().store_dir, key, paper.key) \
        if status.status in ("finished", "stopped") else None
    if mine is None:
        return shipped, False
    labels = {"mine": f"{whose(status)} quick reproduction (this server, {when(mine.get('created'))})",
              "shipped": "Shipped with the app" + (f" ({plain_text(shipped.get('mode') or '')}, "
                                                    f"{when(shipped.get('created'))})" if shipped else " (none)")}
    pick = st.radio("Record shown", list(labels), format_func=labels.get, horizontal=True,
                    key=f"papers.{paper.key}.shown")
    return (mine, True) if pick == "mine" else (shipped, False)


st.title("Papers")
st.caption("The five papers' headline results next to ours. Accuracies in %; ours are mean ± std over "
           "seeds. Every row is a named preset: load it into the Playground to run or vary it.")

here_only = st.toggle("Only what runs here", value=True, key="papers.here",
                      help="Show only presets and experiments whose dataset this server offers and can "
                           "load (bundled, downloadable, or its files present), as the Playground does.")
tabs = st.tabs([p.title for p in PAPERS.values()])
for tab, paper in zip(tabs, PAPERS.values()):
    with tab:
        st.markdown(f"**Claim** ({paper.source}): {paper.claim}")
        job = quick_reproduction(paper)
        record, mine = shown_record(paper, job)
        ran, rest = results.paper_tables(paper, record)
        if record is None:
            st.info(f"Not reproduced yet. Run `python -m fedcore reproduce {paper.key} --quick` "
                    "(CPU, minutes) or without `--quick` (paper settings, GPU).")
        else:
            if mine:
                st.success(f"**{whose(job)} quick reproduction (this server, {when(record.get('created'))})** · "
                           f"{plain(record['device'])} · mode {plain(record['mode'])} · "
                           f"`{plain_text(record.get('command') or '', 300)}`", icon=":material/science:")
            else:
                st.caption(f"Shipped with the app: reproduced on {plain(record['device'])} · "
                           f"{when(record.get('created'))}")
            # the verdict first: a 1,024 px screen shows it without scrolling the table sideways
            verdicts = [{"verdict": report.table_verdict(t), "table": t["title"], "seeds per row": report.table_seeds(t),
                         "mode": plain_text(t.get("mode") or record["mode"])} for t in ran if t["status"] == "ran"]
            if verdicts:
                st.dataframe(pd.DataFrame(verdicts), hide_index=True, width="stretch")

        privacy_summary(paper.key, ran)
        with st.expander("How a verdict is decided: the paired rule"):
            st.markdown(RULE_TEXT)

        presets = [r["preset"] for t in ran + rest for r in t["rows"]]
        presets = list(dict.fromkeys(p for p in presets if runs_here(p) or not here_only))
        titles = {r["preset"]: f"{t['title']} — {r['label']}" for t in ran + rest for r in t["rows"]}
        pick = st.container(horizontal=True, vertical_alignment="bottom")   # wraps: the button's label whole
        picked = pick.selectbox("Preset", presets, key=f"papers.{paper.key}.preset", format_func=preset_label,
                              help="Every experiment of this paper is a named preset. Its duration on a "
                                   "2-core CPU: measured by the stored record at the preset's settings "
                                   "(scaled to an unshared CPU by the load it ran under), else estimated.")
        if pick.button("Open in Playground", key=f"papers.{paper.key}.open", icon=":material/open_in_new:",
                     type="primary", width="content", disabled=picked is None):
            open_in_playground(picked)
        if picked is not None:
            st.caption(titles[picked])
        else:
            st.caption("No preset of this paper runs here (turn off 'Only what runs here' to list them).")
        if here_only:
            rest = [t for t in rest if any(runs_here(r["preset"]) for r in t["rows"])]

        for table in ran:
            show_table(paper.key, table)
        if rest:
            with st.expander(f"Experiments not reproduced here ({len(rest)}): the paper's numbers and presets"):
                for table in rest:
                    st.markdown(f"**{table['title']}**")
                    st.dataframe(pd.DataFrame(report.table_rows(table)), hide_index=True, width="stretch")
