"""Audited privacy (fedcore.audit): the lower bound stays under the accountant for every
local mechanism, and deliberately broken mechanisms are caught."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from fedcore.audit.canary import canary_run, gaussian_pair_epsilon, guess_counts, steinke_lower_bound
from fedcore.audit.distinguish import PROBES, audit_options, distinguish
from fedcore.audit.stats import (clopper_pearson_upper, epsilon_from_rates, max_auditable_epsilon,
                                 one_run_epsilon, one_run_p_value, threshold_audit)
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


# The one-run p-value written out as Steinke, Nasr & Jagielski 2023 (Theorem 3.1, Algorithm 2)
# state it, with exact binomial sums (math.comb): independent of the code's betainc / gammaln.

def steinke_p_value(m, r, v, eps, delta):
    q = math.exp(eps) / (1 + math.exp(eps))
    pmf = [math.comb(r, k) * q ** k * (1 - q) ** (r - k) for k in range(r + 1)]
    tail = sum(pmf[v:])                                                  # P[Binomial(r, q) >= v]
    worst = max((sum(pmf[v - j] for j in range(1, i + 1)) / i for i in range(1, v + 1)), default=0.0)
    return min(1.0, tail + 2 * m * delta * worst)


def steinke_epsilon(m, r, v, delta, alpha):
    """Largest eps whose p-value is below ``alpha`` (bisection on the formula above)."""
    if steinke_p_value(m, r, v, 0.0, delta) >= alpha:
        return 0.0
    lo, hi = 0.0, 60.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if steinke_p_value(m, r, v, mid, delta) < alpha else (lo, mid)
    return lo


@pytest.mark.parametrize("m, r, v, eps, delta", [
    (12, 10, 8, 0.7, 0.01), (12, 12, 12, 1.5, 0.002), (30, 20, 15, 0.3, 0.005), (40, 40, 31, 1.0, 1e-3),
    (8, 6, 0, 0.5, 0.01), (8, 6, 1, 0.0, 0.02), (200, 100, 80, 0.8, 1e-5)])
def test_one_run_p_value_is_the_papers_formula_delta_term_included(m, r, v, eps, delta):
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(steinke_p_value(m, r, v, eps, delta), rel=1e-9)


def test_one_run_p_value_is_valid_for_an_eps_delta_mechanism():
    """Each canary's bit is revealed with probability delta, else sent through eps-randomized
    response: (eps, delta)-DP in each canary, and every guess is right with probability
    delta + (1 - delta) e^eps / (1 + e^eps). The p-value must bound the true probability of
    v or more right guesses at every v; without the 2 m delta term it falls below it."""
    m, eps, delta = 20, 0.5, 0.02
    q = delta + (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    true_tail = [sum(math.comb(m, k) * q ** k * (1 - q) ** (m - k) for k in range(v, m + 1)) for v in range(m + 1)]
    p_values = [one_run_p_value(m, m, v, eps, delta) for v in range(m + 1)]
    assert all(p >= t * (1 - 1e-12) for p, t in zip(p_values, true_tail)), list(zip(p_values, true_tail))


def test_canary_bound_splits_alpha_over_the_guess_counts():
    """The best of several guess counts k is only a 95 % bound if each k is tested at 5 % / (number
    of k) (Bonferroni): the bound is the largest of the per-k bounds at that level, not at 5 %."""
    m, delta = 200, 1e-5
    assert guess_counts(m) == [5, 10, 20, 40, 50]        # k = m/40, m/20, m/10, m/5, m/4
    rng = np.random.default_rng(3)
    inserted = rng.random(m) < 0.5
    scores = 1.5 * inserted + rng.normal(size=m)
    order = np.argsort(scores)
    correct = {k: int(inserted[order[-k:]].sum() + (~inserted[order[:k]]).sum()) for k in guess_counts(m)}
    per_k = {k: steinke_epsilon(m, 2 * k, v, delta, 0.05 / 5) for k, v in correct.items()}
    eps, detail = steinke_lower_bound(scores, inserted, delta, confidence=0.95)
    assert max(per_k.values()) > 0.5                     # the test has something to split
    assert eps == pytest.approx(max(per_k.values()), rel=1e-6)
    k = detail["guesses"] // 2
    assert detail["correct"] == correct[k] and per_k[k] == pytest.approx(eps, rel=1e-6)
    # the same scores at the unsplit level give a larger bound: the split is what the test sees
    assert steinke_epsilon(m, 2 * k, correct[k], delta, 0.05) > 1.05 * eps


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


def _rdp_epsilon(z, delta):
    import dp_accounting

    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(z))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("z, pure", [(0.8, 2.0), (0.8, 20.0), (3.0, 0.3), (3.0, 5.0)])
def test_the_accountant_of_a_report_is_the_tightest_of_its_ledger_views(z, pure):
    """A report whose ledger record holds both a Gaussian record (RDP) and a rigorous pure eps is
    bounded by each, so its accountant eps is the smaller one, whichever that is."""
    from fedcore.accounting.ledger import GaussianRecord
    from fedcore.audit.distinguish import report_epsilon
    from fedcore.mechanisms.base import Upload

    delta = 1e-5
    rdp = _rdp_epsilon(z, delta)
    upload = Upload(values=torch.zeros(1, 1), clients=torch.arange(1), spent=torch.tensor([50.0]),
                    gaussian=GaussianRecord(noise_multiplier=torch.tensor([z])), pure_epsilon=torch.tensor([pure]))
    eps, basis = report_epsilon(upload, 0, delta)
    assert abs(rdp - pure) > 1.0                          # the views differ: min and max are far apart
    assert eps == pytest.approx(min(rdp, pure), rel=1e-4)
    assert ("pure" in basis) == (pure < rdp)


def test_sign_mechanism_report_is_accounted_by_its_tighter_pure_view():
    """ldp_sign on one weight: its randomized-response pure eps ln(Phi(c/sigma) / Phi(-c/sigma))
    is about 0.16, its Gaussian record's RDP eps about 1 at delta = 1e-5; the report costs the smaller."""
    from scipy.special import ndtr

    eps, delta, clip, sens = 1.0, 1e-5, 1.0, 2.0
    sigma = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps            # PLDP-FL's sigma
    pure = math.log(ndtr(clip / sigma) / ndtr(-clip / sigma))
    rdp = _rdp_epsilon(sigma / (2 * clip), delta)                         # sensitivity: the box diameter 2c
    assert pure < 0.5 * rdp
    r = audit("ldp_sign", {"clip": clip, "l2_sensitivity": sens}, ctx=context(eps=eps, delta=delta), trials=200)
    assert r.accountant_epsilon == pytest.approx(pure, rel=1e-3)


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


def _result(**changes):
    from fedcore.audit.run import AuditResult

    base = dict(method="m", mechanism="laplace", threat_model="local", kind="distinguishing", scope="one report",
                delta=1e-5, paper_claim=1.0, paper_claim_label="paper", accountant_epsilon=10.0, accountant_basis="b",
                audited_epsilon=0.5, confidence=0.95, audited_estimate=None, estimate_basis="", ceiling=8.0,
                seconds=0.0)
    return AuditResult(**{**base, **changes})


def test_verdict_says_when_the_audit_tests_outside_the_papers_premise():
    premise = "LDP-FL's per-weight eps assumes shuffled reports"
    assert _result().verdict().startswith("consistent") and "premise" not in _result().verdict()
    assert _result(audited_epsilon=2.0).claim_refuted
    assert "does not hold" in _result(audited_epsilon=2.0).verdict()
    for audited, starts in ((0.5, "consistent"), (2.0, "the audited lower bound exceeds the paper's claimed"),
                            (20.0, "VIOLATION")):
        r = _result(audited_epsilon=audited, premise=premise)
        assert r.verdict().startswith(starts) and f"outside the paper's premise: {premise}" in r.verdict()
        assert not r.claim_refuted and r.outside_premise and "does not hold" not in r.verdict()
        d = r.to_dict()
        assert d["verdict"] == r.verdict() and d["outside_premise"] and d["premise"] == premise


@pytest.mark.parametrize("shuffle", [True, False])
def test_ldp_fl_audit_verdict_says_it_tests_un_shuffled_reports(shuffle):
    """LDP-FL's per-weight eps rests on shuffling; the one-report audit draws un-shuffled reports,
    so its verdict (not only its scope) says it tests outside that premise, and a bound above the
    per-weight claim does not 'refute' it."""
    from fedcore.audit.run import audit_run

    cfg = RunConfig(dataset="digits", model="logreg", num_clients=3, rounds=1,
                    privacy={"mechanism": "two_point", "aggregator": "mean", "epsilon": (1.0,),
                             "mechanism_options": {"shuffle": shuffle}})
    r = audit_run(cfg, trials=2000, dim=8)
    verdict = r.verdict()
    assert "outside the paper's premise" in verdict and "shuffl" in verdict and "un-shuffled" in r.scope
    assert ("the run shuffles" in verdict) == shuffle
    from fedcore.accounting.pure import compose_pure

    # 8 per-weight releases of eps = 1, composed as the ledger composes them (a hair below 8)
    assert r.paper_claim == 1.0 and r.accountant_epsilon == pytest.approx(compose_pure({1.0: 8}, cfg.privacy.delta[0]))
    assert r.accountant_epsilon <= 8.0
    assert 1.0 < r.audited_epsilon <= r.accountant_epsilon        # above the per-weight claim, 8 weights composed
    assert not r.claim_refuted and not r.accountant_violated and "does not hold" not in verdict
    assert r.to_dict()["verdict"] == verdict


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
