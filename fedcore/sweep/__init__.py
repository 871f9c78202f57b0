"""ε sweeps: the accuracy / privacy trade-off of several methods in one command.

``python -m fedcore sweep --preset demo --methods ldp_fl,pldp_b --epsilons 0.1,1,10 --seeds 3
--out frontier.json`` trains every (method, target ε, seed) point plus each method's
no-privacy reference and writes ``{"rows": [...]}`` (:mod:`.rows`).

- :mod:`.spec`: what to sweep (:class:`SweepSpec`), parsed and validated; the points.
- :mod:`.runner`: trains the points, one row per finished point (batched by default:
  :mod:`fedcore.engine.lockstep`).
- :mod:`.rows`: the row format, strict-JSON ``frontier.json`` I/O, the mean ± std table.
- :mod:`.cli`: the ``sweep`` sub-command; :mod:`.job`: a sweep in a background process
  for the dashboard.
"""
from .rows import FRONTIER_KEYS, read_frontier, summary_table, write_frontier
from .scenarios import DEFAULT_METHODS, SCENARIOS
from .spec import DEFAULT_EPSILONS, SweepPoint, SweepSpec

__all__ = ["DEFAULT_EPSILONS", "DEFAULT_METHODS", "SCENARIOS", "FRONTIER_KEYS", "SweepPoint", "SweepSpec",
           "read_frontier", "summary_table", "write_frontier"]
