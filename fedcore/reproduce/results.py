"""Stored reproduction records (``assets/reproduction/<paper>.json``), for the dashboard.

The folder is ``$FEDCORE_REPRODUCTION`` if set, else ``assets/reproduction`` in the
repository. Plot data per row: ``rounds`` and one accuracy ``curves`` list per seed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import pandas as pd

DIR_ENV = "FEDCORE_REPRODUCTION"
REPO = Path(__file__).resolve().parents[2]


def results_dir() -> Path:
    explicit = os.environ.get(DIR_ENV)
    return Path(explicit) if explicit else REPO / "assets" / "reproduction"


def load(paper: str, folder: Optional[Path] = None) -> Optional[dict]:
    """The record of ``paper``, or None when it was not reproduced (or is unreadable)."""
    path = (folder or results_dir()) / f"{paper}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def seed_tables(row: dict) -> list[pd.DataFrame]:
    """One ``round, accuracy`` frame per seed of a row (the input of ``mean_band``)."""
    rounds = row.get("rounds") or []
    return [pd.DataFrame({"round": rounds, "accuracy": curve}) for curve in row.get("curves") or []]


def spec_table(table) -> dict:
    """A :class:`~fedcore.papers.spec.Table` in the record's format, without results
    (what the Papers page shows for experiments not reproduced here)."""
    return {"key": table.key, "title": table.title, "dataset": table.dataset, "notes": table.notes,
            "quick_notes": "", "reference": table.reference, "target": table.target,
            "paper_target": table.target, "status": "not run",
            "rows": [{"key": r.key, "label": r.label, "short": r.name, "preset": r.preset, "paper": r.paper,
                      "paper_gain": r.paper_gain, "paper_rounds": r.paper_rounds, "ran": False}
                     for r in table.rows],
            "claims": [{"claim": c.describe(table.labels()), "holds": None, "detail": "not run"}
                       for c in table.claims]}


def paper_tables(paper, record: Optional[dict]) -> tuple[list[dict], list[dict]]:
    """``(reproduced, not reproduced)`` tables of ``paper``, in the paper's order; every reproduced
    table judged by the current rule from its stored runs (:func:`fedcore.reproduce.run.fill_in`)."""
    from .run import fill_in

    done = {t["key"]: t for t in (record or {}).get("tables", [])}
    ran = [fill_in(t, json.loads(json.dumps(done[t.key]))) for t in paper.tables if t.key in done]
    rest = [spec_table(t) for t in paper.tables if t.key not in done]
    return ran, rest


def accuracy_series(table: dict) -> list[dict]:
    """Series for the accuracy-per-round chart: one per row that ran, with its seed band
    (``name``, ``band`` = :func:`~fedcore.tables.mean_band` frame, ``n`` seeds)."""
    from ..tables import mean_band

    series = []
    for row in table.get("rows", []):
        tables = seed_tables(row)
        if tables:
            series.append({"name": row["label"], "band": mean_band(tables), "n": len(tables)})
    return series
