"""Running experiments outside the caller: worker processes, the run store, result tables.

Plain Python (never imports Streamlit): the dashboard, scripts and tests share it.

- :class:`RunStore` (``store.py``): runs and their JSON event streams on disk.
- :class:`Jobs` (``jobs.py``): the one job manager: queue, start, stop and watch runs,
  sweeps and audits (``audits.py``) in spawned processes; ``worker.py`` runs inside them.
- ``results.py``: per-round tables, epsilon matrices, seed bands, exports.
- ``links.py``: a config as URL parameters / a CLI line; ``labels.py``: run names;
  ``budgets.py``: the papers' L/M/H budget tiers; ``preview.py``: the data split of a
  config without training.
"""
from .jobs import Jobs
from .labels import run_label
from .store import ACTIVE, TERMINAL, EventCache, RunStore, default_store_dir

__all__ = ["ACTIVE", "TERMINAL", "EventCache", "Jobs", "RunStore", "default_store_dir", "run_label"]
