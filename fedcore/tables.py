"""Turn a run's event stream into tables: what the dashboard plots and exports.

Pure functions of a run's :class:`~fedcore.events.RunState` (its events folded, as the
dashboard reads them from :class:`~fedcore.runner.store.JobStore`): nothing here trains,
reads files or draws. ``BASIC`` names the basic-composition ledger
(``RoundEvent.epsilon_spent``); other views are the labelled ``epsilon_accountant``
entries (``"rdp"``, a paper's claimed figure, ...).

>>> from fedcore.events import RoundEvent, summarize
>>> run = summarize([RoundEvent(1, 0.5, 1.2, [0, 1], [0, 1], [0.5, 0.5], [1.0, 1.0], signals={"clip": 2.0})])
>>> rounds_table(run)[["round", "accuracy", "eps_max", "signal.clip"]].to_dict("records")
[{'round': 1, 'accuracy': 0.5, 'eps_max': 1.0, 'signal.clip': 2.0}]
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from .accounting.headline import decode_epsilon
from .events import RoundEvent, RunState, to_dict

BASIC = "basic composition"
HEADLINE = "headline ε"
"""The view of ``RoundEvent.epsilon_headline``: the tightest rigorous bound for the run's
threat model (``None`` in an event = ∞: nothing noised). The default everywhere."""
NO_NOISE = "none"
"""``threat_model`` of a run that adds no noise: every ε view reads ∞, never 0."""
PAPER_PREFIX = "paper"
"""``epsilon_accountant`` labels starting with this are a paper's own claim."""


def rounds_table(run: RunState) -> pd.DataFrame:
    """One row per round: accuracy, loss, timing, client counts, epsilon summary, signals.

    ``eps_max`` / ``eps_mean`` summarise the per-client cumulative epsilon under basic
    composition; ``signal.<name>`` columns hold the method's scalar signals.
    """
    rows = []
    for e in run.rounds:
        eps = np.asarray(e.epsilon_spent or [0.0], dtype=float)
        if e.threat_model == NO_NOISE:
            eps = np.full_like(eps, np.inf)
        row = {"round": e.round, "accuracy": e.accuracy, "loss": e.loss, "seconds": e.seconds,
               "elapsed": e.elapsed, "selected": len(e.selected), "uploaded": len(e.uploaded),
               "eps_max": float(eps.max()), "eps_mean": float(eps.mean()), "method_events": len(e.events)}
        row["eps_headline"] = _headline_of(e)
        for view, values in e.epsilon_accountant.items():
            finite = [v for v in values if v is not None]
            row[f"eps_max.{view}"] = max(finite) if finite else None
        for name, value in e.signals.items():
            row[f"signal.{name}"] = value
        rows.append(row)
    columns = ["round", "accuracy", "loss", "seconds", "elapsed", "selected", "uploaded",
               "eps_max", "eps_mean", "method_events"]
    return pd.DataFrame(rows, columns=None if rows else columns)


def _headline_of(event: RoundEvent) -> Optional[float]:
    """A round's headline ε as a float: ``inf`` when nothing is noised, None when the event
    predates the headline (unknown)."""
    if not event.epsilon_headline:
        return None
    return decode_epsilon(event.epsilon_headline_run)


def privacy_summary(run: RunState) -> dict:
    """The run's privacy: ``threat_model``, ``headline`` (largest client's ε after the last round;
    ``inf`` = no guarantee; None = unknown), ``caveat`` (what that headline does not prove for what
    ran; "" = a rigorous bound) and ``claims`` (each paper's own figure, largest client, labelled).

    >>> from fedcore.events import RoundEvent, summarize
    >>> privacy_summary(summarize([RoundEvent(1, None, None, [], [], [], [0.0], threat_model="none",
    ...                                       epsilon_headline=[None])]))
    {'threat_model': 'none', 'headline': inf, 'caveat': '', 'claims': {}}
    """
    last = run.last_round
    if last is None:
        return {"threat_model": "", "headline": None, "caveat": run.caveat, "claims": {}}
    claims = {}
    for label, values in last.epsilon_accountant.items():
        finite = [v for v in values if v is not None]
        if label.startswith(PAPER_PREFIX) and finite:
            claims[label] = max(finite)
    return {"threat_model": last.threat_model, "headline": _headline_of(last), "caveat": run.caveat, "claims": claims}


def accountant_views(run: RunState) -> list[str]:
    """``[HEADLINE (when the events carry it), BASIC, <labelled views in order of appearance>]``."""
    views = [HEADLINE, BASIC] if any(e.epsilon_headline for e in run.rounds) else [BASIC]
    for e in run.rounds:
        views += [view for view in e.epsilon_accountant if view not in views]
    return views


def epsilon_matrix(run: RunState, view: str = BASIC) -> tuple[list[int], np.ndarray]:
    """Rounds and the ``[rounds, clients]`` cumulative epsilon of ``view`` (NaN: undefined)."""
    rounds, rows = [], []
    for e in run.rounds:
        if view == HEADLINE:
            values = e.epsilon_headline or None
            missing = np.inf  # headline None = nothing noised
        else:
            values = e.epsilon_spent if view == BASIC else e.epsilon_accountant.get(view)
            missing = np.nan
        if values is None:
            continue
        rounds.append(e.round)
        if e.threat_model == NO_NOISE:  # nothing noised: no ledger may read 0
            rows.append([np.inf] * len(values))
            continue
        rows.append([missing if v is None else float(v) for v in values])
    return rounds, np.asarray(rows, dtype=float) if rows else np.empty((0, 0))


def weights_matrix(run: RunState, num_clients: int) -> tuple[list[int], np.ndarray]:
    """Rounds and ``[rounds, clients]`` aggregation weights (NaN: client did not upload)."""
    rows = []
    for e in run.rounds:
        row = np.full(num_clients, np.nan)
        if len(e.uploaded) == len(e.weights):
            row[np.asarray(e.uploaded, dtype=int)] = e.weights
        rows.append(row)
    return [e.round for e in run.rounds], np.asarray(rows, dtype=float).reshape(len(rows), num_clients)


def method_events_table(run: RunState, kinds: Optional[Iterable[str]] = None) -> pd.DataFrame:
    """One row per :class:`~fedcore.events.MethodEvent`: round, kind, client, details."""
    wanted = set(kinds) if kinds is not None else None
    rows = []
    for e in run.rounds:
        for m in e.events:
            if wanted is None or m.kind in wanted:
                rows.append({"round": e.round, "kind": m.kind, "client": m.client,
                             "details": ", ".join(f"{k}={_short(v)}" for k, v in m.data.items()), **{
                                 f"data.{k}": v for k, v in m.data.items() if isinstance(v, (int, float))}})
    return pd.DataFrame(rows, columns=None if rows else ["round", "kind", "client", "details"])


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"[{len(value)} values]"
    return str(value)


# --- across runs ------------------------------------------------------------------------
def final_epsilon(run: RunState, view: str = BASIC) -> Optional[float]:
    """The largest per-client cumulative epsilon after the last round (None if undefined;
    ``inf`` under :data:`HEADLINE` when nothing is noised)."""
    _, matrix = epsilon_matrix(run, view)
    if matrix.size == 0 or np.all(np.isnan(matrix[-1])):
        return None
    return float(np.nanmax(matrix[-1]))


def seed_group(config: dict) -> str:
    """Key shared by configs that differ only in their seed."""
    rest = {k: v for k, v in config.items() if k != "seed"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()[:12]


def mean_band(tables: list[pd.DataFrame], column: str = "accuracy") -> pd.DataFrame:
    """Per round across runs: ``mean``, ``std`` (sample std, n - 1, 0 for one run: the project's convention,
    :func:`fedcore.sweep.rows.mean_std`), ``low``/``high`` (min / max) and ``n`` of ``column``."""
    frames = [t[["round", column]].dropna() for t in tables if column in t and len(t)]
    if not frames:
        return pd.DataFrame(columns=["round", "mean", "std", "low", "high", "n"])
    stacked = pd.concat(frames)
    g = stacked.groupby("round")[column]
    out = pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=1).fillna(0.0), "low": g.min(), "high": g.max(),
                        "n": g.count()}).reset_index()
    return out


PRIVATE_FIELDS = ("owner", "pid", "traceback", "replayed_from")
"""Record fields a download leaves out: who ran it, the worker's pid, (in records written
before tracebacks went to the host's log only) a traceback with server paths, and the run a
replay was copied from (another owner's private run id)."""


def export_json(record: dict, run: RunState) -> str:
    """The run as one JSON document: its record (config included) and every event; an error
    or stop reason without the server's paths."""
    from .data.root import public_message

    public = {k: v for k, v in record.items() if k not in PRIVATE_FIELDS}
    for key in ("error", "reason"):
        if isinstance(public.get(key), str):
            public[key] = public_message(public[key])
    return json.dumps({"run": public, "events": [to_dict(e) for e in run.events]}, indent=1, default=str)


def export_csv(run: RunState) -> str:
    """The per-round table as CSV."""
    return rounds_table(run).to_csv(index=False)
