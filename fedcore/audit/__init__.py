"""Audited privacy: empirical eps lower bounds beside the accountant's upper bound.

- :mod:`~fedcore.audit.stats`: attack outcomes -> eps lower bound with confidence;
- :mod:`~fedcore.audit.distinguish`: local mechanisms, one report, many draws;
- :mod:`~fedcore.audit.canary`: central / record-level, canaries in one training run;
- :mod:`~fedcore.audit.run`: :func:`audit_run` (config -> :class:`AuditResult`);
- :mod:`~fedcore.audit.cli`: ``python -m fedcore audit``.
"""
