"""The ``uldp_gaussian`` mechanism's options: ULDP-FED's user-level Gaussian updates with decaying
clipping and update recall (seed 004, Algorithm 1, eqs 9-15, Thm 3), and the rules they set on a
config. The calibration, the noise and the recall are in :mod:`fedcore.mechanisms.uldp_gaussian`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..constraints import Boolean, Choice, Interval, OptionalOf, setting
from ..errors import ConfigError
from .base import Mechanism
from .registry import MECHANISMS

NOISE_MODES = ("auto", "accountant", "allocated", "paper_thm3", "fixed")
READINGS = ("central", "local")
RECALL_MODES = ("none", "sign", "cosine")
HISTORY_DTYPES = ("float32", "float16", "bfloat16")


def check_uldp_aggregator(cfg) -> None:
    """The budget ledger relies on the ``uldp`` aggregator's participation cap; the central
    reading's amplification needs Poisson user sampling."""
    if cfg.privacy.mechanism != "uldp_gaussian":
        return
    if cfg.privacy.mechanism_options.get("reading", "central") == "central" and cfg.sampling != "poisson":
        raise ConfigError("sampling", cfg.sampling,
                          "must be 'poisson' for uldp_gaussian's central reading: its user-level epsilon "
                          "uses amplification by Poisson sampling of users with rate q = participation; "
                          "or set privacy.mechanism_options.reading=local")
    if cfg.privacy.aggregator != "uldp":
        raise ConfigError("privacy.aggregator", cfg.privacy.aggregator,
                          "uldp_gaussian needs the 'uldp' aggregator, which enforces each user's "
                          "participation cap r that its budget ledger assumes; use 'uldp'")
    default = UldpGaussianSpec.Options.max_participations
    r_mech = cfg.privacy.mechanism_options.get("max_participations", default)
    r_agg = cfg.privacy.aggregator_options.get("max_participations", default)
    if r_mech != r_agg:
        raise ConfigError("privacy.aggregator_options.max_participations", r_agg,
                          f"must equal privacy.mechanism_options.max_participations ({r_mech}): the cap "
                          "the server enforces is the one the users' budgets are split over")


@MECHANISMS.register("uldp_gaussian",
                     summary="User-level Gaussian updates, clip C0*exp(-beta*k), recall of stored updates.",
                     paper="ULDP-FED (seed 004), Algorithm 1, eqs 9-15, Thm 3")
class UldpGaussianSpec(Mechanism):
    """ULDP-FED's UserUpdate + CheckSimilarity; the central reading trusts the aggregator."""

    implementation = "fedcore.mechanisms.uldp_gaussian:UldpGaussian"
    compat_rules = (check_uldp_aggregator,)

    @dataclass(frozen=True)
    class Options:
        """reading: central (noise z^2 C_k^2 / |U^t| per user, trusted aggregator) | local.
        clip0: C_0. beta: decay factor. decay: use C_0 exp(-beta k) (False: fixed C_0).
        noise: auto (central: accountant, local: allocated) | accountant | allocated |
        paper_thm3 | fixed. noise_multiplier: z for ``fixed``.
        recall: none | sign | cosine. tau: recall threshold (None: automatic, 2 sd below chance).
        max_participations: r. history: stored updates per user (0: r).
        history_dtype: float32 | float16 | bfloat16. history_on_cpu: keep the store in
        (pinned) CPU memory instead of on the run's device.
        """

        reading: str = setting("central", Choice(READINGS),
                               "central: each sampled user adds N(0, z^2 C_k^2/|U^t|), private only for a trusted "
                               "aggregator / secure aggregation; local: each upload carries z C_k (the literal reading)")
        clip0: float = setting(2.0, Interval(float, 0, None, closed="neither"), "the initial L2 clipping threshold C_0")
        beta: float = setting(0.06, Interval(float, 0, 10),
                              "decay factor (paper: 0.02..0.10, best 0.06 MNIST / 0.08 CIFAR-10)")
        decay: bool = setting(True, Boolean(), "clip C_0 exp(-beta k) (false: fixed C_0)")
        noise: str = setting("auto", Choice(NOISE_MODES),
                             "auto: dp-accounting's z under the central reading, the allocated budget's under local")
        noise_multiplier: float = setting(10.0, Interval(float, 0, None, closed="neither"), "z for noise=fixed")
        recall: str = setting("sign", Choice(RECALL_MODES), "similarity a user's recall check uses (none: no recall)")
        tau: Optional[float] = setting(None, OptionalOf(Interval(float, -1, 2)),
                                       "recall threshold: a user recalls when its similarity s < tau (automatic: 2 sd "
                                       "below chance; the paper used 0.25 sign, 0.006 cosine)")
        max_participations: int = setting(50, Interval(int, 1, None), "r (paper: 50 MNIST, 80-100 CIFAR-10)")
        history: int = setting(0, Interval(int, 0, None), "stored updates per user (0: max_participations)")
        history_dtype: str = setting("bfloat16", Choice(HISTORY_DTYPES), "storage type of the stored updates")
        history_on_cpu: bool = setting(False, Boolean(), "keep the store in (pinned) CPU memory")
        sensitivity: str = setting("paper", Choice(("paper", "ldp")),
                                   "paper: C_k, as published; ldp: 2 C_k, rigorous under local DP")

        @property
        def noise_mode(self) -> str:
            if self.noise != "auto":
                return self.noise
            return "accountant" if self.reading == "central" else "allocated"

    @classmethod
    def threat_model_for(cls, options) -> str:
        return "central" if options.reading == "central" else "local"

    @classmethod
    def caveat_for(cls, options) -> str:
        if options.reading != "central":
            return ""
        if options.recall != "none":
            return ("an approximation: the central reading charges a recalled round like a fresh one, though "
                    "swapping one stored update for another is not bounded by the clip")
        if options.decay:
            return ("may exceed its figure: the round's noise follows the sampled users' average clip, so a "
                    "user with a larger clip is covered by a smaller multiplier")
        return ""
