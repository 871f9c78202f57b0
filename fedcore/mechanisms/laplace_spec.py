"""The ``laplace`` mechanism's options: the Laplace mechanism on the clipped update, a pure-eps
LDP baseline (Dwork et al. 2006). The noise is in :mod:`fedcore.mechanisms.laplace`."""
from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Interval, setting
from .base import Mechanism
from .registry import MECHANISMS


@MECHANISMS.register("laplace", summary="Element-wise clip, then Laplace noise with scale L1 sensitivity / "
                     "eps_i (pure-eps baseline).", paper="Dwork et al. 2006 (baseline)")
class LaplaceSpec(Mechanism):
    """Element-wise clip, then Laplace noise of scale Delta_1 / eps_i."""

    implementation = "fedcore.mechanisms.laplace:LaplaceMechanism"

    @dataclass(frozen=True)
    class Options:
        """``clip``: element-wise bound c. ``l1_sensitivity``: Delta_1; 0 means the
        box's L1 diameter ``2 c d``."""

        clip: float = setting(0.05, Interval(float, 0, None, closed="neither"), "element-wise bound c")
        l1_sensitivity: float = setting(0.0, Interval(float, 0, None), "Delta_1; 0 = the clipping box's L1 diameter 2 c d")
