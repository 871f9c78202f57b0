"""The third number of a frontier point: an audited ε lower bound (``sweep --audit``, and the
Frontier page's "Audit each point").

Each finished point's config is audited with :func:`fedcore.audit.run.audit_run` (one report of
a local mechanism; canaries in one training run for central and record-level ones), so a row
holds the paper's claim, the accountant's ε (``epsilon_accountant``, the upper bound) and the
audited lower bound side by side (the columns: :data:`fedcore.sweep.rows.AUDIT_KEYS`). Audits
cost time, so this is an option: ``run_sweep(points, audit=TRIALS)`` (``sweep --audit``,
``start_sweep(manager, spec, audit=TRIALS)``), 0 = no audit.

Why the lower bound of one report bounds the run's headline from below: the run's output
contains that report, and post-processing cannot lower ε, so a client's whole-run ε is at least
the ε of any one of its reports.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ..config import RunConfig
from ..errors import ConfigError, FedcoreError
from .rows import AUDIT_KEYS, with_columns

DEFAULT_TRIALS = 5000
"""Draws per input of a distinguishing audit when ``--audit`` (or the page's option) gives none."""
MIN_TRIALS = 100
MAX_TRIALS = 1_000_000


def check_trials(value, *, zero_ok: bool = True) -> int:
    """``value`` as draws per input: 0 (no audit, if ``zero_ok``) or an integer in [100, 1e6];
    else ConfigError naming ``audit``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError("audit", value, f"must be a whole number of draws per input >= {MIN_TRIALS}")
    if (value != 0 or not zero_ok) and not MIN_TRIALS <= value <= MAX_TRIALS:
        raise ConfigError("audit", value, f"must be at least {MIN_TRIALS} draws per input (at most {MAX_TRIALS:,})")
    return value


def audit_columns(cfg: RunConfig, trials: int) -> dict:
    """The audit's columns for one frontier row (strict JSON: None where there is no number)."""
    from ..audit.run import audit_run

    try:
        r = audit_run(cfg, trials=trials).to_dict()
    except FedcoreError as exc:
        return {**dict.fromkeys(AUDIT_KEYS), "audit_error": str(exc)}
    return {"paper_claim": r.get("paper_claim"), "epsilon_audited": r.get("audited_epsilon"),
            "audit_confidence": r.get("confidence"), "audit_kind": r.get("kind"), "audit_scope": r.get("scope"),
            "audit_accountant": r.get("accountant_epsilon"), "audit_ceiling": r.get("ceiling"),
            "audit_seconds": round(float(r.get("seconds") or 0.0), 3),
            "audit_outside_premise": bool(r.get("outside_premise")), "audit_verdict": r.get("verdict")}


def audited(rows: Iterable[dict], points: Iterable, trials: int,
            should_stop: Callable[[], bool] = lambda: False) -> Iterator[dict]:
    """Each row of ``rows`` with its audit's columns added (``trials`` draws per input)."""
    return with_columns(rows, points, lambda cfg: audit_columns(cfg, trials), should_stop)


def findings(rows: Iterable[dict]) -> list[dict]:
    """The audited rows whose lower bound contradicts a stated ε, worst first.

    ``kind`` "violation": the lower bound exceeds the accountant's ε for the audit's own scope
    (``audit_accountant``): the accounting or the code is wrong. ``kind`` "claim": it exceeds the
    paper's claimed ε for that scope (``paper_claim``): the claim does not hold for what runs,
    unless the audit tested outside the claim's premise (``audit_outside_premise``: LDP-FL's
    per-weight claim assumes shuffled reports; the audit draws one un-shuffled report).
    Each: ``{"kind", "method", "epsilon", "seed", "audited", "bound"}`` (``bound`` the figure it
    exceeds).
    """
    out = []
    for r in rows:
        low = r.get("epsilon_audited")
        if low is None:
            continue
        upper, claim = r.get("audit_accountant"), r.get("paper_claim")
        if upper is not None and low > upper:
            out.append({"kind": "violation", "bound": upper})
        elif claim is not None and low > claim and not r.get("audit_outside_premise"):
            out.append({"kind": "claim", "bound": claim})
        else:
            continue
        out[-1].update(method=r["method"], epsilon=r["epsilon"], seed=r["seed"], audited=low)
    return sorted(out, key=lambda f: (f["kind"] != "violation", -(f["audited"] / max(f["bound"], 1e-12))))
