"""Running experiments outside the caller: worker processes, the run store, result tables.

Plain Python (never imports Streamlit): the dashboard, scripts and tests share it.

- :class:`RunStore` (``store.py``): every job's record (one set of status words), as a
  :class:`JobRecord` (``record.py``: one frozen type for every kind, a run is one more job), and
  the runs' JSON event streams on disk; every job that ended is archived, whatever its kind.
- :class:`Jobs` (``jobs.py``): the one job manager: queue, start, stop and watch runs,
  sweeps and audits (``audits.py``); who trains next is ``policy.py`` (pure), how a job
  trains ``launchers.py`` (spawned processes, one interface) and ``warm.py`` (the warm
  worker); ``worker.py`` runs inside the processes.
- ``labels.py``: run names; ``limits.py``: what a host allows; ``owners.py``: who may see and
  stop a job.

What the runner once held for its first users lives where every feature reaches it:
:mod:`fedcore.tables` (an event stream as tables), :mod:`fedcore.links` (a config as a link),
:mod:`fedcore.budgets` (the papers' budget tiers), :mod:`fedcore.equal_privacy` (a knob solved to a
headline ε), :mod:`fedcore.reproduce.estimate` (durations) and
:func:`fedcore.engine.split.partition_preview` (the split before training).
"""
from .jobs import Jobs
from .labels import run_label
from .record import JobRecord
from .store import ACTIVE, TERMINAL, EventCache, RunStore, default_store_dir

__all__ = ["ACTIVE", "TERMINAL", "EventCache", "JobRecord", "Jobs", "RunStore", "default_store_dir", "run_label"]
