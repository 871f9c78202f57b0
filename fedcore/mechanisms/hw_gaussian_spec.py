"""The ``hw_gaussian`` mechanism's options: HW-DPFL's Gaussian perturbation of the uploaded model
(seed 002, Thm 1-2). The calibration and the noise are in :mod:`fedcore.mechanisms.hw_gaussian`."""
from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Boolean, Choice, Interval, setting
from ..errors import ConfigError
from .base import Mechanism, Traits
from .dp_sgd_spec import BATCHINGS, SHUFFLE_CAVEAT
from .registry import MECHANISMS

NOISE_MODES = ("calibrated", "level")
PLACEMENTS = ("round", "step")


@MECHANISMS.register("hw_gaussian", summary="Gaussian noise on the uploaded model once per round (HW-DPFL Thm 1).",
                     paper="HW-DPFL (seed 002), Thm 1-2")
class HwGaussianSpec(Mechanism):
    """sigma_k fixed for the run; per-sample gradient clipping at G."""

    implementation = "fedcore.mechanisms.hw_gaussian:HwGaussianMechanism"
    per_sample = True

    @classmethod
    def traits_for(cls, options) -> Traits:
        """Per-sample clipping only with ``clip_gradients`` (batch norm is fine without it)."""
        return Traits(shuffled=False, upload_kind="real", per_sample=options.clip_gradients)

    @dataclass(frozen=True)
    class Options:
        """noise: "calibrated" (Thm 1 from eps, delta) or "level" (sigma directly).
        sigma: the noise level for "level" (paper: 0.2, 0.5, 1). grad_bound: G.
        clip_gradients: clip per-sample gradients to G in local training.
        placement: "round" (noise on the upload) or "step" (sigma = DP-SGD multiplier)."""

        noise: str = setting("calibrated", Choice(NOISE_MODES), "calibrated: Thm 1 from (eps, delta); level: sigma")
        sigma: float = setting(0.5, Interval(float, 0, None, closed="neither"), "noise level (paper: 0.2, 0.5 or 1)")
        grad_bound: float = setting(1.0, Interval(float, 0, None, closed="neither"),
                                    "G, the paper's maximal local gradient norm (1)")
        clip_gradients: bool = setting(True, Boolean(), "clip per-sample gradients to G in local training")
        placement: str = setting("round", Choice(PLACEMENTS),
                                 "round: N(0, sigma^2) once on the uploaded model (Thm 1); step: sigma is a DP-SGD "
                                 "noise multiplier, N(0, sigma^2 G^2) on every step's clipped gradient sum")
        batching: str = setting("poisson", Choice(BATCHINGS),
                                "placement=step only: poisson: each sample joins each step's batch with probability "
                                "b/n (what the record-level bound assumes); shuffle: fixed-size shuffled batches "
                                "(the bound then assumes Poisson sampling it does not have)")

        def validate(self, prefix: str) -> None:
            if self.placement == "step" and not self.clip_gradients:
                raise ConfigError(f"{prefix}.clip_gradients", self.clip_gradients,
                                  "must be true with placement=step: DP-SGD noise is calibrated to the clip G")

    @classmethod
    def threat_model_for(cls, options) -> str:
        return "record" if options.placement == "step" else "local"

    @classmethod
    def caveat_for(cls, options) -> str:
        return SHUFFLE_CAVEAT if options.placement == "step" and options.batching == "shuffle" else ""
