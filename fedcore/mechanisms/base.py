"""The client-side privacy mechanism interface.

A mechanism transforms each selected client's model update given that client's budget
(METHODS section 0: "the client then clips and perturbs"). It sees a batch: the updates
of all clients of the round as one ``[m, d]`` tensor, with per-client budgets as tensors,
so calibration is vectorised rather than a loop over clients. It may keep state across
rounds (e.g. ULDP-FED's stored noisy updates) and emit :class:`MethodEvent` records.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Optional

from ..events import MethodEvent
from ..options import Configurable

if TYPE_CHECKING:  # annotations only: the interface (and resolving a config) loads no torch
    import numpy as np
    import torch

    from ..accounting.ledger import GaussianRecord
    from ..context import RunContext
    from .scalar import ScalarLaw


@dataclass
class Upload:
    """What the server receives in one round.

    values:       ``[m, d]`` perturbed updates (or signs in {-1, +1} when ``is_sign``).
    clients:      ``[m]`` client ids, aligned with ``values``.
    noise_std:    ``[m]`` per-client noise standard deviation (PLDP-FL's sigma_i,
                  KDP-FL's R), or None for noise-free uploads.
    spent:        ``[m]`` epsilon spent this round (basic composition); zeros if none.
    gaussian:     for Gaussian-based mechanisms, what the RDP ledger composes.
    claims:       labelled per-client epsilon figures for this round that a paper
                  states (added up by the ledger and shown beside the accountant's).
    pure_epsilon: ``[m]`` rigorous pure epsilon of this round's release (two-point,
                  Laplace, the sign mechanism's randomized-response bound), composed
                  by the ledger's headline (:mod:`fedcore.accounting.pure`); None when the
                  mechanism has none.
    pure_count:   ``[m]`` how many releases of equal pure epsilon make up ``pure_epsilon``
                  (per-weight two-point, per-coordinate sign: the number of weights; None:
                  one release), so the ledger composes them by their PLD, not their sum.
    linkable:     False when uploads are shuffled (LDP-FL) and cannot be tied to clients.

    ``spent``, ``claims``, ``pure_epsilon`` and ``pure_count`` are read by the ledger on the host:
    a mechanism that keeps its bookkeeping there (ULDP-FED) gives them as numpy arrays.
    """

    values: torch.Tensor
    clients: torch.Tensor
    is_sign: bool = False
    noise_std: Optional[torch.Tensor] = None
    spent: Optional[torch.Tensor] = None
    gaussian: Optional[GaussianRecord] = None
    claims: dict[str, torch.Tensor] = field(default_factory=dict)
    pure_epsilon: Optional[torch.Tensor] = None
    pure_count: Optional[torch.Tensor] = None
    linkable: bool = True
    events: list[MethodEvent] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Traits:
    """A mechanism's traits under given options: ``shuffled`` (uploads cannot be tied to
    clients), ``upload_kind`` (``"real"`` or ``"sign"``), ``per_sample`` (clips per-sample
    gradients, so batch norm is ruled out)."""

    shuffled: bool
    upload_kind: str
    per_sample: bool


class Mechanism(Configurable):
    """Base class. Subclasses set ``Options`` and implement :meth:`privatize` (a registered class
    that only declares its options leaves it to its ``implementation``, :class:`~fedcore.options.Configurable`).

    ``per_sample_clip``: when not None, local training clips each per-sample gradient
    to this L2 norm (DP-SGD, Abadi et al. 2016), batched over clients.

    ``threat_model`` (:mod:`fedcore.accounting.headline`): ``"local"``, ``"central"``,
    ``"record"`` or ``"none"``. The class attribute is the default reading; a mechanism
    whose options change it overrides :meth:`threat_model_for`; an instance carries the
    resolved value.

    :meth:`step_noise_std`: DP-SGD noise added at every local step (standard deviation
    of the Gaussian noise local training adds to the *sum* of the clipped per-sample
    gradients before dividing by the batch size, Abadi et al. 2016, Alg. 1); None (the
    default) for none.
    """

    threat_model: ClassVar[str] = "local"
    upload_kind: ClassVar[str] = "real"      # "real" or "sign"
    shuffled: ClassVar[bool] = False          # uploads cannot be tied to clients (LDP-FL)
    per_sample: ClassVar[bool] = False        # clips per-sample gradients (no batch norm)
    scalar: ClassVar[Optional["ScalarLaw"]] = None  # its one-number law (the Mechanisms page), if any
    streams: ClassVar[bool] = False
    """:meth:`privatize` may be called on consecutive blocks of a round's rows, in order, instead of
    once on all of them (:mod:`fedcore.engine.stream`): each upload depends on its own client's update
    only, nothing is drawn from ``gen`` (so no draw depends on where the rows are cut), no state is
    kept (``updates`` included), no signals, and ``noise_std`` is ``noise_scale()[clients]``."""

    def __init__(self, options, ctx: RunContext):
        self.options = options
        self.ctx = ctx
        self.per_sample_clip: Optional[float] = None
        self.threat_model = type(self).threat_model_for(options)
        self.caveat = type(self).caveat_for(options)

    def step_noise_std(self, clients: torch.Tensor) -> Optional[torch.Tensor]:
        """``[m]`` std of the per-step noise on each client's clipped gradient sum, or None."""
        return None

    def empty_round(self, round: int):
        """The ledger's charge for a round in which nobody was sampled (a ``GaussianRecord``), or None:
        nothing was released. Central DP with Poisson user sampling charges every round the
        subsampled Gaussian's cost, whoever was sampled (Abadi et al. 2016; McMahan et al. 2018)."""
        return None

    def may_take_part(self, clients: "np.ndarray") -> "np.ndarray":
        """``[len(clients)]`` bool: which of a round's candidates may train and upload (default:
        all). A mechanism whose noise is calibrated for a number of participations retires a client
        that reached it, so no client spends more than its budget."""
        import numpy as np

        return np.ones(len(clients), dtype=bool)

    def accounting_delta(self) -> torch.Tensor:
        """Each client's own delta ``[N]`` at which the ledger states its epsilon: the configured one,
        or ``1/|D_i|`` under the option ``delta_from_size`` (PLDP-FL's paper and its sign variant)."""
        if getattr(self.options, "delta_from_size", False):
            return 1.0 / self.ctx.client_sizes.to(self.ctx.epsilon)
        return self.ctx.delta

    @classmethod
    def threat_model_for(cls, options) -> str:
        """The threat model under ``options`` (default: the class attribute)."""
        return cls.threat_model

    @classmethod
    def caveat_for(cls, options) -> str:
        """What the headline epsilon does *not* prove under ``options``, in one sentence
        ("" when it is a rigorous bound for what runs): shown wherever the figure is."""
        return ""

    #: local training draws Poisson-sampled batches (:func:`fedcore.engine.plan.make_plan`)
    poisson_batches: bool = False

    @classmethod
    def local_training_for(cls, options) -> tuple:
        """What of this mechanism changes the clients' local training under ``options`` (per-sample
        clipping, per-step noise, batch sampling): runs that agree on it can train in one lockstep
        batch (:func:`fedcore.engine.lockstep.batch_key`). ``()`` for a mechanism that only acts on
        the uploads; by default every option of a per-sample mechanism counts."""
        if not cls.traits_for(options).per_sample:
            return ()
        return (cls.__name__, repr(options))

    @classmethod
    def traits_for(cls, options) -> "Traits":
        """What the compatibility rules need to know, under ``options`` (default: the class
        attributes ``shuffled``, ``upload_kind``, ``per_sample``)."""
        return Traits(shuffled=cls.shuffled, upload_kind=cls.upload_kind, per_sample=cls.per_sample)

    def privatize(self, updates: torch.Tensor, clients: torch.Tensor, round: int,
                  gen: torch.Generator) -> Upload:
        raise NotImplementedError

    def noise_scale(self) -> Optional[torch.Tensor]:
        """Each client's noise standard deviation ``[N]``, known before any training.

        Optional: None (the default) means "not known in advance". Mechanisms whose
        sigma_i is fixed by the client's budget (PLDP-FL's Gaussian and ldp-sign,
        HW-DPFL's calibration) return it, so that a server rule that picks clients from
        their noise (PLDP-FL rule C, ``P_i = rho_i / sum_j rho_j`` with ``rho_i = 1/sigma_i``)
        can select before round 1. Same units as ``Upload.noise_std``.
        """
        return None

    def after_round(self, global_update: Optional[torch.Tensor], round: int) -> None:
        """Called once the server applied ``global_update`` [d] (None: model kept).

        ULDP-FED's recall compares against the previous global noisy update.
        """
