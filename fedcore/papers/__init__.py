"""The five papers' headline experiments as named presets (METHODS sections 1-5), one module per paper.

Each module (like :mod:`fedcore.recipes`) registers its paper with
:func:`~fedcore.papers.spec.register_paper`: the paper in :data:`PAPERS` and every row of every
:class:`~fedcore.papers.spec.Table` in :data:`fedcore.presets.PRESETS`, under a name
``<paper>_<dataset>_<setting>[_<method>]``, e.g. ``pldp_mnist_iid_c``, ``ldp_fl_mnist_eps1``,
``hw_dpfl_mnist_noniid``, ``kdp_fl_fmnist_noniid_eps1``, ``uldp_mnist_dsdp``;
``python -m fedcore reproduce PAPER`` runs a paper's tables over several seeds
(:mod:`fedcore.reproduce.run`).

The settings are METHODS' (taken from the papers' Sec. 5 / experiment sections). Where a
paper leaves a setting unspecified, the table's ``notes`` say what we chose and why;
``quick`` holds the reductions of ``--quick`` (2 CPU cores, a few minutes per paper),
described in ``quick_notes``.

The modules are imported in the papers' order (seed 000 to 004): the order of :data:`PAPERS`
(the Papers page's tabs, docs/reproduction.md's blocks) and of the presets' registration.
"""
from . import pldp  # noqa: F401  (seed 000)
from . import ldp_fl  # noqa: F401  (seed 001)
from . import hw_dpfl  # noqa: F401  (seed 002)
from . import kdp_fl  # noqa: F401  (seed 003)
from . import uldp  # noqa: F401  (seed 004)
from .spec import PAPER_PRIVACY_CLAIMS, PAPERS

__all__ = ["PAPERS", "PAPER_PRIVACY_CLAIMS"]
