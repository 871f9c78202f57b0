"""Running jobs outside the caller: the job store, one job manager, the worker processes.

Plain Python (never imports Streamlit): the dashboard, scripts and tests share it.

- :class:`JobStore` (``store.py``): every job's record (one set of status words), as a
  :class:`JobRecord` (``record.py``: one frozen type for every kind, a run is one more job), and
  the jobs' JSON event streams on disk; every job that ended is archived, whatever its kind.
- :class:`Jobs` (``jobs.py``): the one job manager: queue, start, stop and watch runs, sweeps,
  audits (``audits.py``) and membership attacks (``membership.py``, both ``result_jobs.py``); who
  trains next is ``policy.py`` (pure), how a job trains ``launchers.py`` and ``warm.py`` (warm
  workers); ``worker.py`` runs inside the processes; ``tempo.py``: pause, step and slow motion.
- ``labels.py``: run names; ``limits.py``: what a host allows; ``owners.py``: who may see and
  stop a job; ``queueing.py``: when a queued job starts.
"""
from .jobs import Jobs
from .labels import run_label
from .record import JobRecord
from .store import ACTIVE, TERMINAL, EventCache, JobStore, default_store_dir

__all__ = ["ACTIVE", "TERMINAL", "EventCache", "JobRecord", "Jobs", "JobStore", "default_store_dir", "run_label"]
