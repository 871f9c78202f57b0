"""Pieces of the Compare page: picking runs, grouping seeds, launching seeds."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from fedcore.config import RunConfig
from fedcore.runner import ACTIVE
from fedcore.runner.record import JobRecord
from fedcore.tables import (BASIC, HEADLINE, accountant_views, final_epsilon, mean_band, rounds_table,
                                    seed_group)

from . import history, host, state


def run_title(record: JobRecord) -> str:
    """``label · status · accuracy · date`` for pickers."""
    acc = record.get("final_accuracy")
    when = time.strftime("%d %b %H:%M", time.localtime(record.created))
    return " · ".join([record.label or record.id, record.status,
                       f"acc {acc:.3f}" if acc is not None else "acc –", when])


def pickable(records: list[JobRecord], scope: str) -> list[JobRecord]:
    """Runs this viewer may pick: those listed under ``scope`` plus runs named by the link
    (``?runs=a,b`` shares runs read-only, whoever started them)."""
    linked = set(st.query_params.get("runs", "").split(","))
    listed = {r.id for r in history.visible_runs(records, scope)}
    return [r for r in records if r.id in listed or r.id in linked]


def init_selection(records: list[JobRecord]) -> None:
    """Selection from the URL (``?runs=a,b``), else this viewer's three newest runs that
    trained at least one round; ids of deleted runs are dropped."""
    known = {r.id for r in records}
    if "cmp.selected" not in st.session_state:
        from_url = [i for i in st.query_params.get("runs", "").split(",") if i in known]
        me = host.viewer().owner
        newest = [r.id for r in records if r.done > 0 and r.owner == me][:3]
        st.session_state["cmp.selected"] = from_url or newest
    st.session_state["cmp.selected"] = [i for i in st.session_state["cmp.selected"] if i in known]


def available_views(run_ids: list[str]) -> list[str]:
    """The ledgers the runs carry, the Playground's (the headline ε) first when there is one."""
    views = []
    for run_id in run_ids:
        for v in accountant_views(state.run(run_id)):
            if v not in views:
                views.append(v)
    return sorted(views or [BASIC], key=lambda v: v != HEADLINE)


def launch_seeds(base: RunConfig, first: int, count: int) -> list[str]:
    """Start ``count`` runs of ``base`` with seeds ``first, first+1, ...`` (cached ones replay).

    Stops at the first run the host refuses (e.g. this visitor's share of the queue is
    full, ``max_active_per_owner``): its message is shown, the runs already queued stay.
    """
    ids = []
    for seed in range(first, first + count):
        run_id = state.start_run(base.replace(seed=seed))
        if not run_id:
            break
        ids.append(run_id)
    return ids


def build(run_ids: list[str], *, group: bool, view: str):
    """Series for the accuracy overlay, points for accuracy-vs-epsilon, and a summary table."""
    store = state.manager().store
    records = [r for r in (store.get_job(i) for i in run_ids) if r is not None]
    groups: dict[str, list[JobRecord]] = {}
    for r in records:
        groups.setdefault(seed_group(r.config) if group else r.id, []).append(r)
    series, points, summary = [], [], []
    for r in records:
        if r.status in ACTIVE:
            host.keep_alive(r)  # the owner's Compare page keeps its seeds training
    for members in groups.values():
        name = _group_name(members[0], len(members) > 1)
        tables = []
        for r in members:
            run = state.run(r.id)
            tables.append(rounds_table(run))
            eps = final_epsilon(run, view)
            acc = r.get("final_accuracy")
            if eps is not None and acc is not None:
                points.append({"group": name, "label": r.label, "epsilon": eps, "accuracy": acc})
            summary.append({"run": r.label, "status": r.status, "seed": r.config.get("seed"),
                            "rounds": f"{r.done}/{r.total}", "final accuracy": acc,
                            "final ε (largest)": eps, "caveat": history.caveat(r.config.get("privacy") or {}),
                            "id": r.id})
        series.append({"name": name, "band": mean_band(tables), "n": len(members)})
    return series, pd.DataFrame(points), summary


def guessing(run_ids: list[str]) -> list[str]:
    """``"label: accuracy"`` of every finished run among ``run_ids`` whose accuracy is no better than a
    blind guess (:func:`fedcore.blind_guess.no_better_than_guess`)."""
    from fedcore.blind_guess import no_better_than_guess

    store = state.manager().store
    out = []
    for r in (store.get_job(i) for i in run_ids):
        if r is not None and r.status == "finished" and no_better_than_guess(
                r.get("final_accuracy"), r.config.get("dataset", "digits"), r.config.get("test_size") or 0):
            out.append(f"{r.label or r.id}: {r.get('final_accuracy'):.3f}")
    return out


def _group_name(record: JobRecord, several: bool) -> str:
    label = record.label or record.id
    if several:
        return " · ".join(p for p in label.split(" · ") if not p.startswith("seed "))
    return label


def export_json(summary: list[dict], series: list[dict], view: str) -> str:
    """The comparison as strict JSON: the table's rows, each group's per-round mean accuracy, the ledger."""
    import json
    import math

    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if hasattr(x, "to_dict"):
            return clean(x.to_dict(orient="list"))
        if hasattr(x, "item"):
            return clean(x.item())
        return x

    groups = [{"name": s["name"], "runs": s["n"], "band": clean(s["band"])} for s in series]
    return json.dumps({"ledger": view, "runs": clean(summary), "groups": groups}, allow_nan=False, indent=1)
