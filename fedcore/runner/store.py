"""The job store: the record of every job (runs, sweeps, audits, ...) and every run's event
stream, on disk as JSON.

One :class:`JobStore` wraps a ``diskcache.Cache(directory, disk=diskcache.JSONDisk)``
(values are JSON, never pickles, so a store can be read by any tool and cannot execute
code). Layout, all keys tagged with their job id so :meth:`JobStore.delete` is one call:

- ``run:<id>``    the job record (:meth:`JobStore.create_job`), whatever its kind (the prefix of a store
  from when a run was the only kind, kept so that every store opens): id,
  ``kind`` (``run``, ``sweep``, ``audit``; an attack is one more), owner, label, created,
  ``status`` (:data:`ACTIVE` or :data:`TERMINAL`), progress (a run's ``rounds_done`` of ``rounds``,
  another kind's ``done`` of ``total``), error, pid, and the kind's own fields. A run keeps
  the config it was asked for (``requested``, hashed in ``config_hash``) apart from the one
  it trains (``config``: the same, or with the budget solved for its ``match``,
  :class:`EqualPrivacy`); a sweep keeps its spec, an audit its config. Sweep rows and audit
  results stay files the record names;
- ``n:<id>``      number of events written so far;
- ``ev:<id>:<k>`` event ``k`` (a dict from :func:`fedcore.events.to_dict`; read back by
  :func:`fedcore.events.replay`);
- ``stop:<id>``   set when someone asked the job to stop;
- ``beat:<id>``   time of the last read of the run's events (the worker's heartbeat);
- ``index``       ids of all jobs in creation order;
- ``done:<key>``  id of the finished run of a :class:`CacheKey` (the result cache).

Beside the database, every job that ended (finished, stopped or failed), whatever its kind, is
archived as one JSON file, ``archive/<id>.json`` (its record and every event, written atomically
when it ends and rewritten when its record changes later). The archives are what a store is
rebuilt from: ended runs, sweeps, audits and reproductions survive a damaged or deleted ``cache.db``.

Safety: the folder is created (and kept) private, mode 0700: diskcache still unpickles
rows that a writer marked as pickles, so nobody else may write there. A store folder
deleted while the server runs is recreated on the next access (its earlier runs are
gone, and :attr:`JobStore.problem` says so); a damaged ``cache.db`` found when the store
is opened with ``check=True`` is moved aside to ``cache.db.damaged-<time>`` and a fresh
store is started from the archives (every run that had ended is listed again; runs that
were queued or training are lost). Damaged means what SQLite calls malformed or not a database
(:func:`damaged`): a full disk, an I/O error, a read-only file or a lock is never moved aside, it is a
:class:`StoreError` saying so (:func:`unusable`: "the disk is full: ... nothing is lost"). And with
``check=True``, whatever the check says, every ended job whose archive the database lacks (an empty
``cache.db``, a missing one) is restored, and :attr:`JobStore.problem` says how many and why. A ``cache.db`` deleted or replaced under a process
(another inode at the same path) is noticed within :data:`EXISTENCE_CHECK_S` and reopened;
a worker whose run record is then gone stops itself (:mod:`fedcore.runner.worker`). Either way the dashboard shows :attr:`JobStore.problem` as a banner,
and a failure that persists raises :class:`StoreError` (one readable line).

Concurrency: one writer process per run appends events (an event is written before the
counter that makes it visible, so a reader never sees a half-written stream); any number
of readers poll with :meth:`JobStore.read_events` from an offset. Read-modify-write of a
record runs inside a SQLite transaction (``Cache.transact``).

>>> import tempfile
>>> store = JobStore(tempfile.mkdtemp())
>>> run = store.create_run({"rounds": 2}, "abc123", label="demo")
>>> from fedcore.events import RunFinished, replay
>>> store.append_event(run["id"], RunFinished("stopped", 0, 0.5))
1
>>> replay(store.read_events(run["id"], 0)).status, store.get_job(run["id"]).status
('stopped', 'stopped')
"""
from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import sqlite3
import stat
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Optional

import diskcache

from ..errors import FedcoreError
from ..files import write_atomic
from ..events import Event, RunFinished, RunState, fold, replay, to_dict
from .record import RUN, CacheKey, EqualPrivacy, JobRecord, normalized  # noqa: F401  (re-exported)

STORE_ENV = "FEDCORE_STORE"
QUEUED, RUNNING, FINISHED, STOPPED, FAILED = "queued", "running", "finished", "stopped", "failed"
ACTIVE = (QUEUED, RUNNING)
"""Statuses of a job waiting for a worker slot or holding one."""
TERMINAL = (FINISHED, STOPPED, FAILED)
"""Statuses after which a job never changes again: with :data:`ACTIVE`, every kind's status words."""


def default_store_dir() -> Path:
    """``$FEDCORE_STORE``, else ``$XDG_CACHE_HOME/fedcore/runs`` (``~/.cache/fedcore/runs``)."""
    explicit = os.environ.get(STORE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "fedcore" / "runs"


def new_run_id() -> str:
    """Sortable, unique, hard to guess: creation time to the second plus 12 random hex
    digits (a run's link is what shares it, so its id must not be guessable)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:12]


class StoreError(FedcoreError):
    """The run store cannot be read or written (one line, shown as a banner)."""


PRIVATE = 0o700
ARCHIVE = "archive"
"""Sub-folder of the store holding ``<id>.json`` of every run that ended."""
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,119}$")
"""A job id that may name an archive file: a run's id, ``sweep:<key>``, ``audit:<key>``, ..."""


def archive_name(job_id: str) -> str:
    """The archive file's stem of ``job_id`` (``:`` is ``+`` there: no ``+`` is in an id)."""
    return job_id.replace(":", "+")
EXISTENCE_CHECK_S = 1.0
"""At most this often an access checks that the store's database file still exists."""


def _recovering(method):
    """Run ``method``; if SQLite fails (folder deleted, file replaced), reopen and retry once."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        self._ensure_present()
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as first:
            try:
                self._reopen(f"the run store failed ({first}) and was reopened")
                return method(self, *args, **kwargs)
            except (sqlite3.Error, OSError) as exc:
                raise StoreError(f"the run store at {self.directory} cannot be used: {unusable(exc)}") from None

    return wrapper


class JobStore:
    """Jobs of every kind and their event streams under ``directory`` (default :func:`default_store_dir`).

    ``check=True`` (the dashboard's manager) runs SQLite's ``quick_check`` on start-up and
    replaces a damaged database; :attr:`problem` then describes what happened.
    """

    def __init__(self, directory: str | Path | None = None, *, check: bool = False):
        self.directory = Path(directory).expanduser() if directory else default_store_dir()
        self.problem: Optional[str] = None
        self._checked_at = time.monotonic()
        before = self._file_size()
        try:
            self._open()
            if check:
                self._check()
                restored = self._restore_archives()  # the archives are the truth, whatever the check said
                self._backfill_archives()
                if restored:
                    self.problem = (f"{restored} jobs that had ended were restored from their archives: the store's "
                                    f"database {_WHY_EMPTY.get(before, 'lacked them')}.")
        except (sqlite3.Error, OSError) as exc:
            if not check or not damaged(exc):
                raise StoreError(f"the run store at {self.directory} cannot be opened: {unusable(exc)}") from None
            self._quarantine(exc)

    # --- opening, checking, recovering ------------------------------------------------
    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=PRIVATE)
        keep_private(self.directory)
        # eviction off: a full disk must never silently drop somebody's results
        self.cache = diskcache.Cache(str(self.directory), disk=diskcache.JSONDisk,
                                     eviction_policy="none", tag_index=True, timeout=60)
        self._db_id = self._file_id()

    def _file_size(self) -> Optional[int]:
        """Size of ``cache.db`` in bytes, or None when it is missing."""
        try:
            return (self.directory / "cache.db").stat().st_size
        except OSError:
            return None

    def _file_id(self):
        """(device, inode) of ``cache.db``, or None when it is missing."""
        try:
            info = (self.directory / "cache.db").stat()
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def _check(self) -> None:
        rows = self.cache._sql("PRAGMA quick_check").fetchall()
        if [tuple(r) for r in rows] != [("ok",)]:
            raise Damaged("quick_check: " + "; ".join(str(r[0]) for r in rows[:3]))
        self.cache.get("index", [])

    def _quarantine(self, exc: BaseException) -> None:
        """Move a damaged database aside (only one that SQLite calls malformed or not a database:
        :func:`damaged`) and start a store from the archives."""
        with contextlib.suppress(Exception):  # it may never have opened
            self.cache.close()
        db = self.directory / "cache.db"
        moved = db.with_name(f"cache.db.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        while moved.exists():  # never over an earlier copy
            moved = moved.with_name(moved.name + "+")
        try:
            for suffix in ("", "-wal", "-shm"):
                side = self.directory / f"cache.db{suffix}"
                if side.exists():
                    side.rename(self.directory / f"{moved.name}{suffix}")
            self._open()
            restored = self._restore_archives()
        except (sqlite3.Error, OSError) as again:  # cannot be moved, or the fresh store fails too: said, once
            raise StoreError(f"the run store at {self.directory} cannot be opened: {unusable(again)}") from None
        self.problem = (f"The run store was damaged ({str(exc).splitlines()[0][:120]}); it was moved aside "
                        f"to {moved.name} and a new store was started"
                        + (f" with the {restored} jobs that had ended (runs, sweeps, audits, reproductions; "
                           "from their archives)." if restored else ", empty (no job had ended)."))

    def _ensure_present(self) -> None:
        now = time.monotonic()
        if now - self._checked_at < EXISTENCE_CHECK_S:
            return
        self._checked_at = now
        current = self._file_id()
        if current is None:
            self._reopen("The run store folder was missing and has been recreated: runs from before are gone.")
        elif current != self._db_id:  # deleted and recreated (by another process), or replaced
            self._reopen("The run store's database was replaced and has been reopened.")

    def _reopen(self, problem: str) -> None:
        with contextlib.suppress(Exception):
            self.cache.close()
        self._open()
        restored = self._restore_archives()
        self.problem = problem if not restored else (
            problem.replace(": runs from before are gone.", "") + f" {restored} jobs that had ended were restored "
            "from their archives.")

    # --- archives: what a damaged store is rebuilt from -------------------------------
    def _archive_path(self, job_id: str) -> Optional[Path]:
        return self.directory / ARCHIVE / f"{archive_name(job_id)}.json" if _SAFE_ID.match(str(job_id)) else None

    def _archive(self, job_id: str) -> None:
        """Write ``archive/<id>.json`` (record + events) of a job of any kind that ended; atomic, 0600."""
        path = self._archive_path(job_id)
        record = self.cache.get(f"run:{job_id}")
        if path is None or record is None or record.get("status") not in TERMINAL:
            return
        n = self.cache.get(f"n:{job_id}", 0)
        events = [self.cache.get(f"ev:{job_id}:{k}") for k in range(n)]
        with contextlib.suppress(OSError):  # a full disk: the database still has the run
            path.parent.mkdir(exist_ok=True, mode=PRIVATE)
            write_atomic(path, json.dumps({"record": record, "events": [e for e in events if e is not None]}))

    def _backfill_archives(self) -> None:
        """Archive jobs that ended before archives existed (a store from an older version)."""
        folder = self.directory / ARCHIVE
        have = {p.stem.replace("+", ":") for p in folder.glob("*.json")} if folder.is_dir() else set()
        for job_id in self.cache.get("index", []):
            if job_id not in have:
                self._archive(job_id)  # only jobs that ended are written

    def _restore_archives(self) -> int:
        """Put every archived run that the database lacks back into it; returns how many."""
        folder = self.directory / ARCHIVE
        if not folder.is_dir():
            return 0
        known = set(self.cache.get("index", []))
        restored = []
        for path in folder.glob("*.json"):
            job_id = path.stem.replace("+", ":")
            if job_id in known or not _SAFE_ID.match(job_id):
                continue
            try:
                data = json.loads(path.read_text())
                record, events = data["record"], data["events"]
                if record.get("id") != job_id or record.get("status") not in TERMINAL or not isinstance(events, list):
                    continue
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue  # a damaged archive: that run is lost, the others not
            with self.cache.transact():
                for k, event in enumerate(events):
                    self.cache.set(f"ev:{job_id}:{k}", event, tag=job_id)
                self.cache.set(f"n:{job_id}", len(events), tag=job_id)
                self.cache.set(f"beat:{job_id}", record.get("created", 0.0), tag=job_id)
                self.cache.set(f"run:{job_id}", record, tag=job_id)
                if record["status"] == "finished" and record.get("config_hash"):
                    self.cache.set(f"done:{CacheKey.of(record)}", job_id)
            restored.append((record.get("created", 0.0), job_id))
        if restored:
            with self.cache.transact():
                ids = self.cache.get("index", [])
                have = set(ids)
                self.cache.set("index", [i for _, i in sorted(restored) if i not in have] + ids)
        return len(restored)

    # --- jobs -------------------------------------------------------------------------
    @_recovering
    def create_job(self, job_id: str, kind: str, *, owner: Optional[str] = None, label: str = "",
                   **fields: Any) -> dict:
        """Record job ``job_id`` of ``kind`` as ``queued`` (replacing an earlier record of that
        id that ended: a sweep trained again) with the kind's ``fields``; returns the record."""
        now = time.time()
        record = {"id": job_id, "kind": kind, "owner": owner, "label": label, "created": now, "status": QUEUED,
                  "error": None, "pid": None, "events": False, **fields}
        with self.cache.transact():
            ids = self.cache.get("index", [])
            self.cache.delete(f"stop:{job_id}")
            self.cache.set(f"run:{job_id}", record, tag=job_id)
            self.cache.set(f"n:{job_id}", 0, tag=job_id)
            self.cache.set(f"beat:{job_id}", now, tag=job_id)
            self.cache.set("index", [i for i in ids if i != job_id] + [job_id])
        return record

    @_recovering
    def create_run(self, config: dict, config_hash: str, *, label: str = "", run_id: Optional[str] = None,
                   owner: Optional[str] = None, match: Optional[EqualPrivacy] = None, **extra: Any) -> dict:
        """Record a new run of the requested ``config`` (spending exactly ε with ``match``) with
        status ``queued``; returns the record."""
        return self.create_job(run_id or new_run_id(), RUN, owner=owner, label=label, requested=config,
                               config=config, config_hash=config_hash, match=match and match.to_dict(),
                               rounds=config.get("rounds"), rounds_done=0, final_accuracy=None, events=True,
                               pausable=True, **extra)

    @_recovering
    def claim(self, job_id: str) -> Optional[dict]:
        """Hand queued job ``job_id`` to a worker: its record, now with ``handed_over``; None when
        it is no longer queued, was handed over already (another manager of this store took it)
        or was asked to stop (it then ends ``stopped``)."""
        with self.cache.transact():
            record = self.cache.get(f"run:{job_id}")
            if record is None or record["status"] != QUEUED or record.get("handed_over"):
                return None
            stop = bool(self.cache.get(f"stop:{job_id}", False))
            if not stop:
                record["handed_over"] = time.time()
                self.cache.set(f"run:{job_id}", record, tag=job_id)
        if stop:
            self.finish(job_id, STOPPED, reason="stopped before it started")
            return None
        return record

    @_recovering
    def get_job_dict(self, job_id: str) -> Optional[dict]:
        """The job record of ``job_id`` as a dict (any kind; an older store's read as this version
        writes it), or None if there is no such job."""
        return self._normal(self.cache.get(f"run:{job_id}"))

    @staticmethod
    def _normal(record: Optional[dict]) -> Optional[dict]:
        return None if record is None else normalized(record)

    def get_job(self, job_id: str) -> Optional[JobRecord]:
        """The :class:`~fedcore.runner.record.JobRecord` of ``job_id``, or None."""
        record = self.get_job_dict(job_id)
        return None if record is None else JobRecord.from_dict(record)

    def list_jobs(self, kind: Optional[str] = None) -> list[JobRecord]:
        """Every job of ``kind`` (None: of every kind) as a :class:`~fedcore.runner.record.JobRecord`,
        newest first."""
        return [JobRecord.from_dict(r) for r in self.list_job_dicts(kind)]

    @_recovering
    def update_job(self, job_id: str, **fields: Any) -> Optional[JobRecord]:
        """Set ``fields`` on the record (atomically; an :class:`~fedcore.runner.record.EqualPrivacy`
        ``match`` as its dict) and return it; a terminal status is never changed."""
        if isinstance(fields.get("match"), EqualPrivacy):
            fields["match"] = fields["match"].to_dict()
        with self.cache.transact():
            record = self.cache.get(f"run:{job_id}")
            if record is None:
                return None
            if record["status"] in TERMINAL:
                fields.pop("status", None)
            record.update(fields)
            self.cache.set(f"run:{job_id}", record, tag=job_id)
        if record["status"] in TERMINAL:
            self._archive(job_id)
        return JobRecord.from_dict(record)

    @_recovering
    def list_job_dicts(self, kind: Optional[str] = None) -> list[dict]:
        """Every record of ``kind`` (None: of every kind) as a dict, newest first."""
        ids = self.cache.get("index", [])
        records = (self.cache.get(f"run:{i}") for i in reversed(ids))
        return [r for r in map(self._normal, records) if r is not None and kind in (None, r["kind"])]

    @_recovering
    def job_ids(self) -> list[str]:
        """Ids of all jobs in creation order (oldest first)."""
        return list(self.cache.get("index", []))

    @_recovering
    def delete(self, job_id: str) -> bool:
        """Remove a job and all its events; True if it existed."""
        with self.cache.transact():
            record = self.cache.get(f"run:{job_id}")
            self.cache.set("index", [i for i in self.cache.get("index", []) if i != job_id])
            if record is not None and record.get("config_hash") \
                    and self.cache.get(f"done:{CacheKey.of(record)}") == job_id:
                self.cache.delete(f"done:{CacheKey.of(record)}")
        self.cache.evict(job_id)
        path = self._archive_path(job_id)
        if path is not None:
            path.unlink(missing_ok=True)
        return record is not None

    @_recovering
    def find_finished(self, key: CacheKey) -> Optional[str]:
        """The id of a run of this :class:`CacheKey` that finished (all rounds), or None."""
        job_id = self.cache.get(f"done:{key}")
        record = self.get_job_dict(job_id) if job_id else None
        return job_id if record and record["status"] == "finished" else None

    @_recovering
    def find_owned(self, key: CacheKey, owner: Optional[str]) -> Optional[str]:
        """The id of ``owner``'s run of this :class:`CacheKey` that finished, else one that is
        queued or running, else None."""
        found = {}
        for record in self.list_job_dicts(RUN):
            if CacheKey.of(record) == key and record.get("owner") == owner:
                if record["status"] == "finished":
                    return record["id"]
                if record["status"] in ACTIVE:
                    found.setdefault("active", record["id"])
        return found.get("active")

    @_recovering
    def copy_job(self, job_id: str, *, owner: Optional[str]) -> Optional[str]:
        """A new job of ``owner`` holding a copy of finished job ``job_id`` (its record and
        every event; a run's: a replay from the result cache that its new owner controls)."""
        record = self.get_job_dict(job_id)
        if record is None:
            return None
        events = self.read_events(job_id, 0, touch=False)
        keep = {k: v for k, v in record.items() if k not in ("id", "label", "created", "owner", "pid")}
        copy = self.create_job(new_run_id(), record["kind"], label=record["label"], owner=owner, replayed_from=job_id)
        with self.cache.transact():
            for k, event in enumerate(events):
                self.cache.set(f"ev:{copy['id']}:{k}", event, tag=copy["id"])
            self.cache.set(f"n:{copy['id']}", len(events), tag=copy["id"])
            self.cache.set(f"run:{copy['id']}", {**copy, **keep}, tag=copy["id"])
        self._archive(copy["id"])
        return copy["id"]

    # --- events -----------------------------------------------------------------------
    @_recovering
    def append_event(self, job_id: str, event: Event) -> int:
        """Append one typed event (stored as :func:`~fedcore.events.to_dict`'s dict); returns the
        new number of events. The record takes the fields the event settles
        (:meth:`~fedcore.events.RunState.record`: status, rounds done, final accuracy, ...); an
        end that finished registers the run in the result cache. Events that arrive after the
        run already ended are dropped.
        """
        seen = fold(RunState(), event)
        with self.cache.transact():
            record = self.cache.get(f"run:{job_id}")
            if record is None:
                raise KeyError(f"unknown run {job_id!r}")
            n = self.cache.get(f"n:{job_id}", 0)
            if record["status"] in TERMINAL:
                return n
            self.cache.set(f"ev:{job_id}:{n}", to_dict(event), tag=job_id)
            self.cache.set(f"n:{job_id}", n + 1, tag=job_id)
            record.update(seen.record(), **({"finished": time.time()} if seen.end else {}))
            if seen.status == "finished":
                self.cache.set(f"done:{CacheKey.of(record)}", job_id)
            self.cache.set(f"run:{job_id}", record, tag=job_id)
        if seen.end:
            self._archive(job_id)
        return n + 1

    def finish(self, job_id: str, status: str, error: Optional[str] = None, **extra: Any) -> bool:
        """End a job from outside its worker (it died, or never started); a run keeps its rounds.

        A run gets a ``RunFinished`` event with the rounds already stored; another kind its
        status and error. Returns False if the job had already ended (the worker's own end wins).
        """
        record = self.get_job_dict(job_id)
        if record is None or record["status"] in TERMINAL:
            return False
        if not record["events"]:
            return self.update_job(job_id, status=status, error=error, finished=time.time(), **extra) is not None
        elapsed = time.time() - record["created"]
        end = RunFinished(status, record["rounds_done"], elapsed, record["final_accuracy"], error)
        self.append_event(job_id, end)
        if extra:
            self.update_job(job_id, **extra)
        return True

    @_recovering
    def num_events(self, job_id: str) -> int:
        return self.cache.get(f"n:{job_id}", 0)

    @_recovering
    def read_events(self, job_id: str, offset: int = 0, *, touch: bool = True) -> list[dict]:
        """Events ``offset, offset+1, ...`` written so far (poll with the growing offset).

        ``touch`` refreshes the run's heartbeat: somebody is still watching it.
        """
        if touch:
            self.touch(job_id)
        n = self.cache.get(f"n:{job_id}", 0)
        events = [self.cache.get(f"ev:{job_id}:{k}") for k in range(offset, n)]
        return [e for e in events if e is not None]

    # --- control ----------------------------------------------------------------------
    @_recovering
    def request_stop(self, job_id: str) -> None:
        self.cache.set(f"stop:{job_id}", True, tag=job_id)

    @_recovering
    def stop_requested(self, job_id: str) -> bool:
        return bool(self.cache.get(f"stop:{job_id}", False))

    @_recovering
    def touch(self, job_id: str) -> None:
        """Refresh the heartbeat: a reader is still interested in this run."""
        self.cache.set(f"beat:{job_id}", time.time(), tag=job_id)

    @_recovering
    def last_beat(self, job_id: str) -> float:
        return self.cache.get(f"beat:{job_id}", 0.0)

    @_recovering
    def ping(self) -> None:
        """One read: raises :class:`StoreError` when the store cannot be used now (a disk that filled
        up while the server ran fails even reads from a new thread: SQLite's shared memory cannot grow)."""
        self.cache.get("ping")

    def close(self) -> None:
        self.cache.close()


class Damaged(sqlite3.DatabaseError):
    """SQLite's own check found the database damaged."""


_WHY_EMPTY = {None: "was missing (a fresh store)", 0: "was an empty file (0 bytes)"}
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_FULL = "the disk is full: nothing new can be saved; nothing is lost"
_UNUSABLE = {sqlite3.SQLITE_FULL: _FULL, sqlite3.SQLITE_IOERR: _FULL.replace("is full", "is full or failing"),
             sqlite3.SQLITE_READONLY: "the store is read-only: nothing new can be saved; nothing is lost",
             sqlite3.SQLITE_BUSY: "the store is locked by another process: nothing is lost; try again",
             sqlite3.SQLITE_LOCKED: "the store is locked by another process: nothing is lost; try again"}
_UNUSABLE_OS = {errno.ENOSPC: _FULL, errno.EFBIG: _FULL, errno.EROFS: _UNUSABLE[sqlite3.SQLITE_READONLY],
                errno.EDQUOT: _FULL.replace("disk is full", "disk quota is used up")}


def damaged(exc: BaseException) -> bool:
    """True only when SQLite says the database is malformed or not a database (what moving it aside
    repairs); never for a full disk, an I/O error, a read-only file or a lock (a write failure)."""
    if isinstance(exc, Damaged):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _DAMAGED


def unusable(exc: BaseException) -> str:
    """Why the store cannot be used, in words (a full disk says so and that nothing is lost)."""
    code = getattr(exc, "sqlite_errorcode", None)
    words = _UNUSABLE.get(code & 0xFF) if code is not None else _UNUSABLE_OS.get(getattr(exc, "errno", None))
    return f"{words} (SQLite: {exc})" if words and code is not None else words or str(exc)


def keep_private(directory: Path) -> None:
    """Make ``directory`` mode 0700 when it is ours (diskcache would unpickle what others write)."""
    with contextlib.suppress(OSError):
        info = directory.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != PRIVATE:
            directory.chmod(PRIVATE)


class EventCache:
    """Runs' folded event streams (:class:`~fedcore.events.RunState`), topped up incrementally
    from a store.

    The dashboard keeps one per server (``st.cache_resource``): each poll reads and folds only
    the events written since the last one. Holds at most ``max_runs`` runs (least recently
    used dropped).
    """

    def __init__(self, store: JobStore, max_runs: int = 64):
        self.store = store
        self.max_runs = max_runs
        self._runs: dict[str, RunState] = {}
        self._lock = threading.Lock()

    def run(self, run_id: str) -> RunState:
        """``run_id``'s events so far, folded (reading does not refresh the heartbeat: only the
        owner's page does, with :meth:`JobStore.touch`)."""
        with self._lock:
            run = self._runs.pop(run_id, RunState())
            if run.end is None:
                run = replay(self.store.read_events(run_id, len(run.events), touch=False), run)
            self._runs[run_id] = run
            while len(self._runs) > self.max_runs:
                self._runs.pop(next(iter(self._runs)))
            return run

    def forget(self, run_ids: Iterable[str]) -> None:
        with self._lock:
            for run_id in run_ids:
                self._runs.pop(run_id, None)
