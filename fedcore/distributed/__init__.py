"""Sweeps and paper reproductions on a Ray cluster (the optional extra ``requirements-ray.txt``).

``python -m fedcore sweep ... --ray [ADDRESS]`` and ``python -m fedcore reproduce PAPER
--ray [ADDRESS]`` send their runs out as Ray tasks and stream the results back into the
same ``frontier.json`` / ``<paper>.json`` as a local run.

- :mod:`.cluster`: connecting (a local instance, ``auto``, ``HOST:PORT``, ``ray://``),
  ``$FEDCORE_RAY_ADDRESS`` (the host setting the dashboard uses).
- :mod:`.tasks`: a sweep cut into tasks (one per lockstep batch of one architecture) and
  the task bodies; each task asks for its CPUs and, for CUDA runs, one GPU.
- :mod:`.driver`: submit, stream outcomes back with ``ray.wait``, retry once, cancel.
- :mod:`.sweep`: :class:`RaySweep` (rows to ``frontier.json``, skip what is done) and
  :func:`submit_sweep` (a background handle with ``progress()`` / ``cancel()``).
- :mod:`.reproduce`: a paper's runs on Ray, then the usual report.
- :mod:`.cli`: the ``--ray`` paths of the two sub-commands.

Importing this package does not import Ray; Ray is imported when a cluster is used.
"""
from .cluster import ADDRESS_ENV, check_address, configured_address
from .sweep import RaySweep, SweepHandle, submit_sweep

__all__ = ["ADDRESS_ENV", "RaySweep", "SweepHandle", "check_address", "configured_address", "submit_sweep"]
