"""The third number of a frontier point: an audited ε lower bound (``sweep --audit``).

Each finished point's config is audited with :func:`fedcore.audit.run.audit_run` (one report of
a local mechanism; canaries in one training run for central and record-level ones), so a row
holds the paper's claim, the accountant's ε (``epsilon_accountant``, the upper bound) and the
audited lower bound side by side. Audits cost time, so this is an option.
"""
from __future__ import annotations

from ..config import RunConfig
from ..errors import FedcoreError

AUDIT_KEYS = ("paper_claim", "epsilon_audited", "audit_confidence", "audit_kind", "audit_scope")


def audit_columns(cfg: RunConfig, trials: int) -> dict:
    """The audit's columns for one frontier row (strict JSON: None where there is no number)."""
    from ..audit.run import audit_run

    try:
        r = audit_run(cfg, trials=trials).to_dict()
    except FedcoreError as exc:
        return {**dict.fromkeys(AUDIT_KEYS), "audit_error": str(exc)}
    return {"paper_claim": r.get("paper_claim"), "epsilon_audited": r.get("audited_epsilon"),
            "audit_confidence": r.get("confidence"), "audit_kind": r.get("kind"), "audit_scope": r.get("scope")}
