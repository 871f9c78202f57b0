"""HW-DPFL's per-round Gaussian noise: Theorem 1's calibration, Theorem 2's ledger claim."""
import math

import numpy as np
import pytest
import torch

from fedcore.config import LocalConfig
from fedcore.context import RunContext
from fedcore.errors import ConfigError
from fedcore.mechanisms import MECHANISMS
from fedcore.mechanisms.hw_gaussian import THM2_CLAIM


def make_mechanism(eps=(1.0, 4.0), local=LocalConfig(steps=4, batch_size=10, lr=0.1), sizes=80.0,
                   d=3, **options):
    n = len(eps)
    ctx = RunContext(num_clients=n, client_sizes=torch.full((n,), sizes), epsilon=torch.tensor(eps),
                     delta=torch.full((n,), 1e-5), rounds=10, participation=1.0, num_params=d,
                     layer_slices={"w": slice(0, d)}, label_counts=np.ones((n, 2)), num_classes=2,
                     local=local, device=torch.device("cpu"))
    cls = MECHANISMS.get("hw_gaussian")
    return cls(cls.parse_options(options), ctx)


def test_calibrated_sigma_is_theorem_1():
    mech = make_mechanism()
    # gamma = E b / n = 4 * 10 / 80 = 0.5; sigma^2 = 32 gamma^2 eta^2 E^2 G^2 ln(1.25 gamma/delta) / eps^2
    sigma2 = 32 * 0.25 * 0.01 * 16 * 1.0 * math.log(1.25 * 0.5 / 1e-5)
    assert mech.noise_scale().tolist() == pytest.approx([math.sqrt(sigma2), math.sqrt(sigma2) / 4])
    assert mech.per_sample_clip == 1.0


def test_epoch_mode_counts_local_steps_and_caps_gamma_at_one():
    mech = make_mechanism(local=LocalConfig(epochs=2, batch_size=32, lr=0.1), sizes=100.0)
    steps = 2 * math.ceil(100 / 32)                                   # E = 8 local steps
    assert mech.gamma_.tolist() == [1.0, 1.0]
    assert mech.sensitivity_.tolist() == pytest.approx([2 * 0.1 * steps] * 2)   # Lemma 2: 2 eta E G


def test_upload_adds_gaussian_noise_of_the_announced_scale():
    mech = make_mechanism(noise="level", sigma=0.5, d=20000)
    gen = torch.Generator().manual_seed(0)
    up = mech.privatize(torch.ones(2, 20000), torch.tensor([0, 1]), 1, gen)
    assert (up.values - 1).std(dim=1).tolist() == pytest.approx([0.5, 0.5], rel=0.02)
    assert up.noise_std.tolist() == [0.5, 0.5]


def test_level_mode_charges_the_epsilon_its_sigma_buys():
    calibrated = make_mechanism()
    level = make_mechanism(noise="level", sigma=float(calibrated.noise_scale()[1]))
    assert level.round_epsilon_[1].item() == pytest.approx(4.0)


def test_ledger_claim_adds_up_to_theorem_2():
    mech = make_mechanism()
    gen = torch.Generator().manual_seed(0)
    total = torch.zeros(2, dtype=torch.float64)
    for t in range(1, 6):
        up = mech.privatize(torch.zeros(2, 3), torch.tensor([0, 1]), t, gen)
        total += up.claims[THM2_CLAIM]
        assert up.spent.tolist() == pytest.approx([1.0, 4.0])            # Thm 1, per round
    factor = math.sqrt(5 * math.log(1e5) / (2 * math.log(1.25 * 0.5 / 1e-5)))
    assert total.tolist() == pytest.approx([1.0 * factor, 4.0 * factor])
    z = up.gaussian.noise_multiplier                                        # sigma / (2 eta E G)
    assert z.tolist() == pytest.approx((mech.noise_scale() / (2 * 0.1 * 4)).tolist(), rel=1e-5)


def test_without_clipping_no_rigorous_record_is_claimed():
    mech = make_mechanism(clip_gradients=False)
    up = mech.privatize(torch.zeros(2, 3), torch.tensor([0, 1]), 1, torch.Generator().manual_seed(0))
    assert mech.per_sample_clip is None and up.gaussian is None


def test_options_are_validated():
    cls = MECHANISMS.get("hw_gaussian")
    with pytest.raises(ConfigError, match="noise"):
        cls.parse_options({"noise": "per_step"})
    with pytest.raises(ConfigError, match="clip_gradients"):
        cls.parse_options({"placement": "step", "clip_gradients": False})
    with pytest.raises(ConfigError, match="sigma"):
        cls.parse_options({"sigma": 0})


def test_step_placement_reads_sigma_as_a_dp_sgd_multiplier():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    level = make_mechanism(placement="step", noise="level", sigma=0.5)
    assert level.threat_model == "record"
    assert level.step_noise_std(torch.tensor([0, 1])).tolist() == [0.5, 0.5]      # sigma G, G = 1
    up = level.privatize(torch.ones(2, 3), torch.tensor([0, 1]), 1, torch.Generator().manual_seed(0))
    assert torch.equal(up.values, torch.ones(2, 3))                              # the noise is in training
    assert up.gaussian.steps.tolist() == [4, 4] and up.gaussian.sample_rate.tolist() == [0.125, 0.125]
    assert up.noise_std.tolist() == pytest.approx([0.1 * 0.5 / 10 * 2] * 2)      # lr z G / b * sqrt(E)
    cal = make_mechanism(placement="step")                                        # eps (1, 4), T = 10, E = 4
    for i, eps in enumerate((1.0, 4.0)):
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)   # the ledger's accountant
        event = dp_accounting.PoissonSampledDpEvent(0.125, dp_accounting.GaussianDpEvent(float(cal.multiplier_[i])))
        acc.compose(event, 40)
        assert acc.get_epsilon(1e-5) == pytest.approx(eps, rel=0.02)
    assert make_mechanism().threat_model == "local"


def test_per_step_noise_draws_poisson_batches_and_shuffled_batches_carry_the_caveat():
    """HW-DPFL per step is accounted at q = b / n_k: proven for Poisson batches (the default and the
    papers' presets), a caveat on shuffled ones (how the stored records trained)."""
    from fedcore.mechanisms import caveat_of
    from fedcore.resolve import preset_config

    cfg = preset_config("hw_dpfl_mnist_noniid")
    assert caveat_of(cfg.to_dict()["privacy"]) == ""
    poisson = make_mechanism(placement="step", noise="level", sigma=1.0)
    shuffle = make_mechanism(placement="step", noise="level", sigma=1.0, batching="shuffle")
    assert poisson.poisson_batches and poisson.caveat == ""
    assert not shuffle.poisson_batches and "assumes Poisson sampling" in shuffle.caveat
    assert not make_mechanism(batching="shuffle").poisson_batches           # round placement: no batches to draw


def test_the_stored_records_caveat_exactly_the_per_step_rows_that_trained_shuffled():
    """A stored record's caveat is the one its config implies: shuffled batches carry "assumes Poisson
    sampling" and a starred ε cell; Poisson batches (the default, every seed since 2026-11-26) neither."""
    import json
    from pathlib import Path

    from fedcore.mechanisms import caveat_of
    from fedcore.reproduce.report import caveat, epsilon_cell, table_rows

    record = json.loads((Path(__file__).resolve().parents[1] / "assets/reproduction/hw_dpfl.json").read_text())
    noisy = [r for t in record["tables"] for r in t["rows"] if r["config"]["privacy"]["mechanism"] == "hw_gaussian"]
    assert noisy
    for r in noisy:
        shuffled = r["config"]["privacy"]["mechanism_options"].get("batching") == "shuffle"
        assert caveat(r) == caveat_of(r["config"]["privacy"])
        assert ("assumes Poisson sampling" in caveat(r)) == shuffled
        assert epsilon_cell(r).split(" (")[0].endswith("*") == shuffled
    uldp = json.loads((Path(__file__).resolve().parents[1] / "assets/reproduction/uldp.json").read_text())
    rows = {r["preset"]: r for t in uldp["tables"] for r in table_rows(t)}
    ddp = rows["uldp_mnist_ddp"]
    stored = next(r for t in uldp["tables"] for r in t["rows"] if r["preset"] == "uldp_mnist_ddp")
    over = max(e for e in stored["epsilon_headline"] if e is not None) / 10     # the largest seed's, over ε = 10
    assert over > 1 and f"{over:.2f}× its target 10" in ddp["headline ε (threat model)"]
    assert next(v for k, v in ddp.items() if k.startswith("our gain")).endswith("(unequal privacy)")
