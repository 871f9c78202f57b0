"""What ε buys (fedcore.attacks): attacks succeed where nothing is noised, stay under the cap the
run's ε proves where something is, and a mechanism that adds less noise than it accounts is flagged."""
from __future__ import annotations

import json
import math

import pytest
import torch

from fedcore.accounting.games import Bound
from fedcore.attacks.cli import attack_config
from fedcore.attacks.inversion import first_linear, invert_linear, last_bias, recover_label
from fedcore.attacks.membership import attacks
from fedcore.attacks.run import SIGMAS, attack_run
from fedcore.attacks.worst_case import GAME, not_applicable, worst_case
from fedcore.cli import main
from fedcore.data import load_dataset
from fedcore.models import MODELS, build_model


def membership_cap(fpr: float, epsilon: float, delta: float, profile=()) -> float:
    """The largest TPR at ``fpr`` of any test against a model (ε, δ)-DP for each pair given (Kairouz et al. 2015)."""
    return min(Bound(GAME, e, d, "run").tpr_cap(fpr) for e, d in [(epsilon, delta), *profile])


FEDSGD = ["local.steps=1", "local.batch_size=1"]
"""One example, one step: the update an attack reads most easily."""


def one_step_update(model, x, y, lr=0.5):
    params = dict(model.named_parameters())
    loss = -torch.log_softmax(model(x[None]), -1)[0, y]
    grads = torch.autograd.grad(loss, list(params.values()))
    return -lr * torch.cat([g.reshape(-1) for g in grads])


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_analytic_inversion_is_exact_on_one_noise_free_example(name):
    data = load_dataset("digits")
    torch.manual_seed(0)
    model = build_model(name, (1, 8, 8), 10)
    params = dict(model.named_parameters())
    layer = first_linear(params)
    for i in range(5):
        x, y = data.x_train[i], int(data.y_train[i])
        update = one_step_update(model, x, y)[None]
        recon = invert_linear(update, layer)[0]
        assert torch.allclose(recon, x.reshape(-1), atol=1e-5), (name, float((recon - x.reshape(-1)).abs().max()))
        assert int(recover_label(update, last_bias(params))[0]) == y


def test_every_model_with_a_linear_first_layer_is_inverted():
    """The registry's models are all checked: those whose first layer is linear are the ones above."""
    linear = {n for n in MODELS.names() if _builds(n) and first_linear(dict(_builds(n).named_parameters()))}
    assert linear == {"logreg", "mlp"}


def _builds(name):
    try:
        return build_model(name, (1, 8, 8), 10)
    except Exception:  # conv stacks too deep for 8x8 digits
        return build_model(name, (1, 28, 28), 10)


def test_caps():
    assert membership_cap(0.01, 0.0, 0.0) == pytest.approx(0.01)
    assert membership_cap(0.5, 1.0, 0.0) == pytest.approx(1 - math.exp(-1) * 0.5)  # the second line binds
    assert round(membership_cap(0.01, 1.0, 0.0), 4) == 0.0272
    assert round(membership_cap(0.01, 1.0, 1e-5, [(0.5, 0.01), (0.8, 1e-3)]), 4) == 0.0233   # the δ = 1e-3 pair


def attack_json(capsys, *args) -> dict:
    assert main(["attack", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_no_privacy_one_example_one_step_reidentifies(capsys):
    r = attack_json(capsys, "--preset", "demo", *sum((["--set", s] for s in FEDSGD), []), "--shadows", "8")
    rec = r["reconstruction"]
    assert r["threat_model"] == "none" and r["attacker"]["key"] == "server" and r["epsilon_headline"] is None
    assert rec["reidentified"] >= 0.9 and rec["labels_recovered"] >= 0.9 and rec["psnr_db"] > 40
    assert rec["dp_cap"] == 1.0 and rec["chance"] < 0.01
    assert set(r["membership"]) >= {"auc", "tpr_at_1pct_fpr", "dp_cap_tpr_at_1pct_fpr"}
    assert r["membership"]["dp_cap_tpr_at_1pct_fpr"] == 1.0


@pytest.mark.parametrize("method,attacker", [("ldp_fl", "anyone"), ("dp_fedavg", "outsider")])
def test_at_a_headline_of_one_the_attack_stays_under_its_cap(method, attacker):
    cfg = attack_config("demo", None, [f"method={method}", "privacy.epsilon=1", *FEDSGD], "headline")
    r = attack_run(cfg, shadows=None)
    rec = r["reconstruction"]
    assert rec["key"] == attacker and 0.99 <= r["epsilon_headline"] <= 1.0
    assert rec["dp_cap"] < 0.05
    assert rec["reidentified"] <= rec["dp_cap"] + SIGMAS * rec["reidentified_se"]
    assert rec["matched"] <= rec["dp_cap"] + SIGMAS * rec["matched_se"]
    assert not r["above_cap"]
    if method == "dp_fedavg":  # the trusted server sees the raw update: the attack succeeds, by design
        trusted = r["attackers"][1]
        assert trusted["key"] == "trusted_server" and not trusted["bounded"] and trusted["reidentified"] >= 0.8


class _Weakened:
    """``torch`` for one mechanism module, with its noise draws divided by ``factor``."""

    def __init__(self, factor):
        self.factor = factor

    def __getattr__(self, name):
        return getattr(torch, name)

    def randn(self, *args, **kwargs):
        return torch.randn(*args, **kwargs) / self.factor


def test_a_mechanism_that_adds_less_noise_than_it_accounts_is_flagged(monkeypatch):
    """Local Gaussian uploads (ULDP-FED's local reading), one round, ε = 1, 100 clients: honest, the
    informed adversary stays under e^ε/n + δ; with σ/10 planted (accounted as σ) it is far above."""
    import fedcore.mechanisms.uldp_gaussian as uldp

    sets = ["method=dp_fedavg", "privacy.epsilon=1", "num_clients=100", "rounds=1", *FEDSGD,
            "privacy.mechanism_options.reading=local", "privacy.mechanism_options.noise=accountant"]
    cfg = attack_config("demo", None, sets, "headline")
    honest = attack_run(cfg, shadows=None)
    assert not honest["above_cap"]
    monkeypatch.setattr(uldp, "torch", _Weakened(10.0))
    broken = attack_run(cfg, shadows=None)
    rec = broken["reconstruction"]
    assert broken["epsilon_headline"] == honest["epsilon_headline"]   # the ledger still counts σ
    assert rec["matched"] - SIGMAS * rec["matched_se"] > rec["dp_cap"] and broken["above_cap"]


def test_a_mechanism_with_a_third_of_its_noise_is_flagged_by_the_worst_case_record(monkeypatch):
    """σ/3 planted (the ledger still counts σ): real digits cannot show it (the informed adversary
    finds 9-13 % against a cap of 18.8 %, docs/benchmarks.md), the worst-case record's membership
    game can: its TPR lies above e^ε FPR + δ at 1 % FPR, and the run is flagged."""
    import fedcore.mechanisms.uldp_gaussian as uldp

    sets = ["method=dp_fedavg", "privacy.epsilon=1", "num_clients=100", "rounds=1", *FEDSGD,
            "privacy.mechanism_options.reading=local", "privacy.mechanism_options.noise=accountant"]
    cfg = attack_config("demo", None, sets, "headline")
    honest = worst_case(cfg, 1.0)
    assert not honest.above_cap and honest.tpr_at_1pct_fpr < _within_noise(honest.dp_cap_tpr_at_1pct_fpr)
    monkeypatch.setattr(uldp, "torch", _Weakened(3.0))
    broken = worst_case(cfg, 1.0)
    at_1pct = broken.checks[1]
    assert at_1pct["fpr"] == 0.01 and at_1pct["tpr_low"] > at_1pct["cap"] and broken.above_cap
    run = attack_run(cfg, shadows=4)
    assert run["epsilon_headline"] == pytest.approx(1.0, rel=0.02)     # the ledger still counts σ
    assert run["worst_case"]["above_cap"] and run["above_cap"]
    assert run["worst_case"]["dp_cap_tpr_at_1pct_fpr"] < membership_cap(0.01, run["epsilon_headline"], 1e-5)  # profile


def run_end(cfg):
    from fedcore.engine import iter_run
    from fedcore.events import RunFinished

    return next(e for e in iter_run(cfg, profile=True) if isinstance(e, RunFinished))


@pytest.mark.parametrize("method", ["ldp_fl", "pldp_b", "hw_dpfl"])
@pytest.mark.parametrize("epsilon", [1.0, 100.0])
def test_the_worst_case_record_stays_under_the_cap_of_every_local_method(method, epsilon):
    """Under the cap of the run's whole privacy profile (its headline at every δ), the tightest."""
    cfg = attack_config("demo", None, [f"method={method}", f"privacy.epsilon={epsilon}"], "headline")
    profile = [tuple(p) for p in run_end(cfg).epsilon_profile]
    m = worst_case(cfg, epsilon, profile=profile)
    assert m is not None and not m.above_cap, m.checks
    # one upload's exact curve: an honest Gaussian lies on it (within sampling noise), under the run's cap
    assert m.tpr_at_1pct_fpr <= _within_noise(m.dp_cap_tpr_at_1pct_fpr)
    assert m.dp_cap_tpr_at_1pct_fpr <= m.run_cap_tpr_at_1pct_fpr <= membership_cap(0.01, epsilon, 1e-5)


def _within_noise(cap: float, draws: int = 20_000) -> float:
    """``cap`` plus 4 standard errors of a rate measured over ``draws``."""
    return cap + 4 * math.sqrt(cap * (1 - cap) / draws)


def test_the_privacy_profile_holds_the_headline_and_loosens_as_delta_shrinks():
    cfg = attack_config("demo", None, ["method=dp_fedavg", "privacy.epsilon=1"], "headline")
    end = run_end(cfg)
    eps = dict((d, e) for e, d in end.epsilon_profile)
    assert list(eps) == sorted(eps, reverse=True) and len(eps) >= 6
    values = [eps[d] for d in sorted(eps, reverse=True)]
    assert values == sorted(values)                                  # smaller δ, larger ε
    assert eps[1e-4] < 1.0 < eps[1e-6]                               # the run's own δ = 1e-5 sits between
    # a tighter cap than the headline's alone, never a looser one
    assert membership_cap(0.01, 1.0, 1e-5, list(end.epsilon_profile)) < membership_cap(0.01, 1.0, 1e-5)
    assert run_end(attack_config("demo", None, ["method=fedavg"], "target")).epsilon_profile == []


def test_the_worst_case_record_is_not_played_where_one_upload_is_not_protected():
    for method, threat in (("dp_fedavg", "central"), ("kdp_fl", "record")):
        cfg = attack_config("demo", None, [f"method={method}", "privacy.epsilon=1"], "headline")
        assert worst_case(cfg, 1.0) is None and f"the {threat} threat model" in not_applicable(cfg)


@pytest.mark.parametrize("epsilon", [1.0, 10.0, 1000.0])
def test_membership_stays_inside_the_region_its_epsilon_allows(epsilon):
    cfg = attack_config("demo", None, ["method=dp_fedavg", f"privacy.epsilon={epsilon}"], "headline")
    m = attacks(cfg, shadows=8, scorers=("lira",))["lira"]
    assert m.epsilon is not None and m.epsilon <= epsilon
    assert not m.above_cap
    for check in m.checks:
        assert check["tpr_low"] <= check["cap"]
    assert m.tpr_at_1pct_fpr <= m.dp_cap_tpr_at_1pct_fpr + 0.01
    # LiRA's halves differ by a replacement: the cap is the replace-one curve, within the (2ε, (1+e^ε)δ)
    # that group privacy gives from the add/remove headline
    assert m.cap_game == "user/replace/run/secret" and m.cap_epsilon is not None
    if m.epsilon < 30:
        assert m.dp_cap_tpr_at_1pct_fpr <= membership_cap(0.01, 2 * m.epsilon, (1 + math.exp(m.epsilon)) * 1e-5)


@pytest.mark.slow   # 12 attacked runs, ~28 s: in the full suite only
def test_attack_success_does_not_fall_as_epsilon_grows(tmp_path, capsys):
    out = tmp_path / "f.json"
    args = ["sweep", "--preset", "demo", "--attack", "4", "--match", "headline", "--epsilons", "1,100,10000",
            "--seeds", "2", "--methods", "ldp_fl,dp_fedavg", "--no-reference",
            *sum((["--set", s] for s in FEDSGD), []), "--out", str(out)]
    assert main(args) == 0
    rows = json.loads(out.read_text())["rows"]
    for method in ("ldp_fl", "dp_fedavg"):
        mean = {e: sum(r["matched"] for r in rows if r["method"] == method and r["epsilon"] == e) / 2
                for e in (1.0, 100.0, 10000.0)}
        slack = 3 * math.sqrt(0.25 / 400)  # 3 standard errors of a rate over 2 seeds x 200 updates
        assert mean[1.0] <= mean[100.0] + slack and mean[100.0] <= mean[10000.0] + slack, (method, mean)
        assert not any(r["attack_above_cap"] for r in rows)
    assert "attack (outsider): matched" in capsys.readouterr().out


@pytest.mark.parametrize("args,message", [
    (["--shadows", "2"], "shadows: got 2"),
    (["--budget", "0"], "--budget 0"),
    (["--set", "privacy.epsilon=-1"], "privacy.epsilon"),
])
def test_bad_attack_input_is_one_line_and_exit_2(args, message, capsys):
    assert main(["attack", "--preset", "demo", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_attack_membership_shows_membership_at_ten_times_chance_by_lira_and_rmia(capsys):
    """Few records per model, trained to memorise, no privacy: both scoring functions find members at
    0.1 % FPR ten times as often as chance, from the same shadow runs, inside the (trivial) region."""
    r = attack_json(capsys, "--preset", "attack_membership", "--shadows", "32")
    lira_, rmia = r["membership"], r["rmia"]
    assert set(rmia) == set(lira_) and lira_["attack"] == "LiRA" and rmia["attack"] == "RMIA"
    for m in (lira_, rmia):
        assert m["tpr_at_0_1pct_fpr"] >= 10 * 0.001, m["attack"]
        assert m["pairs"] == lira_["pairs"] and not m["above_cap"]
        assert m["cap_curve"]["tpr"] == [1.0] * len(m["cap_curve"]["fpr"])    # ε = ∞: nothing is excluded
    assert rmia["roc"]["fpr"] != lira_["roc"]["fpr"]                          # two scores, not one twice


def test_on_attack_membership_the_cap_curve_is_the_exact_trade_off_curve_and_a_third_of_the_noise_is_flagged(monkeypatch):
    import fedcore.mechanisms.uldp_gaussian as uldp
    from scipy.stats import norm

    sets = ["method=dp_fedavg", "privacy.epsilon=1", "privacy.mechanism_options.reading=local",
            "privacy.mechanism_options.noise=accountant"]
    cfg = attack_config("attack_membership", None, sets, "headline")
    honest = attack_run(cfg, shadows=8)
    curve, mu = honest["membership"]["cap_curve"], honest["membership"]["cap_mu"]
    assert not honest["above_cap"] and mu is not None and honest["rmia"]["cap_curve"] == curve
    assert curve["tpr"][0] == pytest.approx(norm.cdf(norm.ppf(curve["fpr"][0]) + mu), abs=1e-6)
    assert all(a <= b for a, b in zip(curve["tpr"], curve["tpr"][1:]))
    monkeypatch.setattr(uldp, "torch", _Weakened(3.0))
    broken = attack_run(cfg, shadows=8)
    assert broken["epsilon_headline"] == honest["epsilon_headline"] and broken["above_cap"]
