"""LDP-FL: two-point perturbation of every weight, split and shuffled (seed 001; METHODS section 2).

Each weight is replaced by one of two values around the layer's range centre (unbiased,
eps-LDP per weight); the uploads are shuffled per parameter position, so the server can
only average them (``mean``); client-weighted rules are rejected at config time.
"""
from __future__ import annotations

from ..methods import register_method

register_method("ldp_fl", summary="LDP-FL: two-point perturbation per weight, shuffled, mean.",
                paper="LDP-FL (seed 001)",
                overrides={"privacy.mechanism": "two_point", "privacy.aggregator": "mean"})
