"""Every cap beside an attack is proven for the game that attack plays (fedcore.accounting.games):
amplification only where the sampling stays secret, replacements cost what they cost, one upload
is checked against one upload's ε, and the exact curve where the mechanism has one."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fedcore.accounting.calibrate import calibrate_noise_multiplier
from fedcore.accounting.games import Game, bound, worst
from fedcore.attacks.cli import attack_config
from fedcore.attacks.run import attack_run
from fedcore.attacks.worst_case import worst_case
from test_attacks import _Weakened

FEDSGD = ["local.steps=1", "local.batch_size=1"]
WATCH = Game("record", "replace", "round", "conditioned")


def _orthogonal_reidentification(n: int, z: float, q: float, trials: int, seed: int = 0):
    """The live view's record-level game with n orthogonal worst-case records (unit vectors, clip 1): one
    DP-SGD step, each record in the batch with probability q, Gaussian noise z on the sum; the attacker
    guesses the record most aligned with the update. Returns (success rate, its standard error, the
    mean cap proven for the game, the mean cap the amplified ε would draw)."""
    rng = np.random.default_rng(seed)
    hits, caps, amplified = [], [], []
    amp = bound(Game("record", "add_remove", "round", "secret"), {(z, q): 1}, {}, "add_remove", 1e-5)
    while len(hits) < trials:
        used = rng.random((4096, n)) < q
        used = used[used.any(1)]                     # the view scores an update only when it used an image
        update = used + z * rng.standard_normal(used.shape)
        guess = update.argmax(1)
        k = used.sum(1)
        hits.extend(used[np.arange(len(used)), guess].tolist())
        for size in k.tolist():
            game = Game("record", "replace", "round", "conditioned", group=size)
            caps.append(bound(game, {(z, q): 1}, {}, "add_remove", 1e-5).reid_cap(size / n))
            amplified.append(min(1.0, math.exp(2 * amp.epsilon) * size / n + 1e-5))
    hits, caps, amplified = (np.array(v[:trials], dtype=float) for v in (hits, caps, amplified))
    return hits.mean(), hits.std() / math.sqrt(trials), caps.mean(), amplified.mean()


@pytest.mark.parametrize("n", [144, 1000])
def test_orthogonal_worst_case_records_stay_under_the_cap_of_the_game_they_play(n):
    """DP-SGD accounted at amplified ε = 1 (Poisson q = 1/n): conditioned on the batch there is no
    amplification. The drawn cap used to be e^{2ε}·k/n at the amplified ε (7.4 % success against
    5.1 % at n = 144); the game's own cap, one step's replace-one ε, holds."""
    q = 1.0 / n
    z = float(calibrate_noise_multiplier(np.array([1.0]), np.array([1e-5]), np.array([q]), np.array([1]))[0])
    rate, se, cap, amplified = _orthogonal_reidentification(n, z, q, trials=10_000)
    assert rate <= cap + 3 * se, (rate, cap)
    assert rate > amplified + 3 * se, (rate, amplified)      # the amplified cap was not a theorem here


def test_the_live_view_states_its_game_and_its_epsilon_is_one_step_without_amplification():
    """Issue 37's check: record-level demo at ε = 1, FedSGD: ``cap_game`` names the game, and its ε is at
    least the replace-one ε of one un-amplified step of the run's noise multiplier."""
    cfg = attack_config("demo", None, ["privacy.mechanism=dp_sgd", "privacy.epsilon=1", *FEDSGD], "headline")
    out = attack_run(cfg, shadows=None)
    rec = out["reconstruction"]
    assert rec["cap_game"] == WATCH.key and 1 in rec["cap_groups"]
    z = _run_multiplier(cfg)
    one_step = bound(WATCH, {(z, 1.0): 1}, {}, "add_remove", 1e-5).epsilon
    assert rec["cap_epsilon"] >= one_step > 5 * out["epsilon_headline"]
    assert not out["above_cap"]


def _run_multiplier(cfg) -> float:
    from fedcore.engine.setup import prepare

    return float(np.asarray(prepare(cfg).mechanism.noise_multiplier).reshape(-1)[0])


def test_the_outsider_of_dp_fedavg_is_capped_with_a_replacement_of_one_round_and_of_the_run_beside():
    """Demo DP-FedAvg at headline 1 (20 rounds, every client each round): the view reads one round's
    aggregate, so its cap is one round's replace-one ε; the whole run's replace-one ε (1.96 exact by
    μ-GDP, 2.14 by RDP, where the add/remove headline is 1) is given beside, for an attacker who pools
    every round."""
    cfg = attack_config("demo", None, ["method=dp_fedavg", "privacy.epsilon=1", *FEDSGD], "headline")
    out = attack_run(cfg, shadows=None)
    outsider = next(a for a in out["attackers"] if a["key"] == "outsider")
    assert outsider["cap_game"] == "user/replace/round/conditioned"
    headline = out["epsilon_headline"]
    assert 1.9 * headline <= outsider["run_cap_epsilon"] <= 2.2 * headline
    assert 0 < outsider["cap_epsilon"] < outsider["run_cap_epsilon"]
    assert next(a for a in out["attackers"] if a["key"] == "trusted_server")["cap_epsilon"] is None


def test_replacement_costs_more_than_add_remove_and_at_most_twice():
    g = {(1.2, 0.05): 200}
    add = bound(Game("user", "add_remove", "run", "secret"), g, {}, "add_remove", 1e-5)
    swap = bound(Game("user", "replace", "run", "secret"), g, {}, "add_remove", 1e-5)
    assert add.epsilon < swap.epsilon <= 2 * add.epsilon + 1e-9
    native = bound(Game("user", "replace", "run", "secret"), g, {}, "replace", 1e-5)   # local: already a swap
    assert native.epsilon == pytest.approx(add.epsilon)
    unsampled = bound(Game("user", "replace", "run", "secret"), {(2.0, 1.0): 4}, {}, "add_remove", 1e-5)
    assert unsampled.mu == pytest.approx(2 * math.sqrt(4) / 2.0, rel=1e-4)             # sensitivity doubles


def test_the_exact_curve_is_tighter_than_the_profile_and_agrees_with_dp_accounting():
    b = bound(Game("user", "replace", "round", "conditioned"), {(4.0, 1.0): 1}, {}, "replace", 1e-5)
    assert b.mu == pytest.approx(0.25)
    profile_cap = min(min(1.0, math.exp(e) * 0.01 + d) for e, d in ((b.epsilon, b.delta), *b.profile))
    assert b.tpr_cap(0.01) < profile_cap
    from fedcore.accounting.pure import gaussian_pld_epsilon
    assert b.epsilon == pytest.approx(gaussian_pld_epsilon((((4.0, 1.0), 1),), 1e-5), rel=1e-3)


@pytest.mark.parametrize("releases", [{(1.0, 0.1): 10}, {(1.0, 1.0): 1}], ids=["sampled profile", "mu-GDP"])
def test_worst_holds_for_every_bound(releases):
    """Down to FPR 1e-5, where a cap read from the smaller ε sits below the other bound (issue 56,
    mutant G6: 0.003111 < 0.003248 at 1e-4); the sampled bounds differ at small FPR only."""
    game = Game("user", "replace", "run", "secret")
    a = bound(game, releases, {}, "add_remove", 1e-5)
    b = bound(game, {(0.8 * z, q): n for (z, q), n in releases.items()}, {}, "add_remove", 1e-5)
    c = bound(game, {(1.5 * z, q): n for (z, q), n in releases.items()}, {}, "add_remove", 1e-5)
    w = worst([c, a, b])
    assert w.epsilon == max(a.epsilon, b.epsilon, c.epsilon)
    for fpr in (1e-5, 1e-4, 0.001, 0.01, 0.1):
        assert w.tpr_cap(fpr) >= max(a.tpr_cap(fpr), b.tpr_cap(fpr), c.tpr_cap(fpr)) - 1e-12, fpr


LOCAL_20 = ["method=dp_fedavg", "privacy.epsilon=10", "num_clients=100", "rounds=20", *FEDSGD,
            "privacy.mechanism_options.reading=local", "privacy.mechanism_options.noise=accountant"]


@pytest.mark.parametrize("factor", [2.0, 3.0])
def test_too_little_noise_in_every_round_of_a_multi_round_run_is_flagged(monkeypatch, factor):
    """σ/2 and σ/3 in each of 20 rounds: against the whole run's ε the worst-case record hid it; one
    upload's exact curve shows it, and the run's looser cap is still given beside."""
    import fedcore.mechanisms.uldp_gaussian as uldp

    cfg = attack_config("demo", None, LOCAL_20, "headline")
    honest = worst_case(cfg, 10.0)
    assert not honest.above_cap and honest.cap_game == "user/replace/round/conditioned" and honest.cap_mu
    assert honest.dp_cap_tpr_at_1pct_fpr < honest.run_cap_tpr_at_1pct_fpr
    monkeypatch.setattr(uldp, "torch", _Weakened(factor))
    broken = worst_case(cfg, 10.0)
    assert broken.above_cap, broken.checks
    assert broken.tpr_at_1pct_fpr < broken.run_cap_tpr_at_1pct_fpr    # the run's cap alone would miss it


def test_a_quarter_too_little_noise_in_one_round_is_flagged_by_the_exact_curve(monkeypatch):
    import fedcore.mechanisms.uldp_gaussian as uldp

    sets = ["method=dp_fedavg", "privacy.epsilon=1", "num_clients=100", "rounds=1", *FEDSGD,
            "privacy.mechanism_options.reading=local", "privacy.mechanism_options.noise=accountant"]
    cfg = attack_config("demo", None, sets, "headline")
    honest = worst_case(cfg, 1.0, trials=50_000)
    assert not honest.above_cap and honest.cap_mu is not None
    monkeypatch.setattr(uldp, "torch", _Weakened(1.25))
    broken = worst_case(cfg, 1.0, trials=50_000)
    assert broken.above_cap, broken.checks
