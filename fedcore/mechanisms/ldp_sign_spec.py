"""The ``ldp_sign`` mechanism's options: PLDP-FL's stochastic sign for non-IID data (seed 000,
Sec. 3.1; Jin et al. 2020). The calibration and the sampling are in :mod:`fedcore.mechanisms.ldp_sign`."""
from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Boolean, Interval, setting
from .base import Mechanism
from .registry import MECHANISMS


@MECHANISMS.register("ldp_sign", summary="Stochastic sign: +1 with probability Phi(p / sigma_i) "
                     "(PLDP-FL, non-IID data).", paper="PLDP-FL (seed 000), Sec. 3.1; Jin et al. 2020")
class LdpSignSpec(Mechanism):
    """A sign per coordinate: ``sign(p + N(0, sigma_i^2))``, or ``sign(p)`` when ``deterministic``."""

    implementation = "fedcore.mechanisms.ldp_sign:LdpSignMechanism"
    upload_kind = "sign"

    @classmethod
    def threat_model_for(cls, options) -> str:
        return "none" if options.deterministic else "local"

    @dataclass(frozen=True)
    class Options:
        """``clip``: element-wise bound c. ``l2_sensitivity``: the paper's Delta_2.
        ``delta_from_size``: ``delta_i = 1/|D_i|`` (the paper's text) instead of the
        configured delta. ``deterministic``: upload ``sign(Delta_i)`` without noise (the
        paper's no-privacy baseline; spends nothing)."""

        clip: float = setting(4.0, Interval(float, 0, None, closed="neither"), "element-wise bound c")
        l2_sensitivity: float = setting(8.0, Interval(float, 0, None, closed="neither"), "the paper's Delta_2")
        delta_from_size: bool = setting(False, Boolean(), "delta_i = 1/|D_i| (the paper's text)")
        deterministic: bool = setting(False, Boolean(), "upload sign(Delta_i) without noise (no privacy)")
