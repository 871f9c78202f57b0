"""Noise calibrated to a target is spent up to that target and never beyond it, as the
ledger counts it (fedcore/accounting/calibrate.py): by the exact (PLD) accountant, within
[0.99, 1] x the target; for grid records (ULDP-FED's central reading with a decaying clip) by
RDP, whose multipliers the ledger first rounds down to a 0.2 % grid, so the calibration
rounds up to the same grid."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedcore import recipes  # noqa: F401  (registers the methods)
from fedcore.accounting.calibrate import calibrate_noise_multiplier
from fedcore.accounting.ledger import GRID
from fedcore.accounting.rdp import (INT_ORDERS, SampledGaussianRdp, gaussian_rdp, rdp_epsilon, rdp_epsilons,
                                   rounded_multiplier)
from fedcore.config import RunConfig
from fedcore.engine.loop import iter_run
from fedcore.events import RoundEvent
from fedcore.methods import apply_method

SMALL = {"dataset": "digits", "num_clients": 10, "rounds": 5, "train_size": 400, "test_size": 100,
         "privacy.epsilon": [1.0]}


def ledger_grid(z: float) -> float:
    """The multiplier a ``GaussianRecord(grid=True)`` composes."""
    return rounded_multiplier(GRID ** math.floor(math.log(z) / math.log(GRID)))


def calibration_epsilon(z: float, q: float, steps: int, delta: float) -> float:
    """The RDP calibration's own accountant (integer orders; the ledger's figure is at most this)."""
    return float(rdp_epsilons(steps * SampledGaussianRdp(q)(z), delta, INT_ORDERS)[0])


def pld_epsilon(z: float, q: float, steps: int, delta: float) -> float:
    """dp-accounting's own PLD accountant at the ledger's interval."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    event = dp_accounting.GaussianDpEvent(float(f"{z:.6g}"))
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, event) if q < 1 else event, steps)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("eps,delta,q,steps", [(1.0, 1e-5, 0.8, 10), (1.0, 1e-5, 0.1, 5), (8.0, 1e-5, 0.1, 200),
                                               (0.5, 1e-3, 1.0, 1)])
def test_the_multiplier_the_ledger_composes_meets_the_target_and_is_the_smallest_on_its_grid(eps, delta, q, steps):
    z = float(calibrate_noise_multiplier(eps, delta, q, steps)[0])
    assert rounded_multiplier(z) == z
    assert 0.99 * eps <= pld_epsilon(float(np.float32(z)), q, steps, delta) <= eps   # float32 on the way too
    assert z < float(calibrate_noise_multiplier(eps, delta, q, steps, grid=True)[0])  # less noise than RDP's

    gridded = float(calibrate_noise_multiplier(eps, delta, q, steps, grid=True)[0])
    for seen in (gridded, float(np.float32(gridded)), float(np.float32(gridded) * np.float32(2) / 2)):
        assert ledger_grid(seen) == ledger_grid(gridded)
    assert rdp_epsilon(steps * gaussian_rdp(ledger_grid(gridded), q), delta) <= eps
    assert calibration_epsilon(ledger_grid(gridded) / GRID, q, steps, delta) > eps


def headline(cfg: RunConfig) -> float:
    rounds = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)]
    return rounds[-1].epsilon_headline_run


@pytest.mark.parametrize("name,cfg", [
    ("dp_sgd", RunConfig().with_overrides({**SMALL, "privacy.mechanism": "dp_sgd"})),
    ("hw_gaussian per step", RunConfig().with_overrides({**SMALL, "privacy.mechanism": "hw_gaussian",
                                                          "privacy.mechanism_options": {"placement": "step"}})),
    ("uldp_gaussian central (DP-FedAvg)", apply_method(RunConfig().with_overrides({**SMALL, "num_clients": 20}),
                                                       "dp_fedavg")),
    pytest.param("uldp_gaussian central, decaying clip (DDP-FedAvg)",
                 apply_method(RunConfig().with_overrides({**SMALL, "num_clients": 20}), "ddp_fedavg"),
                 marks=pytest.mark.xfail(strict=True, reason=(
                     "not the calibration: the round's noise follows the RMS of the sampled users' "
                     "decayed clips, so a user with a larger clip (fewer participations) is charged "
                     "a smaller multiplier than z (1.048 at target 1)"))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_run_calibrated_to_its_target_spends_it_and_no_more(name, cfg):
    torch.manual_seed(0)
    assert 0.99 <= headline(cfg) <= 1.0
