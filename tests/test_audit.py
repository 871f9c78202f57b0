"""Audited privacy (fedcore.audit): the lower bound stays under the accountant for every
local mechanism, and deliberately broken mechanisms are caught."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from fedcore.audit.canary import canary_run, gaussian_pair_epsilon, steinke_lower_bound
from fedcore.audit.distinguish import PROBES, audit_options, distinguish
from fedcore.audit.stats import (clopper_pearson_upper, epsilon_from_rates, max_auditable_epsilon,
                                 one_run_epsilon, threshold_audit)
from fedcore.config import LocalConfig, RunConfig
from fedcore.context import RunContext
from fedcore.mechanisms import MECHANISMS
from fedcore.mechanisms.gaussian import GaussianMechanism
from fedcore.mechanisms.laplace import LaplaceMechanism
from fedcore.mechanisms.two_point import TwoPointMechanism, two_point

TRIALS = 6000


def context(eps=1.0, dim=1, delta=1e-5, rounds=1, local=None) -> RunContext:
    return RunContext(num_clients=1, client_sizes=torch.tensor([100.0]), epsilon=torch.tensor([eps]),
                      delta=torch.tensor([delta]), rounds=rounds, participation=1.0, num_params=dim,
                      layer_slices={"w": slice(0, dim)}, label_counts=np.ones((1, 10)), num_classes=10,
                      local=local or LocalConfig(), device=torch.device("cpu"))


def audit(name, options=None, cls=None, ctx=None, trials=TRIALS, seed=0):
    cls_ = cls or MECHANISMS.get(name)
    opts = audit_options(name, MECHANISMS.get(name).parse_options(options or {}, "o"))
    return distinguish(cls_, opts, ctx or context(), PROBES[name], name=name, client=0, trials=trials, seed=seed)


# --- statistics ------------------------------------------------------------------------------------

def test_clopper_pearson_matches_the_closed_form_at_zero_successes():
    # k = 0: the upper limit solves (1 - p)^n = alpha
    assert float(clopper_pearson_upper(0, 200, 0.05)) == pytest.approx(1 - 0.05 ** (1 / 200), rel=1e-9)
    assert float(clopper_pearson_upper(200, 200, 0.05)) == 1.0


def test_epsilon_from_rates_is_the_hypothesis_testing_bound():
    assert float(epsilon_from_rates(0.1, 0.3, 0.0)) == pytest.approx(math.log(0.7 / 0.1))   # max(ln 7, ln 3)
    assert float(epsilon_from_rates(0.5, 0.5, 0.0)) == 0.0      # a coin flip rules nothing out


def test_threshold_audit_of_identical_worlds_finds_nothing_and_of_separate_ones_hits_the_ceiling():
    rng = np.random.default_rng(0)
    same = threshold_audit(rng.normal(size=4000), rng.normal(size=4000), 1e-5)
    assert same.epsilon_lower < 0.2
    apart = threshold_audit(rng.normal(size=4000), 100 + rng.normal(size=4000), 1e-5)
    assert apart.epsilon_lower == pytest.approx(max_auditable_epsilon(4000, 1e-5))


def test_one_run_bound_grows_with_correct_guesses_and_vanishes_at_chance():
    assert one_run_epsilon(1000, 100, 50, 1e-5, 0.05) == 0.0
    strong, weak = one_run_epsilon(1000, 100, 100, 1e-5, 0.05), one_run_epsilon(1000, 100, 80, 1e-5, 0.05)
    assert strong > weak > 0.5


def test_gaussian_pair_epsilon_matches_dp_accounting_for_the_gaussian_mechanism():
    import dp_accounting

    acc = dp_accounting.pld.PLDAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(2.0))
    assert gaussian_pair_epsilon(0, 1, 0.5, 1, 1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=0.02)


# --- local mechanisms: lower bound <= accountant ----------------------------------------------------

@pytest.mark.parametrize("name, options, ctx", [
    ("two_point", {}, context(eps=1.0)),
    ("laplace", {"clip": 1.0}, context(eps=1.0)),
    ("ldp_sign", {"clip": 1.0, "l2_sensitivity": 2.0}, context(eps=1.0)),
    ("gaussian", {"clip": 1.0, "sample_rate": 0.5, "scale_by_sensitivity": True}, context(eps=1.0)),
    ("uldp_gaussian", {"recall": "none", "sensitivity": "ldp", "reading": "local"}, context(eps=2.0, dim=4)),
    ("hw_gaussian", {"clip_gradients": True}, context(eps=2.0, dim=4, local=LocalConfig(steps=2, lr=0.1))),
])
def test_audited_lower_bound_stays_below_the_accountant(name, options, ctx):
    r = audit(name, options, ctx=ctx)
    assert 0 < r.accountant_epsilon < math.inf
    assert r.epsilon_lower <= r.accountant_epsilon
    assert r.test.epsilon_estimate <= 1.25 * r.accountant_epsilon + 0.1


def test_audit_of_pure_mechanisms_is_tight():
    """Two-point and Laplace on one weight: the bound reaches most of eps (the audit has power)."""
    for name, options in (("two_point", {}), ("laplace", {"clip": 1.0})):
        r = audit(name, options, trials=20000)
        assert 0.75 * r.accountant_epsilon < r.epsilon_lower <= r.accountant_epsilon


# --- broken mechanisms are caught -------------------------------------------------------------------

class HalfNoiseLaplace(LaplaceMechanism):
    """Laplace that adds half the noise its ledger record assumes."""

    def privatize(self, updates, clients, round, gen):
        up = super().privatize(updates, clients, round, gen)
        clipped = updates.clamp(-self.options.clip, self.options.clip)
        up.values = clipped + (up.values - clipped) / 2
        return up


class UnclippedTwoPoint(TwoPointMechanism):
    """Two-point that forgets to clip: weights beyond c +- r push P(high) outside [0, 1]."""

    def privatize(self, updates, clients, round, gen):
        o = self.options
        up = super().privatize(updates, clients, round, gen)           # the ledger record it claims
        eps = self.ctx.epsilon[clients].to(updates.dtype)
        up.values = two_point(updates, o.center, o.radius, eps[:, None], gen)
        return up


class UnclippedGaussian(GaussianMechanism):
    """PLDP-FL's Gaussian that adds its noise to the raw update (the clip is ignored)."""

    def privatize(self, updates, clients, round, gen):
        c = self.options.clip
        up = super().privatize(updates, clients, round, gen)
        up.values = up.values + (updates - updates.clamp(-c, c))
        return up


@pytest.mark.parametrize("name, broken, options", [
    ("laplace", HalfNoiseLaplace, {"clip": 1.0}),
    ("two_point", UnclippedTwoPoint, {}),
    ("gaussian", UnclippedGaussian, {"clip": 1.0, "sample_rate": 0.5, "scale_by_sensitivity": True}),
])
def test_a_broken_mechanism_is_caught(name, broken, options):
    honest = audit(name, options)
    caught = audit(name, options, cls=broken)
    assert caught.accountant_epsilon == pytest.approx(honest.accountant_epsilon)   # same claim in the ledger
    assert caught.epsilon_lower > caught.accountant_epsilon
    assert honest.epsilon_lower <= honest.accountant_epsilon


# --- canary audit (one run) and the engine function -------------------------------------------------

def test_steinke_bound_from_scores():
    inserted = np.arange(200) % 2 == 0
    perfect = np.where(inserted, 1.0, 0.0) + np.linspace(0, 1e-3, 200)
    eps, detail = steinke_lower_bound(perfect, inserted, 1e-5)
    assert eps > 2 and detail["correct"] == detail["guesses"]
    eps_random, _ = steinke_lower_bound(np.random.default_rng(1).random(200), inserted, 1e-5)
    assert eps_random < 1


def test_canary_audit_sees_an_unnoised_run_and_not_a_noised_one():
    base = dict(dataset="digits", model="logreg", num_clients=4, rounds=2, local={"lr": 0.5})
    plain = canary_run(RunConfig(**base), canaries=40)
    assert plain.accountant_epsilon == math.inf and plain.epsilon_lower > 1.0
    noised = RunConfig(**base, privacy={"mechanism": "dp_sgd", "epsilon": (1.0,), "aggregator": "mean"})
    r = canary_run(noised, unit="record", canaries=40)
    assert r.epsilon_lower <= r.accountant_epsilon < math.inf
    assert r.mean_cosine_in > r.mean_cosine_out or r.epsilon_lower == 0.0


def test_cli_prints_three_numbers_and_writes_json(tmp_path, capsys):
    from fedcore.cli import main

    out = tmp_path / "audit.json"
    rc = main(["audit", "--preset", "demo", "--set", "privacy.mechanism=laplace", "--set", "privacy.aggregator=mean",
               "--set", "privacy.mechanism_options.clip=1.0", "--trials", "2000", "--dim", "1", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "accountant (upper)" in text and "audited (lower)" in text and "paper's claim" in text
    data = json.loads(out.read_text())
    assert data["accountant_epsilon"] == pytest.approx(1.0) and 0 < data["audited_epsilon"] <= 1.0
    assert data["kind"] == "distinguishing" and data["threat_model"] == "local"


@pytest.mark.parametrize("argv", [["--trials", "3"], ["--set", "rounds=0"], ["--kind", "distinguishing"],
                                  ["--client", "99"]])
def test_cli_bad_input_exits_2_with_one_line(argv, capsys, tmp_path):
    from fedcore.cli import main

    rc = main(["audit", "--preset", "demo", "--out", str(tmp_path / "a.json"), *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("error:")


def test_mechanisms_page_audit_of_one_release_and_its_chart():
    from fedcore.audit.run import audit_release
    from pages.components.audit import bounds_chart

    r = audit_release("laplace", 1.0, 1e-5, {"clip": 1.0}, trials=4000)
    assert 0.5 < r.epsilon_lower <= r.accountant_epsilon == pytest.approx(1.0)
    fig = bounds_chart(r.epsilon_lower, r.accountant_epsilon, r.ceiling, claim=2.0)
    names = [t.name for t in fig.data]
    assert any(n.startswith("audited lower bound") for n in names) and any(n.startswith("paper's claim") for n in names)
    with pytest.raises(Exception, match="no distinguishing probe"):
        audit_release("dp_sgd", 1.0)


def test_too_large_an_audit_is_refused_with_a_clear_error():
    from fedcore.errors import ConfigError

    with pytest.raises(ConfigError, match="--dim"):
        audit("laplace", {"clip": 1.0}, ctx=context(dim=200_000), trials=10_000)
