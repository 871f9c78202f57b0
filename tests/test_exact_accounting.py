"""The exact accountant against the peers' own published vectors (issue 51): the headline ε of a run is
dp-accounting's PLD, as TF Privacy publishes it; a calibration draws no more noise than Opacus's PRV and
pfl-research's PLD calibrations (within 1 %); RDP planted in its place fails these checks."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedcore.accounting import GaussianRecord, Ledger
from fedcore.accounting.calibrate import calibrate_noise_multiplier
from fedcore.accounting.games import Game

TF_PRIVACY_PLD = [   # (q, z, steps, δ, ε): tensorflow_privacy's compute_dp_sgd_privacy tests and statement
    (0.01, 0.7, 120, 1e-5, 2.4612381),
    (1.0, 0.7, 2, 1e-5, 10.1224946),
    (0.01, 0.35, 120, 1e-5, 18.6977407),
    (64 / 10000, 1.0, 782, 1e-6, 1.199),
]
PEER_CALIBRATIONS = [   # (ε, δ, q, steps, σ): Opacus's PRV get_noise_multiplier, pfl-research's PLD accountant
    (8.0, 1e-5, 0.04, 2250, 1.3477),
    (8.0, 1e-5, 0.04, 2000, 1.2915),
    (2.0, 1e-6, 0.05, 20, 1.0938),
]


def headline(q: float, z: float, steps: int, delta: float, rounds: int = 4, ledger_cls=Ledger) -> float:
    """The ledger's headline of ``steps`` Poisson(q)-subsampled Gaussian steps, recorded over ``rounds`` rounds."""
    ledger = ledger_cls(1, np.array([delta]), threat_model="record")
    per_round = [steps // rounds + (r < steps % rounds) for r in range(rounds)]
    for k in per_round:
        ledger.record(torch.tensor([0]), None, GaussianRecord(np.array([z]), sample_rate=q, steps=float(k)))
    return float(ledger.headline_run())


class PlantedRdp(Ledger):
    """The mutant the tests must catch: every Gaussian step composed by RDP, as before issue 51."""

    def _compose(self, ids, z, sample_rate, steps, exact=True):
        super()._compose(ids, z, sample_rate, steps, exact=False)


@pytest.mark.parametrize("q,z,steps,delta,published", TF_PRIVACY_PLD)
def test_the_headline_is_tf_privacys_published_pld(q, z, steps, delta, published):
    assert headline(q, z, steps, delta) == pytest.approx(published, rel=1e-3)


@pytest.mark.parametrize("q,z,steps,delta,published", TF_PRIVACY_PLD)
def test_a_planted_rdp_headline_misses_the_published_values(q, z, steps, delta, published):
    rdp = headline(q, z, steps, delta, ledger_cls=PlantedRdp)
    assert rdp != pytest.approx(published, rel=1e-3) and rdp > published     # RDP: 7-35 % above


@pytest.mark.parametrize("eps,delta,q,steps,peer", PEER_CALIBRATIONS)
def test_the_calibration_draws_no_more_noise_than_the_peers(eps, delta, q, steps, peer):
    z = float(calibrate_noise_multiplier(eps, delta, q, steps)[0])
    assert peer * 0.99 <= z <= peer * 1.01      # no more noise than the peer (a little less: its PRV is looser)
    assert 0.99 * eps <= headline(q, z, steps, delta, rounds=20) <= eps        # the ledger agrees
    rdp = float(calibrate_noise_multiplier(eps, delta, q, steps, grid=True)[0])
    assert rdp > 1.01 * peer                                                    # the RDP calibration did not


def test_the_demo_at_participation_5_percent_spends_its_epsilon_by_pld():
    """Issue 51's run: DP-FedAvg on the demo, 10 users sampled at 0.05 for 20 rounds, ε = 2 at δ = 1e-6:
    σ within 1 % of pfl's 1.0938, and every round charged (a round that sampled nobody too)."""
    from fedcore.engine.replay import replay_headlines
    from fedcore.engine.setup import prepare
    from fedcore.layering import build_config

    cfg = build_config("demo", None, ["method=dp_fedavg", "participation=0.05", "rounds=20",
                                      "privacy.epsilon=2", "privacy.delta=1e-6"])
    s = prepare(cfg.replace(device="cpu"))
    assert float(np.max(s.mechanism.accountant_z)) <= 1.0938 * 1.01
    heads = replay_headlines(cfg, s)
    assert 1.98 <= heads.max() <= 2.0


def test_replace_one_never_costs_less_than_add_remove():
    """One story per screen: for the same releases the replace-one ε of the whole run is at least the
    add/remove headline (the two accountants contradicted each other: 0.358 against 0.991)."""
    for z, q, k in ((4.0, 1.0, 1), (1.1, 0.05, 20), (0.9, 1 / 144, 1)):
        ledger = Ledger(1, np.array([1e-5]), threat_model="record")
        ledger.record(torch.tensor([0]), None, GaussianRecord(np.array([z]), sample_rate=q, steps=float(k)))
        replace = ledger.run_bound(Game("record", "replace", "run", "secret"))
        assert replace.epsilon >= ledger.headline_run() * (1 - 1e-9)


def test_the_gdp_shown_beside_agrees_with_the_headline_without_sampling():
    """Unsampled Gaussian steps are exactly μ-GDP (Dong, Roth & Su 2019): the μ-GDP bound of the replace-one
    game and the headline agree with their closed forms. Local DP's multiplier is already relative to any
    two inputs (μ = √k / z, the headline's own); record-level DP's is add/remove, so replacing a record
    doubles it (μ = 2√k / z). The headline is an upper bound within the PLD's discretisation."""
    from fedcore.accounting.games import _gdp_epsilon

    z, k, delta = 3.0, 4, 1e-5
    for threat, factor in (("local", 1), ("record", 2)):
        ledger = Ledger(1, np.array([delta]), threat_model=threat)
        for _ in range(k):
            ledger.record(torch.tensor([0]), None, GaussianRecord(np.array([z])))
        exact = _gdp_epsilon(np.sqrt(k) / z, delta)
        assert exact <= ledger.headline_run() <= exact * (1 + 2e-3)
        replace = ledger.run_bound(Game("user" if threat == "local" else "record", "replace", "run", "secret"))
        assert replace.mu == pytest.approx(factor * np.sqrt(k) / z, rel=1e-4)
        assert replace.epsilon >= ledger.headline_run() * (1 - 2e-3)
