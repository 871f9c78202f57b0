"""One job record type for every kind (issue 38 §1): a run is one more job.

:class:`JobRecord` is what the store hands out (:meth:`~fedcore.runner.store.JobStore.get_job`,
:meth:`~fedcore.runner.store.JobStore.list_jobs`): frozen, every kind's common fields typed, and
the kind's own (a sweep's spec, a launcher's entry, ...) in :attr:`JobRecord.fields`. What a job
*does* is said by its traits, never by its kind: ``pausable`` (it yields its worker slot between
rounds or points), ``events`` (it writes an event stream: a run's rounds), ``cache_key`` (its result
is cached, under a :class:`CacheKey`: a finished run is replayed). :func:`normalized` reads a record of an older store once
(a record without ``kind`` was a run's, then the only kind).

>>> r = JobRecord.from_dict({"id": "a", "config_hash": "h", "status": "finished", "rounds": 3})
>>> r.kind, r.pausable, r.events, r.cache_key, r.total
('run', True, True, CacheKey(config_hash='h', spend_exactly=False), 3)
>>> JobRecord.from_dict({"id": "sweep:k", "kind": "sweep", "status": "stopped", "done": 2, "total": 5}).events
False
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import Any, Mapping, Optional

RUN = "run"
"""The kind of a training run (:meth:`~fedcore.runner.Jobs.start`)."""


@dataclass(frozen=True)
class EqualPrivacy:
    """A job's equal-privacy request ("spend exactly ε in total", its record's ``match``): the whole
    run's headline ε ``target``; once solved (:func:`fedcore.equal_privacy.match_headline`, whose
    ``Matched`` it records), the ``headline`` ε the run spends, whether that ``reached`` the target,
    the ``knob`` it set, whether the run ``released`` anything at any budget, and with personalized
    budgets each client's set and spent ε (``per_client``, ``each``: solved each on its own)."""

    target: float
    headline: Optional[float] = None
    reached: Optional[bool] = None
    knob: Optional[float] = None
    released: Optional[bool] = None
    per_client: Optional[tuple] = None
    each: Optional[bool] = None

    @property
    def solved(self) -> bool:
        return self.headline is not None or self.released is False

    def to_dict(self) -> dict:
        """The record's ``match``: an unsolved request has no ``knob``."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_matched(cls, matched) -> "EqualPrivacy":
        """The solution :func:`fedcore.equal_privacy.match_headline` found."""
        return cls(matched.target, matched.headline, matched.reached, matched.knob, matched.released,
                   tuple(matched.per_client) or None, matched.each if matched.per_client else None)

    @classmethod
    def read(cls, value) -> Optional["EqualPrivacy"]:
        """A record's ``match`` (a dict, as stored), or None."""
        if not value:
            return None
        out = {f.name: value[f.name] for f in fields(cls) if f.name in value}
        if out.get("per_client") is not None:
            out["per_client"] = tuple(out["per_client"])
        return cls(**out)


def normalized(record: dict) -> dict:
    """``record`` as this version writes it: an older store's record (no ``kind``: a run's, no
    traits) gets its kind and its traits."""
    if "kind" in record and "events" in record:
        return record
    run = record.get("kind", RUN) == RUN
    return {"kind": RUN, "events": run, **({"pausable": True} if run else {}), **record}


@dataclass(frozen=True)
class JobRecord:
    """One job of any kind, as stored (see the module doc)."""

    id: str
    kind: str = RUN
    owner: Optional[str] = None
    label: str = ""
    created: float = 0.0
    status: str = "queued"
    error: Optional[str] = None
    done: int = 0
    """Progress: a run's rounds done, another kind's points (or tables) done."""
    total: Optional[int] = None
    """Of how many (None: not known yet)."""
    requested: Optional[dict] = None
    """The config it was asked to train (a run; None for other kinds)."""
    config: Optional[dict] = None
    """The config it trains: ``requested``, or with the budget solved for ``match``."""
    match: Optional[EqualPrivacy] = None
    cache_key: Optional["CacheKey"] = None
    pausable: bool = False
    events: bool = False
    fields: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Everything else the record holds (the kind's own: a sweep's spec, a launcher's entry, ...)."""

    @classmethod
    def from_dict(cls, record: dict) -> "JobRecord":
        r = normalized(record)
        events = bool(r.get("events"))
        common = {"id": r["id"], "kind": r["kind"], "owner": r.get("owner"), "label": r.get("label") or "",
                  "created": r.get("created") or 0.0, "status": r.get("status") or "queued", "error": r.get("error"),
                  "done": (r.get("rounds_done") if events else r.get("done")) or 0,
                  "total": r.get("rounds") if events else r.get("total"),
                  "requested": r.get("requested"), "config": r.get("config"), "match": EqualPrivacy.read(r.get("match")),
                  "cache_key": CacheKey.of(r) if r.get("config_hash") else None,
                  "pausable": bool(r.get("pausable")), "events": events}
        taken = {f.name for f in fields(cls)} | {"rounds_done", "rounds", "config_hash"}
        rest = {k: v for k, v in r.items() if k not in taken}
        return cls(**common, fields=MappingProxyType(rest))

    def get(self, name: str, default=None):
        """A field of the kind's own (:attr:`fields`), e.g. ``record.get("spec")``."""
        return self.fields.get(name, default)


@dataclass(frozen=True)
class CacheKey:
    """The result cache's key of a run: its requested config's hash, and whether it spends exactly ε
    (stored as ``done:<str(key)>``, the hash or the hash marked ``" spend exactly"``)."""

    config_hash: str
    spend_exactly: bool = False

    def __str__(self) -> str:
        return self.config_hash + (" spend exactly" if self.spend_exactly else "")

    @classmethod
    def of(cls, record: dict) -> "CacheKey":
        """The key of a run's record (a dict, as stored)."""
        return cls(record["config_hash"], bool(record.get("match")))
