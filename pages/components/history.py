"""Pieces of the History and Compare pages: whose runs to list, the overview table, run titles."""
from __future__ import annotations

import time

import streamlit as st

from fedcore.config import RunConfig
from fedcore.errors import FedcoreError
from fedcore.runner.labels import epsilon_summary
from fedcore.runner.owners import describe_owner, listed, may_list_everyone
from fedcore.runner.record import JobRecord

from . import host

COLUMNS = {
    "created": st.column_config.DatetimeColumn("created", format="D MMM, HH:mm:ss"),
    "final accuracy": st.column_config.NumberColumn(format="%.3f"),
    "progress": st.column_config.ProgressColumn("rounds", min_value=0.0, max_value=1.0, format="percent"),
}


SCOPE_LABELS = {"mine": "My runs", "everyone": "Everyone's runs"}


def scope_picker(key: str) -> str:
    """``"mine"`` (the default), or ``"everyone"`` when the host lets this viewer list others' runs."""
    if not may_list_everyone(host.viewer(), host.limits().visibility):
        return "mine"
    return st.segmented_control("Show", list(SCOPE_LABELS), format_func=SCOPE_LABELS.get, default="mine",
                                key=key) or "mine"


def visible_runs(records: list[JobRecord], scope: str) -> list[JobRecord]:
    """The records this viewer may list under ``scope``."""
    viewer, visibility = host.viewer(), host.limits().visibility
    return [r for r in records if listed(r, viewer, scope, visibility)]


def overview(records: list[JobRecord]) -> list[dict]:
    """One row per run for the History table: what a class reads first (the run, its final accuracy,
    status and rounds) fits a 1024 px projector; the rest is a sideways scroll away."""
    rows = []
    for r in records:
        c, p = r.config, r.config.get("privacy", {})
        rows.append({
            "run": r.label, "final accuracy": r.get("final_accuracy"), "status": r.status,
            "progress": r.done / max(r.total or 1, 1), "created": _datetime(r.created), "dataset": c.get("dataset"),
            "clients": c.get("num_clients"),
            "privacy": f"{p.get('mechanism')} + {p.get('aggregator')}, {epsilon_summary(p.get('epsilon') or [1])}",
            "caveat": caveat(p),
            "started by": describe_owner(r, host.viewer()), "error": r.error or "", "id": r.id})
    return rows


def caveat(privacy: dict) -> str:
    """What the run's headline ε does not prove for what ran ("" = a rigorous bound), from its config."""
    from fedcore.mechanisms import caveat_of

    try:
        return caveat_of(privacy)
    except FedcoreError:       # a stored config whose options no longer parse
        return ""


def title(record: JobRecord) -> str:
    acc = record.get("final_accuracy")
    when = time.strftime("%d %b %H:%M:%S", time.localtime(record.created))
    return f"{when} · {record.label} · {record.status}" + (f" · acc {acc:.3f}" if acc is not None else "")


def config_of(record: JobRecord) -> RunConfig:
    return RunConfig.from_dict(record.config)


def _datetime(ts: float):
    import pandas as pd

    return pd.Timestamp.fromtimestamp(ts)
