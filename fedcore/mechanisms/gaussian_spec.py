"""The ``gaussian`` mechanism's options: PLDP-FL's Gaussian perturbation for IID data (seed 000,
Sec. 3.1). The calibration and the noise are in :mod:`fedcore.mechanisms.gaussian`."""
from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Boolean, Interval, setting
from .base import Mechanism
from .registry import MECHANISMS


@MECHANISMS.register("gaussian", summary="Element-wise clip, then Gaussian noise calibrated over R rounds "
                     "(PLDP-FL, IID data).", paper="PLDP-FL (seed 000), Sec. 3.1")
class GaussianSpec(Mechanism):
    """Element-wise clip, then Gaussian noise calibrated over R rounds."""

    implementation = "fedcore.mechanisms.gaussian:GaussianMechanism"

    @dataclass(frozen=True)
    class Options:
        """``clip``: element-wise bound c. ``sample_rate``: the paper's q (client-side
        record sampling probability per round, in (0, 1)). ``delta_from_size``: use
        ``delta_i = 1/|D_i|`` (the paper) instead of the configured delta.
        ``scale_by_sensitivity``: multiply sigma_i by the L2 sensitivity ``2 c sqrt(d)``."""

        clip: float = setting(2.0, Interval(float, 0, None, closed="neither"), "element-wise bound c")
        sample_rate: float = setting(0.8, Interval(float, 0, 1, closed="neither"),
                                     "the paper's q, in (0, 1): its formula divides by 1 - q")
        delta_from_size: bool = setting(False, Boolean(), "delta_i = 1/|D_i| (the paper)")
        scale_by_sensitivity: bool = setting(False, Boolean(), "multiply sigma_i by 2 c sqrt(d)")
