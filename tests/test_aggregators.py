"""Server rules of PLDP-FL (B, C), HW-DPFL (Hellinger) and KDP-FL (Kalman), checked by hand."""
import math

import numpy as np
import pytest
import torch

from fedcore.resolve import resolve
from fedcore.aggregators import AGGREGATORS
from fedcore.aggregators.hellinger import hellinger_distances, hellinger_weights
from fedcore.aggregators.kalman import KalmanAggregator
from fedcore.aggregators.probabilistic import ProbabilisticAggregator, threshold_selection
from fedcore.aggregators.weighted import WeightedAggregator, inverse_noise_weights
from fedcore.config import LocalConfig, RunConfig
from fedcore.context import RunContext
from fedcore.errors import ConfigError
from fedcore.mechanisms.base import Upload


def make_ctx(n=3, d=2, label_counts=None, classes=4):
    counts = np.full((n, classes), 10) if label_counts is None else np.asarray(label_counts)
    return RunContext(num_clients=n, client_sizes=torch.full((n,), 40.0), epsilon=torch.ones(n),
                      delta=torch.full((n,), 1e-5), rounds=5, participation=1.0, num_params=d,
                      layer_slices={"w": slice(0, d)}, label_counts=counts,
                      num_classes=counts.shape[1], local=LocalConfig(), device=torch.device("cpu"))


def build(name, ctx, **options):
    cls = AGGREGATORS.get(name)
    return cls(cls.parse_options(options), ctx)


def upload(values, clients=None, noise_std=None, is_sign=False):
    values = torch.as_tensor(values, dtype=torch.float32)
    if values.dim() == 1:
        values = values[:, None]
    clients = torch.arange(len(values)) if clients is None else torch.as_tensor(clients)
    std = None if noise_std is None else torch.as_tensor(noise_std, dtype=torch.float32)
    return Upload(values=values, clients=clients, noise_std=std, is_sign=is_sign)


class FixedOmega:
    """Stands in for the engine's numpy Generator: every ``random()`` draw is ``omega``."""

    def __init__(self, omega):
        self.omega = omega

    def random(self):
        return self.omega


class FixedNoise:
    """A mechanism that announces its clients' sigma_i before training."""

    def __init__(self, sigma):
        self.sigma = torch.tensor(sigma)

    def noise_scale(self):
        return self.sigma


# --- rule B ---------------------------------------------------------------------------

def test_rule_b_weights_are_normalised_inverse_noise():
    agg = build("weighted", make_ctx())
    out = agg.aggregate(upload([[1.0, 0.0], [0.0, 1.0], [7.0, 7.0]], noise_std=[1.0, 2.0, 4.0]), 1)
    # rho = (1, 1/2, 1/4), sum 7/4 -> alpha = (4/7, 2/7, 1/7)
    assert out.weights.tolist() == pytest.approx([4 / 7, 2 / 7, 1 / 7])
    assert out.delta.tolist() == pytest.approx([4 / 7 + 1.0, 2 / 7 + 1.0])
    assert out.events == []


def test_rule_b_without_noise_scale_is_uniform_and_says_so():
    out = build("weighted", make_ctx()).aggregate(upload([3.0, 0.0, 0.0]), 1)
    assert out.weights.tolist() == pytest.approx([1 / 3] * 3)
    assert [e.kind for e in out.events] == ["uniform_fallback"]


def test_rule_b_ivw_weights_by_inverse_variance():
    agg = build("weighted", make_ctx(), weights="inverse_variance")
    out = agg.aggregate(upload([[1.0, 0.0], [0.0, 1.0], [7.0, 7.0]], noise_std=[1.0, 2.0, 4.0]), 1)
    # 1/sigma^2 = (1, 1/4, 1/16), sum 21/16 -> (16/21, 4/21, 1/21)
    assert out.weights.tolist() == pytest.approx([16 / 21, 4 / 21, 1 / 21])


def test_noise_free_clients_share_the_whole_weight():
    assert inverse_noise_weights(torch.tensor([0.0, 2.0, 0.0])).tolist() == [0.5, 0.0, 0.5]


# --- rule C ---------------------------------------------------------------------------

def rule_c(n=3, sigma=(1.0, 2.0, 4.0), **options):
    agg = build("probabilistic", make_ctx(n), **options)
    agg.attach_mechanism(FixedNoise(list(sigma)))
    return agg


def test_rule_c_selects_every_client_whose_probability_exceeds_omega():
    agg = rule_c()
    assert agg.probabilities_ == pytest.approx([4 / 7, 2 / 7, 1 / 7])
    chosen, events = agg.select(np.arange(3), 1, FixedOmega(0.2))
    assert chosen.tolist() == [0, 1]                     # 4/7 > 0.2, 2/7 > 0.2, 1/7 < 0.2
    selection = [e for e in events if e.kind == "selection"][0]
    assert selection.data["omega"] == 0.2 and selection.data["selected"] == [0, 1]
    assert agg.select(np.arange(3), 2, FixedOmega(0.5))[0].tolist() == [0]


def test_rule_c_selects_only_among_the_round_candidates():
    assert threshold_selection(np.array([0.5, 0.3, 0.2]), np.array([1, 2]), 0.1).tolist() == [1, 2]
    assert rule_c().select(np.array([1, 2]), 1, FixedOmega(0.5))[0].tolist() == []


def test_rule_c_selecting_nobody_keeps_the_model_in_the_engine():
    cfg = RunConfig(rounds=3, num_clients=10, privacy={"aggregator": "probabilistic"})
    from fedcore.engine.loop import iter_run
    rounds = [e for e in iter_run(cfg) if e.type == "round"]
    kinds = [[ev.kind for ev in r.events] for r in rounds]
    assert "selection" in kinds[0] and "uniform_fallback" in kinds[0]   # round 1 calibrates: all train
    empty = [r for r in rounds[1:] if not r.selected]
    assert empty, "with P_i = 1/10 an omega above 0.1 should occur within two rounds"
    for r in empty:
        assert "no_selection" in [ev.kind for ev in r.events] and r.uploaded == []
        assert r.signals["empty_round"] == 1.0
    rate = sum(1 for r in rounds[1:] if not r.selected) / 2
    assert rounds[-1].signals["empty_round_rate"] == pytest.approx(rate)


def test_rule_c_max_always_selects_the_least_noisy_client():
    agg = rule_c(normalize="max")
    assert agg.probabilities_ == pytest.approx([1.0, 0.5, 0.25])
    for omega in (0.0, 0.3, 0.6, 0.999):
        chosen, _ = agg.select(np.arange(3), 1, FixedOmega(omega))
        assert 0 in chosen.tolist()
    assert agg.round_signals() == {"empty_round": 0.0, "empty_round_rate": 0.0}


def test_rule_c_sample_m_draws_m_distinct_clients_in_proportion_to_p():
    agg = rule_c(mode="sample_m", m=1)
    rng = np.random.default_rng(0)
    counts = np.zeros(3)
    for t in range(2000):
        chosen, _ = agg.select(np.arange(3), t, rng)
        counts[chosen] += 1
    assert counts / counts.sum() == pytest.approx([4 / 7, 2 / 7, 1 / 7], abs=0.03)
    two, _ = rule_c(mode="sample_m", m=2).select(np.arange(3), 1, rng)
    assert len(set(two.tolist())) == 2


def test_rule_c_learns_p_from_the_first_uploads_when_no_mechanism_is_attached():
    agg = build("probabilistic", make_ctx())
    chosen, events = agg.select(np.arange(3), 1, FixedOmega(0.9))
    assert chosen.tolist() == [0, 1, 2] and events[0].data["calibrating"] is True
    out = agg.aggregate(upload([1.0, 2.0, 3.0], noise_std=[1.0, 2.0, 4.0]), 1)
    assert out.delta.tolist() == pytest.approx([2.0])                 # rule A while calibrating
    assert [e.kind for e in out.events] == ["selection_probabilities"]
    assert agg.probabilities_ == pytest.approx([4 / 7, 2 / 7, 1 / 7])
    assert agg.select(np.arange(3), 2, FixedOmega(0.2))[0].tolist() == [0, 1]


def test_rule_c_options_are_validated():
    with pytest.raises(ConfigError, match="mode"):
        ProbabilisticAggregator.parse_options({"mode": "roulette"})
    with pytest.raises(ConfigError, match=r"\.m"):
        ProbabilisticAggregator.parse_options({"mode": "sample_m", "m": 0})


# --- HW-DPFL --------------------------------------------------------------------------

def test_hellinger_distance_of_a_balanced_client_is_zero():
    assert hellinger_distances(np.array([[7, 7, 7, 7]])) == pytest.approx([0.0])


@pytest.mark.parametrize("classes", [2, 4, 10])
def test_hellinger_distance_of_a_one_class_client(classes):
    counts = np.zeros((1, classes))
    counts[0, 0] = 13
    # (1/sqrt2) * sqrt((1 - 1/sqrtC)^2 + (C-1)/C) = sqrt(1 - 1/sqrtC)
    assert hellinger_distances(counts) == pytest.approx([math.sqrt(1 - 1 / math.sqrt(classes))])


def test_hellinger_distance_of_a_two_class_client():
    # g = (1/2, 1/2, 0, 0), S = 1/4: 0.5 * (2 (sqrt(.5) - .5)^2 + 2 * .25) = 1 - 1/sqrt2
    assert hellinger_distances(np.array([[5, 5, 0, 0]])) == pytest.approx([math.sqrt(1 - 1 / math.sqrt(2))])


def test_hellinger_weights_in_both_readings():
    h = np.array([0.0, 0.5, 0.25])
    assert hellinger_weights(h, "similarity") == pytest.approx([1 / 2.25, 0.5 / 2.25, 0.75 / 2.25])
    assert hellinger_weights(h, "literal") == pytest.approx([0.0, 0.5 / 0.75, 0.25 / 0.75])
    assert hellinger_weights(np.zeros(2), "literal") == pytest.approx([0.5, 0.5])


def test_hellinger_aggregator_favours_balanced_clients_and_reports_its_weights():
    ctx = make_ctx(label_counts=[[5, 5, 5, 5], [20, 0, 0, 0], [5, 5, 5, 5]])
    h1 = math.sqrt(1 - 0.5)
    out = build("hellinger", ctx).aggregate(upload([0.0, 1.0, 0.0], clients=[0, 1, 2]), 1)
    expected = np.array([1.0, 1 - h1, 1.0]) / (3 - h1)
    assert out.weights.numpy() == pytest.approx(expected, rel=1e-6)
    assert out.delta.item() == pytest.approx(expected[1], rel=1e-6)
    event = [e for e in out.events if e.kind == "hellinger_weights"][0]
    assert event.data["weights"] == pytest.approx(expected.tolist())
    assert out.signals["hellinger_distance_mean"] == pytest.approx(h1 / 3)
    literal = build("hellinger", ctx, reading="literal").aggregate(upload([0.0, 1.0, 0.0]), 1)
    assert literal.weights.tolist() == pytest.approx([0.0, 1.0, 0.0])


def test_hellinger_weights_leak_each_clients_label_histogram():
    """What the rule's note warns of: two clients uploading the same values get weights that
    depend on their private label counts alone, and the published weights give back how far a
    client's histogram is from uniform."""
    counts = [[10, 10, 10, 10], [40, 0, 0, 0]]
    out = build("hellinger", make_ctx(2, d=1, label_counts=counts)).aggregate(upload([0.5, 0.5]), 1)
    published = [e for e in out.events if e.kind == "hellinger_weights"][0].data["weights"]
    assert published[0] > published[1]
    assert 1 - published[1] / published[0] == pytest.approx(hellinger_distances(np.array(counts))[1])


# --- KDP-FL ---------------------------------------------------------------------------

def test_kalman_per_client_two_rounds_by_hand():
    agg = build("kalman", make_ctx(2, d=1))                      # Q = 10 R, x0 = 0, P0 = 0
    # round 1: R = 1, Q = 10, P- = 10, K = 10/11 for both; g~ = (10/11, 30/11); mean 20/11
    r1 = agg.aggregate(upload([1.0, 3.0], noise_std=[1.0, 1.0]), 1)
    assert r1.delta.item() == pytest.approx(20 / 11)
    assert r1.signals["kalman_gain"] == pytest.approx(10 / 11)
    assert r1.weights.tolist() == pytest.approx([5 / 11, 5 / 11])
    assert agg.variance_ == pytest.approx(10 / 11)               # (1 - K) P-
    # round 2: P- = 10/11 + 10 = 120/11, K = 120/131; x = 20/11 + K (2 - 20/11) = 2860/1441
    r2 = agg.aggregate(upload([2.0, 2.0], noise_std=[1.0, 1.0]), 2)
    assert r2.signals["kalman_gain"] == pytest.approx(120 / 131)
    assert r2.delta.item() == pytest.approx(2860 / 1441)


def test_kalman_sequential_two_rounds_by_hand():
    agg = build("kalman", make_ctx(2, d=1), fusion="sequential")
    # round 1: P- = 10. z=1: K=10/11, x=10/11, P=10/11. z=3: K=(10/11)/(21/11)=10/21,
    #          x = 10/11 + (10/21)(3 - 10/11) = 440/231, P = (11/21)(10/11) = 10/21
    r1 = agg.aggregate(upload([1.0, 3.0], noise_std=[1.0, 1.0]), 1)
    assert r1.delta.item() == pytest.approx(440 / 231)
    assert r1.signals["kalman_gain"] == pytest.approx((10 / 11 + 10 / 21) / 2)
    # round 2: P- = 10/21 + 10 = 220/21. z=2: K=220/241, x = 440/231 + K (2 - 440/231),
    #          P = 220/241; z=2: K = 220/461, x' = x + K (2 - x)
    x = 440 / 231 + 220 / 241 * (2 - 440 / 231)
    x = x + 220 / 461 * (2 - x)
    r2 = agg.aggregate(upload([2.0, 2.0], noise_std=[1.0, 1.0]), 2)
    assert r2.delta.item() == pytest.approx(x)


def test_kalman_filters_each_coordinate_independently():
    z = torch.tensor([[1.0, -2.0, 0.5], [3.0, 4.0, 0.5]])
    vec = build("kalman", make_ctx(2, d=3)).aggregate(upload(z, noise_std=[1.0, 2.0]), 1).delta
    for j in range(3):
        one = build("kalman", make_ctx(2, d=1)).aggregate(upload(z[:, j], noise_std=[1.0, 2.0]), 1).delta
        assert vec[j].item() == pytest.approx(one.item())


def test_kalman_explicit_process_variance_and_noise_free_pass_through():
    agg = build("kalman", make_ctx(1, d=1), process_variance=1.0)
    assert agg.aggregate(upload([4.0], noise_std=[1.0]), 1).delta.item() == pytest.approx(2.0)  # K = 1/2
    free = build("kalman", make_ctx(2, d=1)).aggregate(upload([1.0, 3.0]), 1)
    assert free.delta.item() == pytest.approx(2.0) and free.signals["kalman_gain"] == 1.0


def test_kalman_shrinks_noise_compared_with_the_plain_mean():
    torch.manual_seed(0)
    agg = build("kalman", make_ctx(5, d=2000), q_over_r=0.1)     # a slowly moving true update
    truth = torch.ones(2000)
    err_kalman, err_mean = [], []
    for t in range(1, 11):
        z = truth + 3.0 * torch.randn(5, 2000)
        err_kalman.append((agg.aggregate(upload(z, noise_std=[3.0] * 5), t).delta - truth).pow(2).mean())
        err_mean.append((z.mean(0) - truth).pow(2).mean())
    assert sum(err_kalman[5:]) < 0.5 * sum(err_mean[5:])


# --- sign uploads ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mean", "weighted", "probabilistic", "hellinger"])
def test_aggregators_combine_sign_uploads_into_a_weighted_vote(name):
    ctx = make_ctx(3, d=3)
    agg = build(name, ctx)
    if name == "probabilistic":
        agg.attach_mechanism(FixedNoise([1.0, 1.0, 1.0]))
    signs = torch.tensor([[1.0, -1.0, 1.0], [1.0, 1.0, -1.0], [1.0, -1.0, -1.0]])
    out = agg.aggregate(Upload(values=signs, clients=torch.arange(3), is_sign=True,
                               noise_std=torch.ones(3)), 1)
    assert torch.sign(out.delta).tolist() == [1.0, -1.0, -1.0]
    assert AGGREGATORS.get(name).accepts_sign


def test_weighted_vote_follows_the_less_noisy_client():
    signs = torch.tensor([[1.0], [-1.0], [-1.0]])
    out = build("weighted", make_ctx(3, d=1)).aggregate(
        Upload(values=signs, clients=torch.arange(3), is_sign=True, noise_std=torch.tensor([0.1, 1.0, 1.0])), 1)
    assert out.delta.item() > 0                                   # 10/12 against 2/12


def test_ldp_sign_runs_end_to_end_with_rule_b():
    from fedcore.engine.loop import iter_run
    cfg = RunConfig(rounds=2, num_clients=4, privacy={"mechanism": "ldp_sign", "aggregator": "weighted",
                                                      "epsilon": (1.0, 1.0, 10.0, 10.0)})
    rounds = [e for e in iter_run(cfg) if e.type == "round"]
    assert rounds[-1].weights[2] > rounds[-1].weights[0]


# --- config-time compatibility --------------------------------------------------------

def test_kalman_rejects_sign_uploads_and_says_why():
    with pytest.raises(ConfigError) as info:
        resolve(RunConfig(privacy={"mechanism": "ldp_sign", "aggregator": "kalman"}))
    msg = str(info.value)
    assert msg.startswith("privacy.aggregator") and "Kalman" in msg and "Gaussian noise" in msg
    assert "weighted" in msg and "probabilistic" in msg and "kalman," not in msg


@pytest.mark.parametrize("name", ["weighted", "probabilistic", "hellinger", "kalman"])
def test_client_weighted_rules_are_impossible_under_shuffling(name):
    with pytest.raises(ConfigError, match="shuffles"):
        resolve(RunConfig(privacy={"mechanism": "two_point", "aggregator": name}))


def test_kalman_options_are_validated():
    with pytest.raises(ConfigError, match="q_over_r"):
        KalmanAggregator.parse_options({"q_over_r": 0})
    with pytest.raises(ConfigError, match="fusion"):
        KalmanAggregator.parse_options({"fusion": "smoother"})
    assert WeightedAggregator.needs_linkable and KalmanAggregator.needs_linkable
