"""The ``dp_sgd`` mechanism's options: KDP-FL's client, DP-SGD local training (seed 003, Alg. 1 and
Eqs. 3-5; Abadi et al. 2016). The calibration and the noise are in :mod:`fedcore.mechanisms.dp_sgd`."""
from __future__ import annotations

from dataclasses import dataclass

from ..constraints import Choice, Interval, setting
from ..errors import ConfigError
from .base import Mechanism
from .registry import MECHANISMS

CALIBRATIONS = ("paper", "per_step")
ROUNDS = ("all", "participation")
BATCHINGS = ("poisson", "shuffle")
PLACEMENTS = ("step", "round")

SHUFFLE_CAVEAT = ("assumes Poisson sampling: the record-level bound is for Poisson-sampled batches, and these "
                  "batches are shuffled (batching=shuffle)")
"""The caveat of per-step DP-SGD noise on shuffled batches (DP-SGD's and HW-DPFL's per-step placement): the
ledger composes each step at q = B / n, which holds for Poisson sampling (Abadi et al. 2016; Mironov et
al. 2019), not for a shuffle."""


@MECHANISMS.register("dp_sgd", summary="DP-SGD local training: per-sample clipping and Gaussian noise at every "
                     "step (KDP-FL client; option: the literal Eq. 3, noise once per round).",
                     paper="KDP-FL (seed 003), Alg. 1; Abadi et al. 2016")
class DpSgdSpec(Mechanism):
    """Per-sample clip to ``clip_norm``; noise per step (default) or once per round (Eq. 3)."""

    implementation = "fedcore.mechanisms.dp_sgd:DpSgdMechanism"
    per_sample = True
    threat_model = "record"

    @dataclass(frozen=True)
    class Options:
        """``clip_norm``: per-sample gradient bound M. ``placement``: "step" (standard
        DP-SGD) or "round" (the literal Eq. 3). ``batching``: "poisson" (default) or "shuffle". ``calibration`` (``placement="round"``
        only): "paper" (KDP-FL Eq. 4: T rounds, q = participation * S B / n) or
        "per_step" (T * S DP-SGD steps, q = B / n)."""

        clip_norm: float = setting(1.0, Interval(float, 0, None, closed="neither", suggested=(0.1, 5.0)),
                                   "per-sample gradient L2 bound M")
        placement: str = setting("step", Choice(PLACEMENTS),
                                 "step: noise N(0, z^2 M^2) on every step's clipped gradient sum (standard DP-SGD); "
                                 "round: the literal Eq. 3, noise once on the round's result (sensitivity 2 S M)")
        calibration: str = setting("paper", Choice(CALIBRATIONS),
                                   "placement=round only: the accountant the noise is calibrated with")
        batching: str = setting("poisson", Choice(BATCHINGS),
                                "poisson: each sample joins each step's batch with probability B/n (what the "
                                "record-level bound assumes); shuffle: fixed-size shuffled batches (the bound then "
                                "assumes Poisson sampling it does not have)")
        rounds: str = setting("all", Choice(ROUNDS),
                              "placement=step only: all: calibrate z for all T rounds; participation: for the rounds "
                              "a client takes part in (the 1 - 1/N quantile of Binomial(T, participation)); a client "
                              "that took part in them retires")
        noise_multiplier: float = setting(-1.0, Interval(float, -1, None, suggested=(0.0, 10.0)),
                                          "-1: calibrated from (eps, delta); >= 0: this z (0: clipping only, no noise)")

        def validate(self, prefix: str) -> None:
            if not (self.noise_multiplier == -1 or self.noise_multiplier >= 0):   # the hole (-1, 0)
                raise ConfigError(f"{prefix}.noise_multiplier", self.noise_multiplier,
                                  "must be -1 (calibrated) or >= 0 (a fixed multiplier; 0 = no noise)")

    @classmethod
    def local_training_for(cls, options) -> tuple:
        """The clip, where the noise goes and how batches are drawn; budgets and noise multipliers
        may differ within a lockstep batch (the per-step noise is drawn per client)."""
        return ("dp_sgd", options.clip_norm, options.placement, options.batching)

    @classmethod
    def caveat_for(cls, options) -> str:
        return SHUFFLE_CAVEAT if options.placement == "step" and options.batching == "shuffle" else ""
