"""Specification of the client-side mechanisms of METHODS sections 1, 2 and 4 (and the
Laplace baseline): their output distributions, calibrations, privacy views and
configuration rules, then each one end to end on the digits config."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from fedcore.resolve import resolve
from fedcore.accounting.exact import tally_epsilon
from fedcore.accounting.rdp import ORDERS, gaussian_rdp, rdp_epsilon, rounded_multiplier
from fedcore.aggregators import AGGREGATORS
from fedcore.config import LocalConfig, RunConfig
from fedcore.context import RunContext
from fedcore.engine.loop import iter_run
from fedcore.errors import ConfigError
from fedcore.mechanisms import MECHANISMS
from fedcore.accounting.calibrate import calibrate_noise_multiplier
from fedcore.accounting.rdp import INT_ORDERS, SampledGaussianRdp
from fedcore.mechanisms.gaussian import pldp_sigma
from fedcore.mechanisms.two_point import shuffle_columns, two_point
from fedcore.models import MODELS

Z = 5.0  # standard errors allowed in the statistical checks


def pld_epsilon(steps: float, z: float, q: float, delta: float) -> float:
    """The ledger's exact (PLD) ε of ``steps`` Poisson(q)-subsampled Gaussian steps at multiplier z."""
    return tally_epsilon((((rounded_multiplier(float(z)), float(q)), float(steps)),), delta)


def make_ctx(n=4, d=8, eps=1.0, delta=1e-5, rounds=10, sizes=100, local=None, participation=1.0):
    eps = torch.as_tensor(eps if isinstance(eps, (list, tuple)) else [eps] * n, dtype=torch.float32)
    sizes = torch.as_tensor(sizes if isinstance(sizes, (list, tuple)) else [sizes] * n, dtype=torch.float32)
    return RunContext(num_clients=n, client_sizes=sizes, epsilon=eps, delta=torch.full((n,), delta),
                      rounds=rounds, participation=participation, num_params=d,
                      layer_slices={"weight": slice(0, d - 2), "bias": slice(d - 2, d)},
                      label_counts=np.ones((n, 2)), num_classes=2, local=local or LocalConfig(),
                      device=torch.device("cpu"))


def make(name, ctx, **options):
    cls = MECHANISMS.get(name)
    return cls(cls.parse_options(options, "options"), ctx)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def frequency(hits: torch.Tensor) -> tuple[float, float]:
    """Observed frequency and its standard error."""
    p = float(hits.float().mean())
    return p, math.sqrt(max(p * (1 - p), 1e-12) / hits.numel())


# --- two-point (LDP-FL) -------------------------------------------------------------

@pytest.mark.parametrize("name", MECHANISMS.names())
def test_building_a_registered_mechanism_builds_the_class_that_runs_it(name):
    """The registry holds what resolving reads (options, traits); building it builds its
    ``implementation``, and a subclass of that (an audit's planted variant) builds itself."""
    from fedcore.mechanisms.base import Mechanism

    registered = MECHANISMS.get(name)
    mech = make(name, make_ctx())
    assert type(mech) is registered.implementation_class() and isinstance(mech, registered)
    assert type(mech).privatize is not Mechanism.privatize

    class Variant(type(mech)):
        pass

    assert type(Variant(mech.options, mech.ctx)) is Variant


def test_two_point_outputs_only_the_two_values_with_the_stated_probabilities():
    c, r, eps = 0.1, 0.075, 1.0
    e = math.exp(eps)
    w = torch.tensor([c - r, c - r / 2, c, c + r / 3, c + r]).repeat(100_000, 1)
    out = two_point(w, c, r, torch.tensor(eps), gen())
    high, low = c + r * (e + 1) / (e - 1), c - r * (e + 1) / (e - 1)
    assert torch.all(torch.isclose(out, torch.tensor(high)) | torch.isclose(out, torch.tensor(low)))
    for j, wj in enumerate(w[0].tolist()):
        stated = ((wj - c) * (e - 1) + r * (e + 1)) / (2 * r * (e + 1))
        p, se = frequency(torch.isclose(out[:, j], torch.tensor(high)))
        assert abs(p - stated) < Z * se, (wj, p, stated)


def test_two_point_is_unbiased_with_the_stated_variance():
    c, r, eps = 0.0, 0.075, 0.5
    k = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    w = torch.tensor([-0.075, -0.03, 0.0, 0.05, 0.075]).repeat(200_000, 1)
    out = two_point(w, c, r, torch.tensor(eps), gen(1)).double()
    variance = r ** 2 * k ** 2 - (w[0].double() - c) ** 2
    se = (variance / out.shape[0]).sqrt()
    assert torch.all((out.mean(0) - w[0]).abs() < Z * se)
    assert torch.allclose(out.var(0), variance, rtol=0.02)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_two_point_is_eps_ldp_empirically(eps):
    """For the two extreme inputs, each output's probability ratio stays within e^eps."""
    r, draws = 0.075, 400_000
    outputs = [two_point(torch.full((draws,), w), 0.0, r, torch.tensor(eps), gen(i)) > 0
               for i, w in enumerate((-r, r))]
    for value in (True, False):
        (pa, sa), (pb, sb) = (frequency(o == value) for o in outputs)
        assert (pa - Z * sa) / (pb + Z * sb) <= math.exp(eps)      # lower confidence bounds
        assert (pb - Z * sb) / (pa + Z * sa) <= math.exp(eps)
        assert max(pa, pb) / min(pa, pb) == pytest.approx(math.exp(eps), rel=0.05)   # the bound is tight


def test_two_point_clips_to_the_range_and_composes_d_eps_per_round():
    ctx = make_ctx(n=3, d=8, eps=[0.5, 1.0, 2.0])
    mech = make("two_point", ctx, radius=0.1, shuffle=False)
    updates = torch.full((3, 8), 5.0)            # far outside [-0.1, 0.1]: clipped to 0.1
    up = mech.privatize(updates, torch.arange(3), 1, gen())
    spread = 0.1 / torch.tanh(ctx.epsilon / 2)
    assert torch.allclose(up.values.abs(), spread[:, None].expand(3, 8))
    assert torch.allclose(up.spent, 8 * ctx.epsilon)
    assert torch.allclose(up.claims["composed eps (no shuffling)"], 8 * ctx.epsilon)
    assert "per-weight eps (with shuffling)" not in up.claims and up.linkable


def test_shuffling_keeps_each_columns_multiset_and_the_mean():
    values = torch.arange(600.0).view(20, 30)
    shuffled = shuffle_columns(values, gen())
    assert torch.equal(shuffled.sort(0).values, values.sort(0).values)
    assert torch.equal(shuffled.mean(0), values.mean(0))
    assert not torch.equal(shuffled, values)
    rows_of_first = (shuffled[0][None, :] == values).nonzero()[:, 0]
    assert len(set(rows_of_first.tolist())) > 1          # row 0 now mixes several clients


def test_shuffled_upload_is_unlinkable_and_claims_both_views():
    ctx = make_ctx(n=5, d=8, eps=1.0)
    mech = make("two_point", ctx)
    assert mech.shuffled and not type(mech).shuffled
    up = mech.privatize(torch.zeros(5, 8), torch.arange(5), 1, gen())
    assert not up.linkable
    assert torch.allclose(up.claims["per-weight eps (with shuffling)"], torch.ones(5))
    assert torch.allclose(up.claims["composed eps (no shuffling)"], torch.full((5,), 8.0))


def test_two_point_per_layer_ranges_come_from_the_public_previous_update():
    ctx = make_ctx(n=2, d=8)
    mech = make("two_point", ctx, radius=1.0, per_layer=True, shuffle=False)
    # round 1: fixed range [-1, 1]; round 2: weight layer [-0.2, 0.2], bias layer [0.4, 0.6]
    previous = torch.tensor([-0.2, 0.1, 0.2, 0.0, 0.0, 0.0, 0.4, 0.6])
    mech.after_round(previous, 1)
    up = mech.privatize(torch.zeros(2, 8), torch.arange(2), 2, gen())
    k = 1 / math.tanh(0.5)
    weight, bias = up.values[:, :6], up.values[:, 6:]
    assert torch.allclose(weight.abs(), torch.full_like(weight, 0.2 * k))
    assert torch.allclose((bias - 0.5).abs(), torch.full_like(bias, 0.1 * k))
    mech.after_round(torch.full((8,), 30.0), 2)        # wider than the fixed range: cannot widen it
    up = mech.privatize(torch.zeros(2, 8), torch.arange(2), 3, gen())
    assert torch.allclose(up.values.abs(), torch.full_like(up.values, k))


# --- ldp-sign (PLDP-FL, non-IID) -------------------------------------------------------

@pytest.mark.parametrize("p", [-3.0, -0.5, 0.0, 1.0, 4.0])
def test_ldp_sign_plus_one_frequency_is_phi_p_over_sigma(p):
    ctx = make_ctx(n=1, d=200_000, eps=2.0, delta=1e-3)
    mech = make("ldp_sign", ctx, clip=4.0, l2_sensitivity=8.0)
    sigma = 8.0 * math.sqrt(2 * math.log(1.25 / 1e-3)) / 2.0
    up = mech.privatize(torch.full((1, 200_000), p), torch.tensor([0]), 1, gen())
    assert up.is_sign and set(up.values.unique().tolist()) <= {-1.0, 1.0}
    assert float(up.noise_std[0]) == pytest.approx(sigma, rel=1e-6)
    freq, se = frequency(up.values == 1)
    assert abs(freq - norm.cdf(p / sigma)) < Z * se


def test_ldp_sign_is_eps_delta_dp_empirically():
    """Inputs Delta_2 apart (the clip bounds +-c with Delta_2 = 2c): P[S|a] <= e^eps P[S|b] + delta."""
    eps, delta, draws = 0.5, 1e-5, 400_000
    ctx = make_ctx(n=1, d=draws, eps=eps, delta=delta)
    mech = make("ldp_sign", ctx, clip=4.0, l2_sensitivity=8.0)
    a = mech.privatize(torch.full((1, draws), 4.0), torch.tensor([0]), 1, gen(0)).values == 1
    b = mech.privatize(torch.full((1, draws), -4.0), torch.tensor([0]), 1, gen(1)).values == 1
    for s in (True, False):
        (pa, sa), (pb, sb) = frequency(a == s), frequency(b == s)
        assert (pa - Z * sa) <= math.exp(eps) * (pb + Z * sb) + delta
        assert (pb - Z * sb) <= math.exp(eps) * (pa + Z * sa) + delta


def test_ldp_sign_deterministic_baseline_uploads_exact_signs_and_spends_nothing():
    ctx = make_ctx(n=2, d=4)
    up = make("ldp_sign", ctx, deterministic=True).privatize(
        torch.tensor([[0.3, -0.2, 9.0, -9.0], [-1.0, 1.0, 0.1, -0.1]]), torch.arange(2), 1, gen())
    assert torch.equal(up.values, torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, 1.0, -1.0]]))
    assert torch.equal(up.spent, torch.zeros(2)) and up.gaussian is None


def test_ldp_sign_spends_eps_per_round_and_records_the_box_sensitivity():
    ctx = make_ctx(n=2, d=16, eps=[1.0, 3.0], delta=1e-5)
    mech = make("ldp_sign", ctx, clip=2.0, l2_sensitivity=8.0)
    up = mech.privatize(torch.zeros(2, 16), torch.arange(2), 1, gen())
    assert torch.allclose(up.spent, ctx.epsilon)
    assert torch.allclose(up.claims["paper (PLDP-FL)"], ctx.epsilon)
    assert torch.allclose(up.gaussian.noise_multiplier, up.noise_std / (2 * 2.0 * 4.0))


# --- Gaussian (PLDP-FL, IID) --------------------------------------------------------------

def test_pldp_sigma_matches_hand_computed_values():
    # sqrt(4 q^2 R / (1 - q) * (2 ln(1/delta) / eps^2 + 1 / eps))
    # q=0.5, R=4, eps=1, delta=0.01: sqrt(8 * (2 ln 100 + 1)) = 9.03785
    # q=0.8, R=10, eps=2, delta=0.002: sqrt(128 * (ln 500 / 2 + 1/2)) = 21.48802
    got = pldp_sigma(torch.tensor([1.0, 2.0]), torch.tensor([0.01, 0.002]), 0.5, 4)
    assert float(got[0]) == pytest.approx(9.03785, rel=1e-5)
    got = pldp_sigma(torch.tensor([2.0]), torch.tensor([0.002]), 0.8, 10)
    assert float(got[0]) == pytest.approx(21.48802, rel=1e-5)


def test_gaussian_adds_sigma_i_noise_to_the_clipped_update_and_spends_eps_over_r():
    ctx = make_ctx(n=2, d=100_000, eps=[1.0, 10.0], delta=1e-3, rounds=5, sizes=[50, 200])
    mech = make("gaussian", ctx, clip=0.5, sample_rate=0.5, delta_from_size=True)
    sigma = pldp_sigma(ctx.epsilon, torch.tensor([1 / 50, 1 / 200]), 0.5, 5)
    updates = torch.full((2, 100_000), 3.0)
    up = mech.privatize(updates, torch.arange(2), 1, gen())
    noise = up.values - 0.5
    assert torch.allclose(noise.mean(1), torch.zeros(2), atol=Z * float(sigma.max()) / math.sqrt(1e5))
    assert torch.allclose(noise.std(1), sigma, rtol=0.01)
    assert torch.allclose(up.noise_std, sigma) and torch.equal(mech.noise_scale(), sigma)
    assert torch.allclose(up.spent, ctx.epsilon / 5)
    assert torch.allclose(up.claims["paper (PLDP-FL)"], ctx.epsilon / 5)


def test_gaussian_scaled_by_sensitivity_stays_within_budget_by_the_accountant():
    ctx = make_ctx(n=1, d=650, eps=2.0, delta=1e-5, rounds=20)
    mech = make("gaussian", ctx, clip=2.0, scale_by_sensitivity=True)
    up = mech.privatize(torch.zeros(1, 650), torch.tensor([0]), 1, gen())
    z = float(up.gaussian.noise_multiplier[0])
    assert z == pytest.approx(float(pldp_sigma(ctx.epsilon, ctx.delta, 0.8, 20)[0]), rel=1e-5)
    assert rdp_epsilon(20 * gaussian_rdp(z), 1e-5) <= 2.0     # R rounds of the unamplified Gaussian
    unscaled = make("gaussian", ctx, clip=2.0).privatize(torch.zeros(1, 650), torch.tensor([0]), 1, gen())
    assert rdp_epsilon(20 * gaussian_rdp(float(unscaled.gaussian.noise_multiplier[0])), 1e-5) > 100


# --- Laplace baseline -------------------------------------------------------------------

def test_laplace_scale_is_l1_sensitivity_over_eps():
    d = 200_000
    ctx = make_ctx(n=2, d=d, eps=[0.5, 4.0])
    mech = make("laplace", ctx, clip=0.01, l1_sensitivity=3.0)
    up = mech.privatize(torch.zeros(2, d), torch.arange(2), 1, gen())
    b = 3.0 / ctx.epsilon
    # E|X| = b and Var X = 2 b^2 for Laplace(0, b)
    assert torch.allclose(up.values.abs().mean(1), b, rtol=0.01)
    assert torch.allclose(up.values.var(1), 2 * b ** 2, rtol=0.02)
    assert torch.allclose(up.spent, ctx.epsilon) and up.gaussian is None
    default = make("laplace", make_ctx(n=1, d=10), clip=0.5)
    assert default.l1_sensitivity == 2 * 0.5 * 10


# --- DP-SGD (KDP-FL client) ----------------------------------------------------------------

def test_sampled_gaussian_rdp_matches_dp_accounting():
    at = [list(ORDERS).index(a) for a in INT_ORDERS]
    for q, z in [(0.01, 0.8), (0.05, 1.0), (0.3, 2.5), (1.0, 3.0)]:
        assert np.allclose(SampledGaussianRdp(q)(z)[0], gaussian_rdp(z, q)[at], rtol=1e-9)


@pytest.mark.parametrize("eps,delta,q,steps", [(1.0, 1e-5, 32 / 600, 20 * 5), (5.0, 1e-5, 32 / 600, 20 * 5),
                                               (1.0, 1e-5, 0.2, 30), (2.0, 1e-3, 1.0, 10)])
def test_calibrated_noise_multiplier_reaches_the_target_by_the_accountant(eps, delta, q, steps):
    z = float(calibrate_noise_multiplier(eps, delta, q, steps)[0])
    assert pld_epsilon(steps, z, q, delta) == pytest.approx(eps, rel=0.01)
    assert pld_epsilon(steps, 0.97 * z, q, delta) > eps     # the smallest such z


def test_dp_sgd_calibrates_per_distinct_budget_and_size():
    local = LocalConfig(epochs=1, batch_size=20, lr=0.05)
    ctx = make_ctx(n=4, eps=[1.0, 1.0, 5.0, 1.0], sizes=[100, 100, 100, 400], rounds=10, local=local,
                   participation=0.5)
    mech = make("dp_sgd", ctx, clip_norm=2.0, placement="round")
    z = mech.noise_multiplier
    assert mech.per_sample_clip == 2.0 and type(mech).per_sample
    # paper reading: T compositions at q = participation * min(1, S B / n) = 0.5 for all (epochs)
    assert z[0] == z[1] == z[3] and z[2] < z[0]
    assert rdp_epsilon(10 * gaussian_rdp(z[0], 0.5), 1e-5) == pytest.approx(1.0, rel=0.01)   # the paper's accountant
    assert torch.allclose(mech.noise_scale(), torch.as_tensor(0.05 * 2.0 * z, dtype=torch.float32))
    per_step = make("dp_sgd", ctx, calibration="per_step", placement="round").noise_multiplier
    assert per_step[0] == per_step[1] != per_step[3]
    # per-step reading: T * S compositions at q = B / n; client 3: S = 20 steps, q = 0.05
    assert pld_epsilon(10 * 20, per_step[3], 0.05, 1e-5) == pytest.approx(1.0, rel=0.01)


def test_dp_sgd_upload_noise_ledger_views_and_claim_reaching_the_target():
    local = LocalConfig(epochs=1, batch_size=25, lr=0.1)
    ctx = make_ctx(n=2, d=50_000, eps=[1.0, 5.0], sizes=[100, 100], rounds=4, local=local)
    mech = make("dp_sgd", ctx, clip_norm=1.0, placement="round")
    claimed = torch.zeros(2)
    for rnd in range(1, 5):
        up = mech.privatize(torch.zeros(2, 50_000), torch.arange(2), rnd, gen(rnd))
        claimed += up.claims["paper (KDP-FL)"]
        assert torch.allclose(up.spent, ctx.epsilon / 4)
    std = 0.1 * torch.as_tensor(mech.noise_multiplier, dtype=torch.float32)
    assert torch.allclose(up.values.std(1), std, rtol=0.01) and torch.allclose(up.noise_std, std)
    assert torch.allclose(claimed, ctx.epsilon, rtol=0.01)
    # the noise is added once, after S = 4 steps: rigorous multiplier sigma / (2 S)
    rigorous = torch.as_tensor(mech.noise_multiplier / 8, dtype=torch.float32)
    assert torch.allclose(up.gaussian.noise_multiplier.float(), rigorous)


def test_dp_sgd_gives_no_rdp_view_with_weight_decay():
    ctx = make_ctx(n=1, local=LocalConfig(weight_decay=1e-3))
    up = make("dp_sgd", ctx, placement="round").privatize(torch.zeros(1, 8), torch.tensor([0]), 1, gen())
    assert up.gaussian is None and float(up.spent[0]) > 0


def test_dp_sgd_per_step_is_the_default_with_standard_accounting():
    local = LocalConfig(steps=6, batch_size=10, lr=0.1)
    ctx = make_ctx(n=2, eps=[1.0, 4.0], sizes=[100, 200], rounds=5, local=local, participation=0.5)
    mech = make("dp_sgd", ctx, clip_norm=2.0)
    z = mech.noise_multiplier
    # T * S = 30 steps at q = B / n_i, each client's own eps (no amplification by client sampling)
    for i, (eps, q) in enumerate([(1.0, 0.1), (4.0, 0.05)]):
        assert pld_epsilon(30, z[i], q, 1e-5) == pytest.approx(eps, rel=0.02)
    std = mech.step_noise_std(torch.tensor([1, 0]))
    assert std.tolist() == pytest.approx([2.0 * z[1], 2.0 * z[0]], rel=1e-6)
    up = mech.privatize(torch.ones(2, 8), torch.tensor([0, 1]), 1, gen())
    assert torch.equal(up.values, torch.ones(2, 8))                      # the noise is in training
    # R of the Kalman server: S (lr z M / B)^2 per coordinate
    assert up.noise_std.tolist() == pytest.approx((0.1 * z * 2.0 / 10 * math.sqrt(6)).tolist(), rel=1e-5)
    assert up.gaussian.steps.tolist() == [6, 6] and up.gaussian.sample_rate.tolist() == [0.1, 0.05]


def test_dp_sgd_participation_rounds_calibrate_for_the_rounds_a_client_takes_part_in():
    from fedcore.mechanisms.dp_sgd import participation_rounds

    assert participation_rounds(50, 0.2, 100) == 17 and participation_rounds(10, 1.0, 5) == 10
    # fewer than one client in N exceeds m: P(Binomial(50, 0.2) > 17) <= 1/100 < P(... > 16)
    tail = lambda m: sum(math.comb(50, k) * 0.2 ** k * 0.8 ** (50 - k) for k in range(m + 1, 51))
    assert tail(17) <= 0.01 < tail(16)
    local = LocalConfig(steps=5, batch_size=10, lr=0.1)
    ctx = make_ctx(n=4, eps=[1.0] * 4, sizes=[100] * 4, rounds=50, local=local, participation=0.25)
    every = make("dp_sgd", ctx, clip_norm=1.0)
    part = make("dp_sgd", ctx, clip_norm=1.0, rounds="participation")
    m = participation_rounds(50, 0.25, 4)
    assert every.accounted_rounds == 50 and part.accounted_rounds == m < 50
    assert (part.noise_multiplier < every.noise_multiplier).all()
    # m rounds of S = 5 steps at q = B / n reach eps; the ledger composes the steps actually run
    assert pld_epsilon(m * 5, part.noise_multiplier[0], 0.1, 1e-5) == pytest.approx(1.0, rel=0.02)
    up = part.privatize(torch.ones(2, 8), torch.tensor([0, 1]), 1, gen())
    assert up.gaussian.steps.tolist() == [5, 5]


def test_dp_sgd_participation_retires_a_client_at_its_rounds_so_no_headline_exceeds_the_target():
    from fedcore.config import RunConfig
    from fedcore.engine import iter_run
    from fedcore.events import RoundEvent

    cfg = RunConfig.from_dict({"dataset": "digits", "model": "logreg", "num_clients": 10, "rounds": 12,
                               "participation": 0.5, "sampling": "poisson", "local": {"steps": 2, "batch_size": 16},
                               "privacy": {"mechanism": "dp_sgd", "epsilon": [1.0], "delta": [1e-5],
                                           "mechanism_options": {"rounds": "participation"}}})
    rounds = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)]
    retired = [ev for e in rounds for ev in e.events if ev.kind == "dropout"]
    m = __import__("fedcore.mechanisms.dp_sgd", fromlist=["x"]).participation_rounds(12, 0.5, 10)
    took_part = np.bincount([c for e in rounds for c in e.selected], minlength=10)
    assert took_part.max() == m and retired and all(ev.data["reason"] == "budget" for ev in retired)
    assert all(took_part[ev.client] == m for ev in retired)
    headline = [e for e in rounds[-1].epsilon_headline if e is not None]
    assert max(headline) <= 1.0 and max(headline) > 0.95     # spent, never exceeded


def test_dp_sgd_fixed_noise_multiplier_zero_is_clipping_only():
    ctx = make_ctx(n=2, local=LocalConfig(steps=3, batch_size=10, lr=0.1))
    mech = make("dp_sgd", ctx, clip_norm=2.0, noise_multiplier=0.0)
    assert mech.per_sample_clip == 2.0 and mech.noise_multiplier.tolist() == [0.0, 0.0]
    assert mech.step_noise_std(torch.tensor([0, 1])).tolist() == [0.0, 0.0]
    assert make("dp_sgd", ctx, noise_multiplier=1.5).noise_multiplier.tolist() == [1.5, 1.5]
    with pytest.raises(ConfigError):
        make("dp_sgd", ctx, rounds="some")


def test_a_dp_sgd_run_with_noise_multiplier_zero_proves_nothing():
    """Clipping alone releases the exact clipped update: the run's headline is null (ε = ∞), never 0."""
    from fedcore.config import RunConfig
    from fedcore.engine import iter_run
    from fedcore.events import RoundEvent

    cfg = RunConfig.from_dict({"dataset": "digits", "model": "logreg", "num_clients": 4, "rounds": 2,
                               "local": {"steps": 1, "batch_size": 16},
                               "privacy": {"mechanism": "dp_sgd", "epsilon": [1.0], "delta": [1e-5],
                                           "mechanism_options": {"noise_multiplier": 0.0}}})
    last = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)][-1]
    assert last.epsilon_headline_run is None and set(last.epsilon_headline) == {None}


def test_dp_sgd_per_step_noise_reaches_the_trained_update():
    from fedcore.engine.local import train_clients
    from fedcore.engine.plan import make_plan, pad_client_indices

    model = MODELS.get("logreg")((4,), 3)
    params = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    x, y = torch.zeros(40, 4), torch.zeros(40, dtype=torch.long)        # zero inputs: gradient is bias-only
    local = LocalConfig(steps=5, batch_size=8, lr=0.5)
    padded, counts = pad_client_indices([np.arange(20), np.arange(20, 40)], "cpu")
    plan = make_plan(padded, counts, local, gen(1))
    quiet = train_clients(model, params, x, y, plan, local, clip=1.0)
    draws = [train_clients(model, params, x, y, plan, local, clip=1.0, noise_std=torch.tensor([3.0, 0.0]),
                           gen=gen(s))["fc1.weight"] for s in range(200)]
    spread = torch.stack(draws).std(0)                                    # weight's gradient is 0: noise only
    want = 0.5 * 3.0 / 8 * math.sqrt(5)
    assert float(spread[0].mean()) == pytest.approx(want, rel=0.05) and float(spread[1].max()) == 0.0
    assert torch.equal(quiet["fc1.weight"], torch.zeros_like(quiet["fc1.weight"]))


# --- configuration rules ---------------------------------------------------------------------

def _config(**overrides):
    return resolve(RunConfig().with_overrides({"rounds": 3, **overrides}))


@pytest.mark.parametrize("aggregator", [n for n in AGGREGATORS.names() if AGGREGATORS.get(n).needs_linkable])
def test_shuffled_two_point_refuses_client_weighted_aggregators(aggregator):
    with pytest.raises(ConfigError, match="shuffle") as err:
        _config(**{"privacy.mechanism": "two_point", "privacy.aggregator": aggregator})
    assert err.value.field == "privacy.aggregator" and "tied to a client" in str(err.value)
    _config(**{"privacy.mechanism": "two_point", "privacy.aggregator": aggregator,
               "privacy.mechanism_options": {"shuffle": False}})


def test_client_weighted_aggregators_include_fedavg_and_weighted():
    linkable = {n for n in AGGREGATORS.names() if AGGREGATORS.get(n).needs_linkable}
    assert "fedavg" in linkable
    if "weighted" in AGGREGATORS:
        assert "weighted" in linkable


def test_dp_sgd_refuses_a_model_with_batch_norm(monkeypatch):
    from torch import nn

    from fedcore.engine.setup import prepare
    from fedcore.registry import Entry

    def bn_mlp(input_shape, num_classes):
        width = int(np.prod(input_shape))
        return nn.Sequential(nn.Flatten(), nn.Linear(width, 16), nn.BatchNorm1d(16), nn.ReLU(),
                             nn.Linear(16, num_classes))

    monkeypatch.setitem(MODELS._entries, "bn_mlp", Entry("bn_mlp", bn_mlp, "batch-norm MLP (test)"))
    with pytest.raises(ConfigError, match="batch norm"):
        prepare(_config(**{"model": "bn_mlp", "privacy.mechanism": "dp_sgd", "privacy.aggregator": "mean"}))
    prepare(_config(**{"model": "bn_mlp", "privacy.mechanism": "gaussian", "privacy.aggregator": "mean"}))
    prepare(_config(**{"model": "bn_mlp", "privacy.mechanism": "hw_gaussian", "privacy.aggregator": "mean",
                       "privacy.mechanism_options": {"clip_gradients": False}}))


@pytest.mark.parametrize("name,options,message", [
    ("two_point", {"layer_range": "mine"}, "previous_global"),
    ("two_point", {"radius": 0.0}, "> 0"),
    ("gaussian", {"sample_rate": 1.0}, r"in \(0, 1\)"),
    ("dp_sgd", {"calibration": "strong"}, "per_step"),
    ("laplace", {"clip": -1.0}, "> 0"),
])
def test_bad_mechanism_options_name_the_field(name, options, message):
    with pytest.raises(ConfigError, match=message) as err:
        _config(**{"privacy.mechanism": name, "privacy.aggregator": "mean",
                   "privacy.mechanism_options": options})
    assert err.value.field.startswith("privacy.mechanism_options.")


# --- end to end on digits -------------------------------------------------------------------

E2E = {  # mechanism: (options, extra overrides, eps without noise to speak of, eps drowning the signal)
    "gaussian": ({}, {}, 1e6, 1.0),
    "ldp_sign": ({}, {"privacy.server_lr": 0.01}, 1e6, 0.5),
    "two_point": ({}, {}, 1e3, 0.1),
    "laplace": ({}, {}, 1e6, 1.0),
    "dp_sgd": ({"clip_norm": 5.0}, {}, 1e4, 0.05),
}


def _accuracy(name, eps):
    options, extra, _, _ = E2E[name]
    cfg = _config(**{"privacy.mechanism": name, "privacy.aggregator": "mean", "privacy.epsilon": [eps],
                     "privacy.mechanism_options": options, **extra})
    events = list(iter_run(cfg))
    assert events[-1].status == "finished" and len(events) == 5
    return events[-2]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "dp_sgd" else n   # dp_sgd: ~13 s
                                  for n in sorted(E2E)])
def test_mechanism_runs_end_to_end_and_no_noise_beats_heavy_noise(name):
    quiet, loud = _accuracy(name, E2E[name][2]), _accuracy(name, E2E[name][3])
    assert quiet.accuracy > loud.accuracy + 0.15, (quiet.accuracy, loud.accuracy)
    assert loud.accuracy < 0.3
    assert all(e > 0 for e in loud.epsilon_spent)
