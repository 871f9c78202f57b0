"""The rows of a sweep and ``frontier.json``: one row per (method, target ε, seed).

``frontier.json`` is strict JSON (no ``NaN`` / ``Infinity`` tokens)::

    {"rows": [{"method": "pldp_b", "epsilon": 1.0, "epsilon_accountant": 3.71,
               "epsilon_accountant_infinite": false, "threat_model": "local",
               "seed": 0, "accuracy": 0.83, "seconds": 0.21, ...}, ...]}

- ``epsilon``: the column's ε: with ``match`` ``"headline"`` the headline ε the point was
  calibrated to spend (equal privacy), with ``"target"`` the ``privacy.epsilon`` it was
  configured with (each paper's own reading); ``null`` for the method's reference rows.
- ``reference``: ``""`` for a private point, ``"no_privacy"`` (no clip, no noise) or
  ``"clip_only"`` (the method's clipping, negligible noise) for its reference lines (a file
  without the key: every ``null``-ε row is ``no_privacy``).
- ``match``, ``knob``: how the column was read, and the largest per-client
  ``privacy.epsilon`` the run used (the solved knob under ``match = "headline"``).
- ``caveat``: what the headline ε does not prove for this run ("" when it is a rigorous
  bound for what ran), e.g. "assumes Poisson sampling" or "an approximation".
- ``epsilon_accountant``: the *headline* ε the run actually spent: the tightest rigorous
  bound for its threat model, the largest over clients (``RoundEvent.epsilon_headline_run``).
  **Infinity is written as ``null`` with ``"epsilon_accountant_infinite": true``** (nothing
  was noised, or no rigorous bound exists), the same encoding as the event stream.
- ``threat_model``: ``local`` | ``central`` | ``record`` | ``none``.
- ``accuracy``: final test accuracy; ``seconds``: the run's wall time (for runs trained
  together in one batch, the batch's time divided by its number of runs).
- extra keys: ``config_hash`` (the run's cache key), ``rounds``, ``batched`` (trained in a
  lockstep batch), ``aggregated_rounds`` (rounds in which at least one update was aggregated;
  0: nothing was released and the model is the untrained one, e.g. PLDP-FL rule C selected
  nobody; null in files from before the key). A summary leaves the 0 rows out of its cells and
  counts them (``empty``). ``accountant``: the headline's (``"pld"``, the exact one; ``"rdp"`` for
  ULDP-FED's decaying clips and for files from before the key). ``epsilon_pld``: the same run's ε under
  dp-accounting's PLD accountant (null: ∞, or a file from before the key): the headline itself for a
  ``"pld"`` row; a summary cell shows it where it differs from an RDP headline by more than 10 %.
- audited sweeps (``--audit``; :mod:`.audit`) add :data:`AUDIT_KEYS`: ``epsilon_audited`` (the
  empirical ε lower bound, holding with confidence ``audit_confidence``), ``paper_claim``,
  ``audit_kind`` / ``audit_scope`` (what was attacked: one report, or one client / record of the
  whole run), ``audit_accountant`` (the accountant's ε for that same scope; null = ∞),
  ``audit_ceiling`` (the most that many draws can show; null for canary audits) and
  ``audit_seconds`` (the audit's own time, not in ``seconds``); a point whose
  audit could not run has them all null and an ``audit_error``.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Optional, Union

from ..errors import FedcoreError
from ..files import write_atomic

FRONTIER_KEYS = ("method", "epsilon", "epsilon_accountant", "threat_model", "seed", "accuracy", "seconds")
CSV_KEYS = FRONTIER_KEYS + ("accountant", "reference", "match", "knob", "caveat", "epsilon_accountant_infinite", "epsilon_pld",
                            "rounds", "aggregated_rounds", "batched", "config_hash")
AUDIT_KEYS = ("paper_claim", "epsilon_audited", "audit_confidence", "audit_kind", "audit_scope",
              "audit_accountant", "audit_ceiling", "audit_seconds")
"""The columns an audited sweep adds to every row (see the module doc)."""


def _finite(x: Optional[float]) -> Optional[float]:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def make_row(method: str, epsilon: Optional[float], seed: int, accuracy: Optional[float],
             headline: Optional[float], threat_model: str, seconds: float, *, config_hash: str = "",
             rounds: int = 0, batched: bool = False, reference: str = "", match: str = "target",
             knob: Optional[float] = None, caveat: str = "", aggregated_rounds: Optional[int] = None,
             epsilon_pld: Optional[float] = None, accountant: str = "") -> dict:
    """One frontier row; ``headline`` is a float, ``inf`` or None (= inf, as in events); ``accountant``
    the headline's (``"pld"``, ``"rdp"``, ``"none"``: ``RoundEvent.accountant``)."""
    infinite = headline is None or math.isinf(float(headline))
    return {"method": method, "epsilon": _finite(epsilon), "epsilon_accountant": None if infinite else float(headline),
            "epsilon_accountant_infinite": infinite, "threat_model": threat_model, "seed": int(seed),
            "accuracy": _finite(accuracy), "seconds": round(float(seconds), 4), "config_hash": config_hash,
            "rounds": int(rounds), "batched": bool(batched),
            "reference": reference or ("no_privacy" if epsilon is None else ""), "match": match,
            "knob": _finite(knob), "caveat": caveat,
            "aggregated_rounds": None if aggregated_rounds is None else int(aggregated_rounds),
            "epsilon_pld": _finite(epsilon_pld), "accountant": accountant or ("none" if infinite else "")}


def is_empty(row: dict) -> bool:
    """A run in which no update was ever aggregated (``aggregated_rounds`` 0): its accuracy is
    the untrained model's and its ε is that of no release, so no cell averages it."""
    return row.get("aggregated_rounds") == 0


def reference_of(row: dict) -> str:
    """A row's reference kind: ``""`` for a private point (older files: ``no_privacy`` for
    every row without an ε)."""
    return row.get("reference") or ("no_privacy" if row.get("epsilon") is None else "")


def dumps_frontier(rows: Iterable[dict]) -> str:
    """``{"rows": [...]}`` as strict JSON (raises on a NaN / infinite number)."""
    return json.dumps({"rows": list(rows)}, allow_nan=False, indent=1, ensure_ascii=False)


def write_frontier(path: Union[str, Path], rows: Iterable[dict]) -> None:
    """Write ``frontier.json`` atomically (:func:`write_atomic`)."""
    write_atomic(path, dumps_frontier(rows) + "\n")


def _refuse(token: str):
    raise ValueError(f"{token} is not strict JSON")


def read_frontier(path: Union[str, Path]) -> list[dict]:
    """The rows of a ``frontier.json``; a file without the row keys is refused in one line."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_refuse)
    except (OSError, ValueError) as exc:
        raise FedcoreError(f"{path}: not a frontier file ({str(exc)[:80]})") from None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or any(not isinstance(r, dict) or set(FRONTIER_KEYS) - set(r) for r in rows):
        raise FedcoreError(f"{path}: not a frontier file (expected {{\"rows\": [...]}} with keys "
                           + ", ".join(FRONTIER_KEYS) + ")")
    return rows


def rows_to_resume(path: Union[str, Path]) -> list[dict]:
    """The rows a sweep writing to ``path`` starts from, one rule for every backend (local, Ray,
    the dashboard's jobs): no file or an empty one, none (start fresh); a frontier file, its rows
    (the sweep resumes, training only the points not in it); anything else is refused in one line,
    never overwritten."""
    path = Path(path)
    try:
        if not path.read_text(encoding="utf-8").strip():
            return []
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        pass  # unreadable or not text: read_frontier says so
    try:
        return read_frontier(path)
    except FedcoreError as exc:
        raise FedcoreError(f"{exc}; a sweep resumes only from a frontier file (or starts afresh on an empty "
                           "one): move it away or pick another --out") from None


def rows_csv(rows: Iterable[dict]) -> str:
    """The rows as CSV (∞ headline written as ``inf``); audited rows add :data:`AUDIT_KEYS`
    (and ``audit_error`` where an audit could not run)."""
    rows = list(rows)
    keys = CSV_KEYS
    if any("epsilon_audited" in r for r in rows):
        keys += AUDIT_KEYS + (("audit_error",) if any(r.get("audit_error") for r in rows) else ())
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        out = dict(r)
        if r.get("epsilon_accountant_infinite"):
            out["epsilon_accountant"] = "inf"
        if r.get("epsilon") is None:
            out["epsilon"] = "none"
        w.writerow(out)
    return buf.getvalue()


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and **sample** std (n - 1; 0 for one value) of ``values``: the project's one convention for
    a spread over seeds (sweeps, reproduction records, the Compare page's bands)."""
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean, std


def cells(rows: Iterable[dict]) -> list[dict]:
    """Mean ± std (sample std, n - 1) of accuracy and headline ε per (method, target ε).

    Runs that aggregated nothing (:func:`is_empty`) are left out and counted in ``empty`` (a group of
    only such runs is left out: :func:`empty_runs` counts them).
    One dict per group: ``method``, ``epsilon`` (None = a reference line), ``reference``, ``n``, ``accuracy_mean``,
    ``accuracy_std``, ``headline_mean`` (None if any run had ∞), ``threat_model``, ``empty``, and for
    audited rows ``audited_min``: the smallest audited ε lower bound over the group's seeds
    (each seed's bound holds on its own; the smallest is the conservative summary), None when
    no row of the group was audited.
    """
    groups: dict[tuple, list[dict]] = defaultdict(list)
    order: list[tuple] = []
    for r in rows:
        key = (r["method"], r["epsilon"], reference_of(r))
        if key not in groups:
            order.append(key)
        groups[key].append(r)
    out = []
    for key in order:
        empty = sum(map(is_empty, groups[key]))
        rs = [r for r in groups[key] if r.get("accuracy") is not None and not is_empty(r)]
        if not rs:
            continue
        mean, std = mean_std([r["accuracy"] for r in rs])
        heads = [r["epsilon_accountant"] for r in rs]
        head = None if any(h is None for h in heads) else sum(heads) / len(heads)
        plds = [r.get("epsilon_pld") for r in rs]
        pld = None if any(p is None for p in plds) else sum(plds) / len(plds)
        audits = [r["epsilon_audited"] for r in rs if r.get("epsilon_audited") is not None]
        out.append({"method": key[0], "epsilon": key[1], "reference": key[2], "n": len(rs), "accuracy_mean": mean,
                    "accuracy_std": std, "headline_mean": head, "threat_model": rs[0]["threat_model"],
                    "audited_min": min(audits) if audits else None, "empty": empty, "pld_mean": pld})
    return out


def empty_runs(rows: Iterable[dict]) -> dict[tuple, tuple[int, int]]:
    """``{(method, column ε or reference kind): (runs that aggregated nothing, runs)}`` for the
    cells with at least one such run."""
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        c = counts[(r["method"], r["epsilon"] if r["epsilon"] is not None else reference_of(r))]
        c[0] += is_empty(r)
        c[1] += 1
    return {k: (e, n) for k, (e, n) in counts.items() if e}


REFERENCE_LABELS = {"clip_only": "clip only", "no_privacy": "no privacy"}


def summary_lines(rows: Iterable[dict]) -> list[dict]:
    """The frontier as a table, one ``{"method", "threat model", column: cell}`` per method:
    a column per ε (headed by what it means: ``headline ε`` under equal privacy, ``configured ε``
    otherwise), then the clip-only and no-privacy references. A cell is the mean accuracy (± std
    over more than one seed), the headline ε spent in brackets (``ε ≤`` the accountant's bound
    when an audit gives ``≥`` its smallest lower bound over the seeds), ``*`` when the method's
    caveat (column ``* caveat``, present when any method has one) says the bound is not proven for
    what ran, and "over its target" when an equal-privacy cell spent more than its column."""
    from ..accounting.headline import format_epsilon  # numbers for people (9,950); loads torch

    rows = list(rows)
    stats, empty = cells(rows), empty_runs(rows)
    eps = sorted({s["epsilon"] for s in stats if s["epsilon"] is not None} | {c for _, c in empty if not isinstance(c, str)})
    refs = [r for r in REFERENCE_LABELS if any(s["reference"] == r for s in stats) or any(c == r for _, c in empty)]
    match = next((r.get("match") for r in rows if r.get("epsilon") is not None), "target")
    head = "headline ε" if match == "headline" else "configured ε"
    cell = {(s["method"], s["epsilon"] if s["epsilon"] is not None else s["reference"]): s for s in stats}
    out = []
    for m in dict.fromkeys([s["method"] for s in stats] + [k[0] for k in empty]):
        threat = next((s["threat_model"] for s in stats if s["method"] == m and s["epsilon"] is not None), "none")
        line = {"method": m, "threat model": threat}
        caveats = method_caveat(rows, m)
        for c in eps + refs:
            s, ref = cell.get((m, c)), isinstance(c, str)
            text = "" if s is None else \
                f"{s['accuracy_mean']:.3f}" + (f" ± {s['accuracy_std']:.3f}" if s["n"] > 1 else "")
            if s is not None and not ref:
                bound = format_epsilon(s["headline_mean"]) + ("*" if caveats else "")
                if pld_differs(s):
                    bound += f"; PLD {format_epsilon(s['pld_mean'])}"
                if match == "headline" and s["headline_mean"] is not None and s["headline_mean"] > 1.01 * c:
                    bound += f", over its target {c:g}: not equal privacy"
                text += f" (ε ≤ {bound}, ≥ {format_epsilon(s['audited_min'])})" if s["audited_min"] is not None \
                    else f" (spent {bound})"
            elif s is not None and s["audited_min"] is not None:
                text += f" (ε ≥ {format_epsilon(s['audited_min'])})"
            if (m, c) in empty:
                text += (" " if text else "") + "[{} of {} runs aggregated nothing: left out]".format(*empty[(m, c)])
            line[REFERENCE_LABELS[c] if ref else f"{head} {c:g}"] = text
        if any(method_caveat(rows, k) for k in dict.fromkeys(r["method"] for r in rows)):
            line["* caveat"] = caveats
        out.append(line)
    return out


PLD_GAP = 0.10
"""A cell shows its PLD ε beside the (RDP) headline when they differ by more than this fraction."""


def pld_differs(cell: dict) -> bool:
    """Whether a :func:`cells` cell's PLD ε differs from its headline by more than :data:`PLD_GAP`."""
    head, pld = cell.get("headline_mean"), cell.get("pld_mean")
    return head is not None and pld is not None and head > 0 and abs(pld - head) > PLD_GAP * head


def accountant_of(rows: list[dict], method: Optional[str] = None) -> str:
    """The accountant of the headline ε of ``method``'s private rows (all methods' with None): ``"pld"``,
    ``"rdp"`` (rows from before the field were RDP's), or ``"pld+rdp"`` where they differ, which no
    comparison may mix (:data:`fedcore.accounting.headline.ACCOUNTANTS`).

    >>> accountant_of([{"method": "a", "epsilon": 1.0, "accountant": "pld"}, {"method": "b", "epsilon": 1.0}])
    'pld+rdp'
    """
    found = {r.get("accountant") or "rdp" for r in rows
             if (method is None or r["method"] == method) and r.get("epsilon") is not None
             and not r.get("epsilon_accountant_infinite")}
    return "+".join(sorted(found)) if found else "pld"


def method_caveat(rows: list[dict], method: str) -> str:
    """What the headline ε of ``method``'s private rows does not prove for what ran ("" = a rigorous
    bound; distinct caveats joined by "; ")."""
    return "; ".join(dict.fromkeys(r.get("caveat") for r in rows
                                   if r["method"] == method and r.get("epsilon") is not None and r.get("caveat")))


def summary_table(rows: Iterable[dict]) -> str:
    """:func:`summary_lines` as a Markdown table, after a line saying what the columns mean."""
    rows = list(rows)
    lines = summary_lines(rows)
    if not lines:
        return "(no finished points)"
    cols = list(lines[0])
    equal = any(c.startswith("headline ε") for c in cols)
    said = {"pld": "dp-accounting's exact (PLD) accountant", "rdp": "dp-accounting's RDP accountant",
            "pld+rdp": "the PLD accountant, RDP for some methods: those are not comparable"}[accountant_of(rows)]
    out = ["Columns: " + (f"headline ε (equal privacy: every point spent the column's proven ε, equal under {said}; "
                          "'PLD x': the PLD accountant's ε where it differs from an RDP headline by > 10 %)"
                          if equal else "configured ε (each method reads ε its own way)"),
           "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(line[c] or "–" for c in cols) + " |" for line in lines]
    return "\n".join(out)


CHANCE_BAND = 0.3
"""The issue's bar for "the trade-off is visible": accuracy at the smallest ε <= 0.3 ..."""
NEAR_REFERENCE = 0.05
"""... and at the largest ε within 5 points of the method's no-privacy reference."""


def trade_off(rows: Iterable[dict]) -> dict[str, dict]:
    """Per method: does the frontier show the trade-off, and the figures that say why not.

    ``{"low": acc at the smallest target ε, "high": acc at the largest, "reference": no-privacy
    acc, "gap": reference - high, "visible": low <= 0.3 and gap <= 0.05, "inflation": headline /
    target ε at the smallest target (how much more ε the run really spends than its label),
    "threat_model"}``; methods without both ends are left out.
    """
    stats = cells(rows)
    out = {}
    for m in dict.fromkeys(s["method"] for s in stats):
        mine = [s for s in stats if s["method"] == m]
        private = sorted((s for s in mine if s["epsilon"] is not None), key=lambda s: s["epsilon"])
        ref = next((s for s in mine if s["reference"] == "no_privacy"), None)
        if not private or ref is None:
            continue
        low, high = private[0], private[-1]
        gap = ref["accuracy_mean"] - high["accuracy_mean"]
        head = low["headline_mean"]
        out[m] = {"low": low["accuracy_mean"], "low_epsilon": low["epsilon"], "high": high["accuracy_mean"],
                  "high_epsilon": high["epsilon"], "reference": ref["accuracy_mean"], "gap": gap,
                  "visible": low["accuracy_mean"] <= CHANCE_BAND and gap <= NEAR_REFERENCE,
                  "inflation": None if head is None or not low["epsilon"] else head / low["epsilon"],
                  "threat_model": low["threat_model"]}
    return out


def with_columns(rows: Iterable[dict], points: Iterable, columns, should_stop=lambda: False):
    """Each row of ``rows`` with ``columns(config)`` of its point's config added (the point is found
    by the row's ``config_hash``); stops before the next row when ``should_stop()`` says so. The
    audit's and the attack's columns (:mod:`.audit`, :mod:`.attack`)."""
    by_hash = {p.config.config_hash(): p for p in points}
    for row in rows:
        if should_stop():
            return
        yield {**row, **columns(by_hash[row["config_hash"]].config)}
