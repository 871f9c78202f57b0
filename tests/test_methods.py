"""Every registered method runs end to end on digits + logistic regression.

For each recipe in ``METHODS``: three rounds under heavy noise (tiny personalized budgets)
stream the per-round records the dashboard plots (the method's own events and signals,
weights aligned with the uploads, a ledger that charges the clients), and the same
recipe without noise (mechanism ``none``) ends more accurate.
"""
import math

import pytest

from fedcore.catalog import METHODS
from fedcore.config import RunConfig
from fedcore.engine.loop import iter_run
from fedcore.methods import apply_method

DIGITS = {"dataset": "digits", "model": "logreg", "num_clients": 6, "rounds": 3, "train_size": 720,
          "participation": 1.0, "local.lr": 0.5, "seed": 0}
HEAVY = {"privacy.epsilon": [0.02] * 3 + [0.1] * 3}
NO_NOISE = {"privacy.mechanism": "none", "privacy.mechanism_options": {}}


def _kinds(record):
    return {e.kind for e in record.events}


def _pldp_b(rounds):
    for r in rounds:       # rho_i = 1/sigma_i: the eps = 0.1 clients outweigh the eps = 0.02 ones
        assert min(r.weights[3:]) > max(r.weights[:3])


def _pldp_c(rounds):
    assert all("selection" in _kinds(r) for r in rounds)
    assert all("no_selection" in _kinds(r) for r in rounds if not r.selected)


def _hw_dpfl(rounds):
    for r in rounds:
        assert "hellinger_weights" in _kinds(r) and "hellinger_distance_mean" in r.signals
        assert sum(r.weights) == pytest.approx(1.0, abs=1e-5)


def _kdp_fl(rounds):
    for r in rounds:
        assert 0 < r.signals["kalman_gain"] <= 1


EXPECTED = {"pldp_b": _pldp_b, "pldp_c": _pldp_c, "hw_dpfl": _hw_dpfl, "kdp_fl": _kdp_fl}


def run(method: str, extra: dict):
    cfg = apply_method(RunConfig().with_overrides(DIGITS), method, extra)
    events = list(iter_run(cfg))
    assert events[-1].type == "end" and events[-1].status == "finished", events[-1]
    return cfg, [e for e in events if e.type == "round"]


@pytest.mark.parametrize("method", METHODS.names())
def test_method_runs_on_digits_streams_its_signals_and_noise_costs_accuracy(method):
    cfg, noisy = run(method, HEAVY)
    assert [r.round for r in noisy] == [1, 2, 3]
    for r in noisy:
        assert len(r.weights) == len(r.uploaded)
        assert r.accuracy is not None and math.isfinite(r.loss)
    EXPECTED.get(method, lambda rounds: None)(noisy)
    if cfg.privacy.mechanism != "none":
        assert sum(noisy[-1].epsilon_spent) > 0, "a noisy mechanism must charge the ledger"

    if cfg.privacy.mechanism != "none":
        _, clean = run(method, NO_NOISE)
        assert clean[-1].accuracy > noisy[-1].accuracy + 0.1


def test_the_five_papers_methods_are_registered():
    required = {"fedavg", "pldp_a", "pldp_b", "pldp_c", "ldp_fl", "hw_dpfl", "kdp_fl"}
    assert required <= set(METHODS.names())
