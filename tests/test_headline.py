"""The headline epsilon and threat model in the event stream: every mechanism declares a
threat model, no noise is infinity (strict JSON null), and a run's per-client headline is
dp-accounting's figure for the releases that client actually made, at its own delta."""
import json
import math

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib  # noqa: F401

from fedcore.accounting import NO_PRIVACY, THREAT_MODELS, decode_epsilon, format_epsilon
from fedcore.accounting.rdp import ORDERS
from fedcore.config import RunConfig
from fedcore.engine.loop import iter_run
from fedcore.events import RoundEvent, RunStarted, event_from_dict, to_dict
from fedcore.mechanisms import MECHANISMS

EXPECTED = {"none": NO_PRIVACY, "gaussian": "local", "laplace": "local", "two_point": "local",
            "ldp_sign": "local", "hw_gaussian": "local", "dp_sgd": "record"}


def run(**overrides):
    events = list(iter_run(RunConfig(**{"rounds": 3, **overrides})))
    return events[0], [e for e in events if isinstance(e, RoundEvent)]


def test_every_registered_mechanism_declares_a_threat_model():
    for entry in MECHANISMS.entries():
        cls = entry.obj
        default = cls.threat_model_for(cls.parse_options({}))
        assert default in THREAT_MODELS + (NO_PRIVACY,), entry.name
        if entry.name in EXPECTED:
            assert default == EXPECTED[entry.name], entry.name
    sign = MECHANISMS.get("ldp_sign")
    assert sign.threat_model_for(sign.parse_options({"deterministic": True})) == NO_PRIVACY


def test_no_noise_is_infinity_in_strict_json():
    start, rounds = run()
    assert start.threat_model == NO_PRIVACY and all(r.threat_model == NO_PRIVACY for r in rounds)
    last = rounds[-1]
    assert last.epsilon_headline == [None] * 10 and last.epsilon_headline_run is None
    assert math.isinf(decode_epsilon(last.epsilon_headline_run)) and format_epsilon(None) == "∞"
    text = json.dumps(to_dict(last), allow_nan=False)          # no Infinity / NaN token
    assert event_from_dict(json.loads(text)).epsilon_headline == [None] * 10
    assert 0.0 not in last.epsilon_headline


def test_headline_is_dp_accounting_for_what_each_client_released():
    # personal deltas (1/|D_i|) and partial participation: clients differ in both
    start, rounds = run(num_clients=4, participation=0.5, rounds=4,
                        partition={"kind": "dirichlet", "alpha": 0.5, "min_size": 5}, privacy={
        "mechanism": "gaussian", "aggregator": "mean", "epsilon": [1.0, 2.0, 4.0, 8.0],
        "mechanism_options": {"clip": 0.5, "delta_from_size": True, "scale_by_sensitivity": True}})
    assert start.threat_model == "local"
    uploads = [sum(c in r.uploaded for r in rounds) for c in range(4)]
    from fedcore.mechanisms.gaussian import pldp_sigma
    import torch
    sigma = pldp_sigma(torch.tensor(start.epsilon), 1.0 / torch.tensor(start.client_sizes, dtype=torch.float32),
                       0.8, 4)
    for c in range(4):
        delta = 1.0 / start.client_sizes[c]
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)   # the exact accountant
        for _ in range(uploads[c]):
            acc.compose(dp_accounting.GaussianDpEvent(float(f"{float(sigma[c]):.6g}")), 1)
        want = acc.get_epsilon(delta) if uploads[c] else 0.0
        assert rounds[-1].epsilon_headline[c] == pytest.approx(want, rel=1e-6)
    assert rounds[-1].epsilon_headline_run == pytest.approx(max(rounds[-1].epsilon_headline))
    assert len(set(start.delta)) == 1 and len(set(start.client_sizes)) > 1   # own delta != configured


def test_pure_mechanisms_compose_their_per_round_epsilon():
    _, rounds = run(num_clients=3, privacy={"mechanism": "laplace", "aggregator": "mean", "epsilon": [0.5]})
    assert rounds[-1].threat_model == "local"
    from fedcore.accounting.pure import compose_pure

    # three pure 0.5-DP rounds: the PLD composition, a hair below the sum 1.5
    want = compose_pure({0.5: 3}, 1e-5)
    assert want < 1.5
    assert rounds[-1].epsilon_headline == pytest.approx([want] * 3)


@pytest.mark.parametrize("eps, k", [(0.5, 50), (0.1, 13000), (2.0, 20), (0.05, 400)])
def test_pld_composition_of_randomized_responses_matches_the_closed_form(eps, k):
    """k-fold randomized response: the headline (closed-form inversion) and dp-accounting's PLD
    (the path for mixed ε) both equal the exact optimal composition (Kairouz et al. 2015),
    found here by bisection on δ(ε'); the PLD is never below it."""
    from fedcore.accounting.pure import pld_epsilon, compose_pure, exact_rr_delta

    lo, hi = 0.0, eps * k
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if exact_rr_delta(eps, k, mid) > 1e-5 else (lo, mid)
    got = compose_pure({eps: k}, 1e-5)
    assert got == pytest.approx(hi, rel=1e-7)
    pld = pld_epsilon(((eps, k),), 1e-5)
    assert hi * (1 - 1e-9) <= pld <= hi * 1.005 + 1e-9
    assert exact_rr_delta(eps, k, got) <= 1e-5 * (1 + 1e-6)
    assert got < eps * k


def test_pure_composition_grows_smoothly_with_the_per_release_epsilon():
    """A calibration bisects on it: the headline of k releases increases with ε, without jumps."""
    import numpy as np

    from fedcore.accounting.pure import compose_pure

    units = np.linspace(1.4, 2.2, 41)
    values = np.array([compose_pure({float(u): 13000}, 1e-5) for u in units])
    steps = np.diff(values)
    assert (steps > 0).all() and steps.max() < 1.5 * steps.min()


def test_ldp_fl_headline_composes_per_weight_releases_by_pld():
    """LDP-FL: d weights x T rounds of per-weight ε; the headline is the PLD bound of those
    d x T releases, about half their sum at ε = 1 (6,436 vs 13,000 on the demo)."""
    from fedcore.accounting.pure import compose_pure

    start, rounds = run(num_clients=2, rounds=3, privacy={"mechanism": "two_point", "aggregator": "mean",
                                                          "epsilon": [1.0]})
    d = start.num_params
    assert rounds[-1].epsilon_headline == pytest.approx([compose_pure({1.0: 3 * d}, 1e-5)] * 2)
    assert rounds[-1].epsilon_headline_run < 0.7 * 3 * d


def test_unclipped_gradients_have_no_bound():
    _, rounds = run(num_clients=3, rounds=1, model="logreg",
                    privacy={"mechanism": "hw_gaussian", "aggregator": "mean",
                             "mechanism_options": {"clip_gradients": False}})
    assert rounds[-1].epsilon_headline == [None, None, None]
    assert rounds[-1].epsilon_headline_run is None


def test_run_started_and_rounds_carry_the_threat_model_through_json():
    start, rounds = run(rounds=1, privacy={"mechanism": "dp_sgd", "aggregator": "mean"})
    for event in (start, rounds[0]):
        back = event_from_dict(json.loads(json.dumps(to_dict(event), allow_nan=False)))
        assert back.threat_model == "record"
    assert isinstance(start, RunStarted) and all(e is not None for e in rounds[0].epsilon_headline)
