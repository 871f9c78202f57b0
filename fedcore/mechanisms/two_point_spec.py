"""The ``two_point`` mechanism's options: LDP-FL's two-point mechanism with splitting and shuffling
(seed 001, Eq. 2). The randomisation and the shuffle are in :mod:`fedcore.mechanisms.two_point`."""
from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Boolean, Choice, Interval, setting
from .base import Mechanism, Traits
from .registry import MECHANISMS

LAYER_RANGES = ("previous_global", "own_update")




@MECHANISMS.register("two_point", summary="Each weight becomes one of two values c +- r(e^eps+1)/(e^eps-1), "
                     "then weights are split and shuffled (LDP-FL).", paper="LDP-FL (seed 001), Eq. 2")
class TwoPointSpec(Mechanism):
    """Two-point randomisation of every weight; uploads shuffled unless ``shuffle`` is off."""

    implementation = "fedcore.mechanisms.two_point:TwoPointMechanism"

    @classmethod
    def traits_for(cls, options) -> Traits:
        """Shuffled exactly when ``shuffle`` is on (LDP-FL); then no upload is tied to a client."""
        return Traits(shuffled=options.shuffle, upload_kind="real", per_sample=False)

    @dataclass(frozen=True)
    class Options:
        """``center`` / ``radius``: the clipping range ``[c - r, c + r]`` (paper: 0 and
        0.075 on MNIST / F-MNIST). ``shuffle``: split and shuffle (the paper).
        ``per_layer``: per-layer ranges, from ``layer_range`` ("previous_global":
        LDP-honest, default; "own_update": the paper's literal reading, not LDP)."""

        center: float = setting(0.0, Interval(float, None, None), "centre c of the clipping range")
        radius: float = setting(0.075, Interval(float, 0, None, closed="neither"), "radius r of the clipping range")
        shuffle: bool = setting(True, Boolean(), "split and shuffle (the paper)")
        per_layer: bool = setting(False, Boolean(), "per-layer ranges, from layer_range")
        layer_range: str = setting("previous_global", Choice(LAYER_RANGES),
                                   "previous_global: LDP-honest; own_update: the paper's literal reading, not LDP")
