"""Running experiments outside the caller: worker processes, the run store, result tables.

Plain Python (never imports Streamlit): the dashboard, scripts and tests share it.

- :class:`RunStore` (``store.py``): every job's record (one set of status words) and the
  runs' JSON event streams on disk.
- :class:`Jobs` (``jobs.py``): the one job manager: queue, start, stop and watch runs,
  sweeps and audits (``audits.py``); who trains next is ``policy.py`` (pure), how a job
  trains ``launchers.py`` (spawned processes, one interface) and ``warm.py`` (the warm
  worker); ``worker.py`` runs inside the processes.
- ``results.py``: per-round tables, epsilon matrices, seed bands, exports.
- ``links.py``: a config as URL parameters / a CLI line; ``labels.py``: run names;
  ``budgets.py``: the papers' L/M/H budget tiers; ``preview.py``: the data split of a
  config without training.
"""
from .jobs import Jobs
from .labels import run_label
from .store import ACTIVE, TERMINAL, EventCache, RunStore, default_store_dir

__all__ = ["ACTIVE", "TERMINAL", "EventCache", "Jobs", "RunStore", "default_store_dir", "run_label"]
