"""The Mechanisms page's science (fedcore.teaching) against the real registered mechanisms.

Every analytic law is checked against draws from the mechanism's own ``privatize``, and
every noise scale against the mechanism module's own calibration function and the
``noise_std`` its ``privatize`` reports. Statistical checks allow Z standard errors.
"""
import math

import numpy as np
import pytest
import torch
from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss
from scipy import stats

from fedcore import teaching
from fedcore.mechanisms import MECHANISMS
from fedcore.mechanisms.gaussian import pldp_sigma
from fedcore.mechanisms.ldp_sign import ldp_sign_sigma
from fedcore.mechanisms.uldp_gaussian import decayed_clip, gaussian_multiplier

Z = 5.0
N = 200_000


def binomial_close(fraction, p, n):
    return abs(fraction - p) <= Z * math.sqrt(p * (1 - p) / n) + 1e-12


def test_every_scalar_demo_is_a_registered_mechanism():
    for name, demo in teaching.SCALAR_DEMOS.items():
        assert name in MECHANISMS
        assert demo.guarantee in ("pure", "approximate")
        for knob in demo.knobs:
            assert knob.low <= knob.default <= knob.high


@pytest.mark.parametrize("w, eps, radius", [(0.05, 1.0, 0.1), (-0.3, 0.5, 0.5), (0.0, 4.0, 0.075)])
def test_two_point_analytic_law_matches_the_mechanism(w, eps, radius):
    law = teaching.output_law("two_point", w, eps, settings={"radius": radius})
    out = teaching.sample_outputs("two_point", w, eps, settings={"radius": radius}, n=N, seed=1)
    assert np.allclose(np.unique(out), law.points, rtol=1e-5)
    assert binomial_close(np.mean(out > 0), law.probs[1], N)
    assert np.allclose(teaching.mass_frequencies(out, law.points), [np.mean(out < 0), np.mean(out > 0)])
    fourth = sum(p * (x - law.mean) ** 4 for x, p in zip(law.points, law.probs))
    assert abs(out.mean() - law.mean) <= Z * math.sqrt(law.variance / N)
    # sample variance: standard error sqrt((mu4 - var^2) / n), plus the O(1/n) bias of the mean's estimate
    tolerance = Z * math.sqrt(max(fourth - law.variance ** 2, 0.0) / N) + Z ** 2 * law.variance / N
    assert abs(out.var() - law.variance) <= tolerance


def test_two_point_is_unbiased_with_the_papers_variance():
    """LDP-FL Sec. 4.3: E[w*] = w and Var = r^2((e^eps+1)/(e^eps-1))^2 - (w-c)^2."""
    law = teaching.output_law("two_point", 0.06, 2.0, settings={"radius": 0.075})
    assert law.mean == pytest.approx(sum(x * p for x, p in zip(law.points, law.probs)))
    assert law.mean == pytest.approx(0.06)
    assert law.variance == pytest.approx(0.075 ** 2 * ((math.e ** 2 + 1) / (math.e ** 2 - 1)) ** 2 - 0.06 ** 2)


def test_two_point_likelihood_ratio_at_the_range_ends_is_e_eps():
    eps, r = 1.5, 0.2
    high = [np.mean(teaching.sample_outputs("two_point", w, eps, settings={"radius": r}, n=N, seed=s) > 0)
            for s, w in enumerate((-r, r))]
    assert high[1] / high[0] == pytest.approx(math.exp(eps), rel=0.03)
    assert (1 - high[0]) / (1 - high[1]) == pytest.approx(math.exp(eps), rel=0.03)


@pytest.mark.parametrize("w, eps", [(2.0, 10.0), (-3.0, 10.0), (10.0, 5.0), (0.5, 1.0)])
def test_ldp_sign_probability_of_plus_one_is_phi_w_over_sigma(w, eps):
    settings = {"clip": 4.0}
    law = teaching.output_law("ldp_sign", w, eps, 1e-5, settings)
    sigma = float(ldp_sign_sigma(torch.tensor(eps, dtype=torch.float64), torch.tensor(1e-5), 8.0))
    assert law.scale == pytest.approx(sigma)
    assert law.probs[1] == pytest.approx(stats.norm.cdf(min(w, 4.0) / sigma))   # w clipped to [-4, 4]
    out = teaching.sample_outputs("ldp_sign", w, eps, 1e-5, settings, n=N, seed=2)
    assert set(np.unique(out)) <= {-1.0, 1.0}
    assert binomial_close(np.mean(out == 1), law.probs[1], N)


def test_ldp_sign_demo_takes_the_width_of_the_clip_range_as_l2_sensitivity():
    """One number in [-c, c]: two inputs are at most 2c apart, so Delta_2 = 2c."""
    mech = teaching.build_mechanism("ldp_sign", [3.0], 1e-6, {"clip": 2.0})
    expected = ldp_sign_sigma(torch.tensor([3.0], dtype=torch.float64), torch.tensor([1e-6], dtype=torch.float64), 4.0)
    assert mech.sigma.dtype == torch.float64 and torch.allclose(mech.sigma, expected)   # privacy numbers in float64
    assert teaching.output_law("ldp_sign", 0.0, 3.0, 1e-6, {"clip": 2.0}).scale == pytest.approx(float(expected[0]))


def test_ldp_sign_error_curve_matches_the_mechanism():
    eps = np.array([0.5, 2.0, 8.0])
    n = 40_000
    analytic = teaching.error_curve("ldp_sign", 1.5, eps, 1e-5, {"clip": 2.0})
    measured = teaching.empirical_error("ldp_sign", 1.5, eps, 1e-5, {"clip": 2.0}, n=n, seed=3)
    assert analytic[0] > analytic[1] > analytic[2]        # more budget, fewer wrong signs
    for a, m in zip(analytic, measured):
        assert binomial_close(m, a, n)


def test_sign_error_at_zero_is_a_coin_flip():
    assert teaching.sign_error(0.0, 3.0) == 0.5
    assert teaching.empirical_sign_error(np.array([1.0, -1.0, 1.0, -1.0]), 0.0) == 0.5


@pytest.mark.parametrize("eps, rounds, q", [(1.0, 1, 0.8), (0.3, 10, 0.5)])
def test_gaussian_scale_is_pldp_fls_calibration(eps, rounds, q):
    settings = {"clip": 1.0, "sample_rate": q, "rounds": rounds}
    expected = float(pldp_sigma(torch.tensor(eps, dtype=torch.float64), torch.tensor(1e-4, dtype=torch.float64),
                                q, rounds))
    law = teaching.output_law("gaussian", 0.5, eps, 1e-4, settings)
    assert law.scale == pytest.approx(expected)
    upload = teaching.scalar_upload("gaussian", 0.5, eps, 1e-4, settings, n=N, seed=4)
    assert torch.allclose(upload.noise_std, torch.tensor(expected, dtype=torch.float32), rtol=1e-5)
    out = upload.values[:, 0].double().numpy()
    assert stats.kstest(out, "norm", args=(law.mean, law.scale)).pvalue > 1e-4


def test_laplace_scale_is_what_the_mechanism_uses():
    """laplace.py has no pure calibration function: compare with the mechanism's own
    ``noise_scale()`` (sqrt(2) b) and the ``noise_std`` its privatize reports."""
    eps, clip = 0.7, 0.05
    mech = teaching.build_mechanism("laplace", [eps], settings={"clip": clip})
    b_mechanism = float(mech.noise_scale()[0]) / math.sqrt(2)
    law = teaching.output_law("laplace", 0.02, eps, settings={"clip": clip})
    assert law.scale == pytest.approx(b_mechanism, rel=1e-6)
    upload = teaching.scalar_upload("laplace", 0.02, eps, settings={"clip": clip}, n=N, seed=5)
    assert float(upload.noise_std[0]) / math.sqrt(2) == pytest.approx(law.scale, rel=1e-6)
    out = upload.values[:, 0].double().numpy()
    assert stats.kstest(out, "laplace", args=(law.mean, law.scale)).pvalue > 1e-4
    assert np.mean(np.abs(out - 0.02)) == pytest.approx(law.scale, rel=0.02)    # E|X - mu| = b


def test_uldp_scale_is_the_classical_calibration_at_the_first_participation():
    eps, delta = 2.0, 1e-6
    settings = {"clip0": 2.0, "beta": 0.1}
    c1 = float(decayed_clip(2.0, 0.1, torch.tensor(1)))
    z = float(gaussian_multiplier(torch.tensor(eps), torch.tensor(delta)))
    law = teaching.output_law("uldp_gaussian", 5.0, eps, delta, settings)
    assert teaching.clip_range("uldp_gaussian", settings) == pytest.approx((-c1, c1))
    assert law.mean == pytest.approx(c1)                    # w = 5 clipped to C_1
    assert law.scale == pytest.approx(z * c1, rel=1e-6)
    upload = teaching.scalar_upload("uldp_gaussian", 5.0, eps, delta, settings, n=N, seed=6)
    assert float(upload.noise_std[0]) == pytest.approx(law.scale, rel=1e-5)
    assert stats.kstest(upload.values[:, 0].double().numpy(), "norm", args=(law.mean, law.scale)).pvalue > 1e-4


@pytest.mark.parametrize("name", ["two_point", "gaussian", "laplace", "uldp_gaussian"])
def test_empirical_variance_follows_the_analytic_curve(name):
    eps = np.array([0.1, 1.0, 10.0])
    w = teaching.clip_range(name)[1] / 2
    analytic = teaching.error_curve(name, w, eps)
    measured = teaching.empirical_error(name, w, eps, n=40_000, seed=7)
    assert analytic[0] > analytic[1] > analytic[2]
    assert np.allclose(measured, analytic, rtol=0.06)


def test_exact_gaussian_delta_matches_dp_accounting():
    for sigma, sens, eps in [(2.0, 1.0, 0.5), (9.1, 3.8, 1.0), (1.0, 2.0, 3.0)]:
        exact = GaussianPrivacyLoss(sigma, sensitivity=sens).get_delta_for_epsilon(eps)
        assert teaching.gaussian_exact_delta(eps, sens, sigma) == pytest.approx(exact, rel=1e-9)


def test_reading_of_two_point_states_the_ratio_e_eps():
    reading = teaching.epsilon_reading("two_point", 0.0, math.log(3.0))
    assert "Pure" in reading.guarantee
    assert "**3**" in reading.meaning and not reading.warning


def test_reading_shows_the_one_bit_epsilon_of_the_stochastic_sign():
    reading = teaching.epsilon_reading("ldp_sign", 1.0, 1.0, 1e-5, {"clip": 4.0})
    sigma = teaching.output_law("ldp_sign", 1.0, 1.0, 1e-5, {"clip": 4.0}).scale
    eps_bit = math.log(stats.norm.cdf(4 / sigma) / stats.norm.cdf(-4 / sigma))
    assert f"**{eps_bit:.3g}**" in " ".join(reading.worked)


def test_reading_warns_when_the_exact_delta_exceeds_the_claim():
    # ULDP-FED calibrates to sensitivity C, but two clipped scalars can be 2C apart
    assert teaching.epsilon_reading("uldp_gaussian", 0.5, 1.0, 1e-5).warning
    assert not teaching.epsilon_reading("gaussian", 0.5, 1.0, 1e-5).warning


@pytest.mark.parametrize("eps, delta", [(0.0, 1e-5), (-1.0, 1e-5), (float("nan"), 1e-5), (float("inf"), 1e-5),
                                        (1.0, 0.0), (1.0, 1.0)])
def test_invalid_budget_is_refused_with_a_message(eps, delta):
    with pytest.raises(ValueError, match="epsilon|delta"):
        teaching.output_law("gaussian", 0.0, eps, delta)


def test_unknown_mechanism_names_the_choices():
    with pytest.raises(KeyError, match="two_point"):
        teaching.calibrated_scale("dp_sgd", 1.0)


# --- issue 24: the first minute teaches (plain words, numbers for people, the stored frontier) ---
def test_numbers_are_written_for_people_and_threat_models_in_plain_words():
    from fedcore.accounting.headline import THREAT_MODEL_TEXT
    from fedcore.accounting.words import PLAIN_THREAT_TEXT, epsilon_unit, people, why_they_differ

    assert [people(x) for x in (12987.3, 1.95e5, 6436.2, 0.5, 1.0, 20.0, 0.123456, math.inf, None)] == \
        ["13,000", "195,000", "6,440", "0.5", "1", "20", "0.123", "∞", "∞"]
    assert "e+" not in "".join(people(10.0 ** k) for k in range(-3, 8))
    assert set(PLAIN_THREAT_TEXT) == set(THREAT_MODEL_TEXT)
    assert "can't see your data even if it's curious" in PLAIN_THREAT_TEXT["local"]
    assert not any(w in " ".join(PLAIN_THREAT_TEXT.values()) for w in ("amplification", "RDP", "headline"))
    for name in MECHANISMS.names():      # every mechanism says what its ε covers and why the total differs
        assert epsilon_unit(name) != "as the mechanism defines it" and why_they_differ(name), name
    assert epsilon_unit("two_point") == "per weight, per round"


def test_the_cli_prints_the_final_accuracy_rounded(capsys):
    from fedcore.cli import main

    assert main(["run", "--preset", "demo", "--set", "rounds=2"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "final accuracy" in l)
    value = line.split("final accuracy ")[1].split(",")[0]
    assert len(value.split(".")[1]) == 4, line


def test_the_stored_first_screen_frontier_is_what_the_code_produces(tmp_path):
    """assets/first_screen_frontier.json names the command that made it; rerun one of its points
    (dp_fedavg at headline ε = 10, seed 0) and compare: a change to training, calibration or the
    accounting that moves it means the file must be regenerated with that command."""
    import json
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    stored_file = Path(__file__).resolve().parents[1] / "assets" / "first_screen_frontier.json"
    stored = json.loads(stored_file.read_text())
    words = shlex.split(stored["command"])
    assert words[:4] == ["python", "-m", "fedcore", "sweep"] and "--match" in words
    out = tmp_path / "point.json"
    subprocess.run([sys.executable, "-m", "fedcore", "sweep", "--preset", "demo", "--match", "headline",
                    "--methods", "dp_fedavg", "--epsilons", "10", "--seeds", "1", "--no-reference",
                    "--out", str(out)], check=True, capture_output=True, cwd=stored_file.parents[1])
    (new,) = json.loads(out.read_text())["rows"]
    (old,) = [r for r in stored["rows"] if r["method"] == "dp_fedavg" and r["epsilon"] == 10.0 and r["seed"] == 0]
    # the calibration lands anywhere in [0.99, 1] x target (a sweep's first guess comes from its other points)
    assert 9.9 <= new["epsilon_accountant"] <= 10.0 and 9.9 <= old["epsilon_accountant"] <= 10.0
    assert new["knob"] == pytest.approx(old["knob"], rel=0.02)
    assert abs(new["accuracy"] - old["accuracy"]) <= 0.04, (new["accuracy"], old["accuracy"])
    assert {r["epsilon"] for r in stored["rows"] if r["epsilon"]} >= {1.0, 10.0, 100.0}
