"""Specification of ULDP-FED (seed 004): decaying clipping, recall, budget ledger, cap, recipes."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedcore.resolve import resolve
from fedcore.accounting.uldp_budget import UldpBudget, round_allocation
from fedcore.aggregators.uldp import UldpAggregator
from fedcore.config import LocalConfig, RunConfig
from fedcore.context import RunContext
from fedcore.engine.loop import iter_run
from fedcore.engine.setup import prepare
from fedcore.errors import ConfigError
from fedcore import recipes  # noqa: F401  (registers the six variants)
from fedcore.methods import METHODS, apply_method
from fedcore.mechanisms.uldp_gaussian import RECALL_CHARGED, UldpGaussian, decayed_clip
from fedcore.mechanisms.uldp_recall import (NoisyUpdateHistory, cosine_similarity, history_nbytes,
                                            sign_similarity)

VARIANTS = ("dp_fedavg", "ddp_fedavg", "sdp_fedavg", "cdp_fedavg", "dsdp_fedavg", "dcdp_fedavg")


def make_ctx(num_clients=4, dim=6, rounds=8, epsilon=1.0, delta=1e-5, participation=0.1, server_lr=1.0):
    return RunContext(num_clients=num_clients, client_sizes=torch.arange(1, num_clients + 1, dtype=torch.float32),
                      epsilon=torch.full((num_clients,), epsilon), delta=torch.full((num_clients,), delta),
                      rounds=rounds, participation=participation, num_params=dim,
                      layer_slices={"w": slice(0, dim)}, label_counts=np.zeros((num_clients, 2)),
                      num_classes=2, local=LocalConfig(), device=torch.device("cpu"), server_lr=server_lr)


def make_mechanism(ctx, **options):
    """The literal (local) reading unless a test asks for the central one."""
    options.setdefault("reading", "local")
    return UldpGaussian(UldpGaussian.parse_options(options), ctx)


def ids(*xs):
    return torch.tensor(xs, dtype=torch.long)


# --- clipping ----------------------------------------------------------------------------

def test_clip_threshold_decays_exponentially_with_participation_count():
    k = torch.arange(1, 6)
    assert torch.allclose(decayed_clip(2.0, 0.06, k), 2.0 * torch.exp(-0.06 * k.float()))
    assert decayed_clip(2.0, 0.06, torch.tensor([1])).item() == pytest.approx(1.88352947, rel=1e-6)


@pytest.mark.parametrize("decay", [True, False])
def test_each_upload_is_clipped_to_its_users_own_threshold(decay):
    ctx = make_ctx(rounds=10)
    mech = make_mechanism(ctx, decay=decay, recall="none", noise="fixed", noise_multiplier=1e-9)
    gen = torch.Generator().manual_seed(0)
    big = torch.full((2, 6), 10.0)
    norms = []
    for rnd, users in enumerate([ids(0, 1), ids(0, 2), ids(0, 1)], start=1):
        up = mech.privatize(big, users, rnd, gen)
        norms.append(up.values.norm(dim=1))
        k = torch.as_tensor(mech.participations[users])
        expected = 2.0 * torch.exp(-0.06 * k.float()) if decay else torch.full((2,), 2.0)
        assert torch.allclose(norms[-1], expected, atol=1e-5)
        assert up.signals["clip_threshold"] == pytest.approx(float(expected.mean()), rel=1e-6)
    # user 0 took part 3 times, user 2 once: their thresholds differ in round 2
    assert (norms[1][0] < norms[1][1]) == decay


def test_small_updates_are_not_scaled_up():
    mech = make_mechanism(make_ctx(), recall="none", noise="fixed", noise_multiplier=1e-9)
    small = torch.full((1, 6), 0.01)
    up = mech.privatize(small, ids(3), 1, torch.Generator().manual_seed(0))
    assert torch.allclose(up.values, small, atol=1e-6)


def test_noise_std_is_calibrated_to_the_rounds_allocation():
    ctx = make_ctx(num_clients=1, dim=200_000, rounds=8, epsilon=2.0, delta=1e-5)
    mech = make_mechanism(ctx, recall="none", max_participations=4)
    up = mech.privatize(torch.zeros(1, 200_000), ids(0), 1, torch.Generator().manual_seed(0))
    z = math.sqrt(2 * math.log(1.25 / 1e-5)) / (2.0 / 4)           # eps_round = eps / r
    # paper calibration: sigma = z C_k; the RDP record uses the LDP sensitivity 2 C_k
    assert up.gaussian.noise_multiplier.item() == pytest.approx(z / 2, rel=1e-5)
    assert up.noise_std.item() == pytest.approx(z * 2 * math.exp(-0.06), rel=1e-5)
    assert up.values.std().item() == pytest.approx(up.noise_std.item(), rel=0.01)
    assert up.spent.item() == pytest.approx(0.5)


def test_ldp_sensitivity_option_doubles_the_noise():
    ctx = make_ctx(num_clients=1, dim=10, rounds=8, epsilon=2.0, delta=1e-5)
    paper = make_mechanism(ctx, recall="none", max_participations=4)
    ldp = make_mechanism(ctx, recall="none", max_participations=4, sensitivity="ldp")
    a = paper.privatize(torch.zeros(1, 10), ids(0), 1, torch.Generator().manual_seed(0))
    b = ldp.privatize(torch.zeros(1, 10), ids(0), 1, torch.Generator().manual_seed(0))
    assert b.noise_std.item() == pytest.approx(2 * a.noise_std.item(), rel=1e-6)
    assert b.gaussian.noise_multiplier.item() == pytest.approx(2 * a.gaussian.noise_multiplier.item())


def test_paper_theorem3_noise_uses_remaining_rounds_near_the_end():
    ctx = make_ctx(num_clients=1, rounds=10, epsilon=10.0, delta=1e-5, participation=0.1)
    mech = make_mechanism(ctx, recall="none", noise="paper_thm3", max_participations=4)
    gen = torch.Generator().manual_seed(0)
    zs = [2 * mech.privatize(torch.zeros(1, 6), ids(0), t, gen).gaussian.noise_multiplier.item()
          for t in (2, 8, 10)]
    thm3 = lambda r_eff: 2 * 0.1 * math.sqrt(r_eff * math.log(1e5)) / 10.0  # noqa: E731
    assert zs == pytest.approx([thm3(4), thm3(2), thm3(1)], rel=1e-5)   # T-t = 8 >= r; 2 < r; last round: 1


# --- similarities and recall ------------------------------------------------------------

def test_sign_similarity_counts_matching_signs_including_zeros():
    g = torch.tensor([1.0, -1.0, 0.0, 2.0])
    x = torch.tensor([[3.0, -0.5, 0.0, -1.0],     # +,-,0 agree; last differs -> 3/4
                      [0.0, 0.0, 0.0, 0.0],       # only the zero coordinate agrees -> 1/4
                      [-1.0, 1.0, 1.0, -1.0]])    # nothing agrees
    assert sign_similarity(x, g).tolist() == [0.75, 0.25, 0.0]
    assert sign_similarity(x * 7.0, g * 0.1).tolist() == [0.75, 0.25, 0.0]


def test_cosine_similarity_is_the_normalised_inner_product():
    gen = torch.Generator().manual_seed(1)
    x, g = torch.randn(5, 30, generator=gen), torch.randn(30, generator=gen)
    expected = torch.nn.functional.cosine_similarity(x, g[None, :], dim=1)
    assert torch.allclose(cosine_similarity(x, g), expected, atol=1e-6)
    assert torch.allclose(cosine_similarity(3 * x, 0.5 * g), expected, atol=1e-6)
    assert cosine_similarity(torch.zeros(2, 30), g).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("similarity", ["sign", "cosine"])
def test_history_search_picks_each_users_most_similar_stored_update(similarity):
    g = torch.tensor([1.0, 1.0, 1.0, 1.0])
    store = NoisyUpdateHistory(num_users=3, length=3, dim=4, dtype=torch.float32)
    # user 2: three uploads, the second one points most along g
    for rnd, u in enumerate([[-1, -1, -1, -1], [1, 1, 1, -0.1], [1, 1, -1, -1]], start=1):
        store.append(ids(2), torch.tensor([u], dtype=torch.float32), rnd, torch.tensor([0.5 * rnd]))
    # user 0: one upload only
    store.append(ids(0), torch.tensor([[-1.0, 1.0, -1.0, -1.0]]), 4, torch.tensor([9.0]))
    match = store.best_match(ids(2, 0), g, similarity)
    assert match.index.tolist() == [1, 0]
    assert match.round.tolist() == [2, 4]
    assert torch.equal(match.values[0], torch.tensor([1.0, 1.0, 1.0, -0.1]))
    assert match.noise_std.tolist() == [1.0, 9.0]
    with pytest.raises(ValueError, match="at least one stored update"):
        store.best_match(ids(1), g, similarity)


def test_history_is_a_ring_that_keeps_the_newest_updates():
    store = NoisyUpdateHistory(num_users=1, length=2, dim=2, dtype=torch.float32)
    for rnd, u in enumerate([[1.0, 1.0], [-1.0, -1.0], [-1.0, 1.0]], start=1):
        store.append(ids(0), torch.tensor([u]), rnd, torch.ones(1))
    match = store.best_match(ids(0), torch.tensor([1.0, 1.0]), "cosine")
    assert match.round.tolist() == [3] and match.index.tolist() == [2]   # round 1's update was overwritten


def test_recall_sends_the_stored_update_and_spends_nothing():
    ctx = make_ctx(num_clients=3, dim=4, rounds=8, epsilon=1.0)
    mech = make_mechanism(ctx, recall="sign", tau=1.01, noise="fixed", noise_multiplier=1e-9,
                          history_dtype="float32", max_participations=4)
    gen = torch.Generator().manual_seed(0)
    first = mech.privatize(torch.tensor([[0.1, 0.2, -0.3, 0.1], [0.1, 0.1, 0.1, 0.1]]), ids(0, 1), 1, gen)
    assert first.events == [] and first.spent.tolist() == [0.25, 0.25]
    mech.after_round(torch.tensor([1.0, 1.0, 1.0, 1.0]) * 0.5, 1)
    second = mech.privatize(torch.tensor([[5.0, 5.0, 5.0, 5.0], [0.3, 0.0, 0.0, 0.0]]), ids(0, 2), 2, gen)
    # user 0 is forced to recall (s < 1.01) and reuses its round-1 upload; user 2 has no history
    assert torch.allclose(second.values[0], first.values[0])
    assert [e.client for e in second.events] == [0]
    event = second.events[0]
    assert event.kind == "recall" and event.data["index"] == 0 and event.data["from_round"] == 1
    assert second.spent.tolist() == [0.0, 0.25]
    assert mech.history.count(ids(0, 1, 2)).tolist() == [1, 1, 1]   # a recall stores nothing new
    assert mech.budget.remaining_[:3].tolist() == pytest.approx([0.75, 0.75, 0.75])
    # the accountant still charges the Gaussian the recall decision was computed from
    assert np.isfinite(second.gaussian.noise_multiplier).all()
    assert second.claims[RECALL_CHARGED].tolist() == pytest.approx([0.25, 0.25])


def test_similar_updates_are_uploaded_not_recalled():
    ctx = make_ctx(num_clients=1, dim=4)
    mech = make_mechanism(ctx, recall="cosine", tau=0.5, noise="fixed", noise_multiplier=1e-9)
    gen = torch.Generator().manual_seed(0)
    mech.privatize(torch.tensor([[1.0, 0.0, 0.0, 0.0]]), ids(0), 1, gen)
    mech.after_round(torch.tensor([1.0, 1.0, 0.0, 0.0]), 1)
    up = mech.privatize(torch.tensor([[1.0, 1.0, 0.1, 0.0]]), ids(0), 2, gen)   # cosine ~0.99 >= tau
    assert up.events == [] and up.spent.item() > 0


# --- budget ledger (eqs 14-15) -----------------------------------------------------------

def test_ledger_matches_paper_worked_example():
    """Fig. 3(b): T = 8, r = 4; the user takes part in rounds 1-4 and recalls in round 3.

    The recall saves eps/4, so in round 4 it holds 2 eps/4, spends all of it, keeps 0.
    """
    eps = 10.0
    ledger = UldpBudget(torch.tensor([eps]), max_participations=4, rounds=8)
    spent = [ledger.commit(ids(0), t, torch.tensor([t == 3])).item() for t in (1, 2, 3, 4)]
    assert spent == pytest.approx([eps / 4, eps / 4, 0.0, 2 * eps / 4])
    assert ledger.remaining_.item() == pytest.approx(0.0, abs=1e-12)
    assert ledger.spent_.item() == pytest.approx(eps)


def test_ledger_first_participation_cases():
    """Sec. 2.2 case 1: eps/r if r <= T - t + 1 (Fig. 3(a): T=8, t=4, r=4), else eps/(T - t + 1)."""
    ledger = UldpBudget(torch.tensor([1.0, 1.0]), max_participations=4, rounds=8)
    assert ledger.allocate(ids(0), 4).item() == pytest.approx(1 / 4)
    assert ledger.allocate(ids(1), 6).item() == pytest.approx(1 / 3)
    assert round_allocation(0.5, 1, 5) == 0.5


def test_ledger_refuses_a_user_past_its_cap():
    ledger = UldpBudget(torch.tensor([1.0]), max_participations=1, rounds=5)
    ledger.commit(ids(0), 1, torch.tensor([False]))
    with pytest.raises(ValueError, match="max_participations=1"):
        ledger.allocate(ids(0), 2)


def test_budget_never_exceeds_epsilon_with_random_recalls():
    rng = np.random.default_rng(7)
    for trial in range(20):
        n, rounds, r = 300, int(rng.integers(1, 60)), int(rng.integers(1, 30))
        eps = rng.uniform(0.1, 10, n)
        ledger = UldpBudget(eps, r, rounds)
        p_take, p_recall = rng.uniform(0.05, 1), rng.uniform(0, 0.9)
        last_was_upload_at_cap = np.zeros(n, dtype=bool)
        for t in range(1, rounds + 1):
            eligible = (ledger.left_ >= 1) & (rng.random(n) < p_take)
            users = np.flatnonzero(eligible)
            recalled = rng.random(len(users)) < p_recall
            spent = ledger.commit(users, t, recalled)
            assert (spent >= 0).all()
            done = (ledger.left_[users] == 0) | (t == rounds)
            last_was_upload_at_cap[users] = done & ~recalled
            assert (ledger.spent_ <= eps * (1 + 1e-12)).all(), f"trial {trial} round {t}"
        # a user whose final possible participation uploads has spent everything
        finished = last_was_upload_at_cap
        assert np.allclose(ledger.spent_[finished], eps[finished], rtol=1e-12)


# --- participation cap and dropout --------------------------------------------------------

def test_participation_cap_is_respected():
    agg = UldpAggregator(UldpAggregator.parse_options({"max_participations": 3}), make_ctx(num_clients=5, rounds=20))
    rng = np.random.default_rng(0)
    everyone = np.arange(5)
    for t in range(1, 6):
        selected, events = agg.select(everyone, t, rng)
        assert len(selected) == (5 if t <= 3 else 0)
        assert [e.client for e in events] == ([] if t <= 3 else list(range(5)))
        assert all(e.kind == "dropout" and e.data["reason"] == "cap" for e in events)
    assert agg.participations_.tolist() == [3] * 5


def test_dropout_keeps_each_user_with_probability_r_over_t():
    ctx = make_ctx(num_clients=2000, rounds=40)
    agg = UldpAggregator(UldpAggregator.parse_options({"max_participations": 10, "dropout": True}), ctx)
    selected, events = agg.select(np.arange(2000), 1, np.random.default_rng(3))
    assert len(selected) / 2000 == pytest.approx(10 / 40, abs=0.03)
    assert len(events) == 2000 - len(selected)
    assert {e.data["reason"] for e in events} == {"random"}


def test_uldp_aggregator_weights_by_sample_count():
    from fedcore.mechanisms.base import Upload

    agg = UldpAggregator(UldpAggregator.parse_options({}), make_ctx(num_clients=4, dim=2))
    upload = Upload(values=torch.tensor([[1.0, 0.0], [0.0, 1.0]]), clients=ids(0, 2))   # n = 1 and 3
    result = agg.aggregate(upload, 1)
    assert result.weights.tolist() == pytest.approx([0.25, 0.75])
    assert result.delta.tolist() == pytest.approx([0.25, 0.75])


# --- memory of the history store -----------------------------------------------------------

def test_history_memory_matches_users_times_length_times_dim():
    assert history_nbytes(1000, 50, 21840) == 4_368_000_000                  # float32, paper MNIST CNN
    assert history_nbytes(1000, 50, 21840, torch.bfloat16) == 2_184_000_000
    store = NoisyUpdateHistory(num_users=1000, length=50, dim=21840, dtype=torch.bfloat16)
    assert store.nbytes == 0                                                 # nothing before an upload
    store.append(torch.arange(3), torch.randn(3, 21840), 1, torch.ones(3))
    assert store.nbytes == history_nbytes(store.capacity, 50, 21840, torch.bfloat16)
    assert store.capacity == 3                                               # only users that uploaded


def test_no_store_without_recall_and_store_bounded_by_cap():
    ctx = make_ctx(num_clients=10, dim=8, rounds=100)
    assert make_mechanism(ctx, recall="none").history is None
    assert make_mechanism(ctx, recall="sign", max_participations=7).history.length == 7
    assert make_mechanism(ctx, recall="sign", max_participations=7, history=3).history.length == 3


# --- configuration and end to end -----------------------------------------------------------

def test_mechanism_requires_the_uldp_aggregator_with_the_same_cap():
    cfg = apply_method(RunConfig(), "dsdp_fedavg")
    with pytest.raises(ConfigError, match="uldp"):
        resolve(cfg.with_overrides({"privacy.aggregator": "fedavg", "privacy.aggregator_options": {}}))
    with pytest.raises(ConfigError, match="max_participations"):
        resolve(cfg.with_overrides({"privacy.aggregator_options.max_participations": 10}))
    with pytest.raises(ConfigError, match="tau"):
        resolve(cfg.with_overrides({"privacy.mechanism_options.tau": 5}))


def test_all_six_variants_are_registered_with_the_paper_settings():
    table = {  # name: (decay, recall, tau); tau None = automatic
        "dp_fedavg": (False, "none", None), "ddp_fedavg": (True, "none", None),
        "sdp_fedavg": (False, "sign", None), "cdp_fedavg": (False, "cosine", None),
        "dsdp_fedavg": (True, "sign", None), "dcdp_fedavg": (True, "cosine", None)}
    assert set(table) == set(VARIANTS) and set(VARIANTS) <= set(METHODS.names())
    for name, (decay, recall, tau) in table.items():
        cfg = apply_method(RunConfig(num_clients=20), name)
        o = cfg.privacy.mechanism_options
        assert cfg.privacy.mechanism == "uldp_gaussian" and cfg.privacy.aggregator == "uldp"
        assert cfg.sampling == "poisson" and cfg.participation == 0.1
        assert (o["clip0"], o["beta"], o["decay"], o["recall"], o.get("tau")) == (2.0, 0.06, decay, recall, tau)
        assert o["reading"] == "central"


def test_dsdp_fedavg_recalls_and_its_ledger_matches_the_events():
    cfg = apply_method(RunConfig(), "dsdp_fedavg", {
        "dataset": "digits", "model": "logreg", "num_clients": 20, "rounds": 5, "participation": 0.5,
        "privacy.epsilon": [10.0], "privacy.server_lr": 0.5,
        "privacy.mechanism_options.tau": 1.0,            # every user with a stored update recalls
        "privacy.mechanism_options.max_participations": 4,
        "privacy.aggregator_options.max_participations": 4})
    setup = prepare(cfg)
    rounds = [e for e in iter_run(cfg, setup=setup) if e.type == "round"]
    recalls = [ev for r in rounds for ev in r.events if ev.kind == "recall"]
    assert len(recalls) > 0
    assert all(0 <= ev.data["index"] and ev.data["from_round"] < ev.data["round"] for ev in recalls)
    spent_events = torch.tensor(rounds[-1].epsilon_spent, dtype=torch.float64)
    assert np.allclose(spent_events.numpy(), setup.mechanism.budget.spent_, atol=1e-5)
    assert (spent_events <= 10.0 + 1e-5).all()
    counts = setup.aggregator.participations_
    assert counts.max() <= 4 and np.array_equal(counts, setup.mechanism.participations)
    assert all("clip_threshold" in r.signals for r in rounds if r.uploaded)
    assert "rdp" in rounds[-1].epsilon_accountant and RECALL_CHARGED in rounds[-1].epsilon_accountant
    assert rounds[-1].threat_model == "central" and rounds[-1].epsilon_headline_run is not None


# --- the central reading ---------------------------------------------------------------------

def test_central_reading_splits_the_sums_noise_over_the_rounds_users():
    ctx = make_ctx(num_clients=10, dim=100_000, rounds=20, epsilon=10.0, participation=0.1)
    mech = make_mechanism(ctx, reading="central", recall="none", decay=False, noise="fixed", noise_multiplier=2.0)
    assert mech.threat_model == "central"
    users = ids(0, 3, 7, 8)
    up = mech.privatize(torch.zeros(4, 100_000), users, 1, torch.Generator().manual_seed(0))
    # each user: N(0, z^2 C^2 / |U|); the sum of the four: z C
    assert up.values.std(1).tolist() == pytest.approx([2.0 * 2.0 / 2] * 4, rel=0.01)
    assert up.values.sum(0).std().item() == pytest.approx(4.0, rel=0.01)
    # the ledger charges every user who could have been sampled, with amplification q
    g = up.gaussian
    assert g.clients.tolist() == list(range(10)) and g.sample_rate == 0.1
    assert g.noise_multiplier.tolist() == pytest.approx([2.0] * 10)


def test_central_accountant_noise_gives_the_user_level_budget():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    ctx = make_ctx(num_clients=5, rounds=30, epsilon=4.0, participation=0.2)
    mech = make_mechanism(ctx, reading="central", recall="none", decay=False)
    z = float(mech.accountant_z[0])
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)   # the ledger's accountant
    acc.compose(dp_accounting.PoissonSampledDpEvent(0.2, dp_accounting.GaussianDpEvent(z)), 30)
    assert 0.99 * 4.0 <= acc.get_epsilon(1e-5) <= 4.0
    local = make_mechanism(ctx, recall="none", decay=False)
    assert local.threat_model == "local" and local.accountant_z is None


def test_central_reading_needs_poisson_sampling():
    cfg = apply_method(RunConfig(num_clients=20), "ddp_fedavg")
    with pytest.raises(ConfigError, match="poisson"):
        resolve(cfg.with_overrides({"sampling": "fixed"}))
    resolve(cfg.with_overrides({"sampling": "fixed", "privacy.mechanism_options.reading": "local"}))


def test_automatic_tau_is_two_sd_below_chance_and_fires_on_opposed_updates():
    ctx = make_ctx(num_clients=2, dim=10_000, rounds=5)
    mech = make_mechanism(ctx, reading="central", recall="sign", noise="fixed", noise_multiplier=1e-6)
    assert mech.threshold == pytest.approx(0.5 - 0.01)
    gen = torch.Generator().manual_seed(0)
    direction = torch.randn(1, 10_000, generator=gen) * 1e-3
    mech.privatize(direction.repeat(2, 1), ids(0, 1), 1, gen)
    mech.after_round(direction[0], 1)
    up = mech.privatize(torch.cat([direction, -direction]), ids(0, 1), 2, gen)
    recalls = [e.client for e in up.events if e.kind == "recall"]
    assert recalls == [1]                                      # only the opposed update recalls


def test_the_recall_teaching_preset_fires_recalls_for_the_reason_its_chart_shows():
    # uldp_recall_digits: recall when a user's noisy update points away from the last global
    # update (cosine < tau = 0). Each round reports tau and the lowest similarity, so the page's
    # recall-check chart shows why: a round has recalls exactly when its lowest s is below tau.
    from fedcore.engine import iter_run
    from fedcore.events import RoundEvent, summarize
    from fedcore.resolve import preset_config
    from fedcore.tables import rounds_table
    from pages.components.charts import recall_check

    cfg = preset_config("uldp_recall_digits").replace(rounds=6)
    assert cfg.method == "dcdp_fedavg" and cfg.privacy.mechanism_options["tau"] == 0.0
    rounds = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)]
    recalls = 0
    for e in rounds[1:]:  # round 1 has no previous global update to compare with
        assert e.signals["tau"] == 0.0 and e.signals["similarity_min"] <= e.signals["similarity"]
        fired = [m for m in e.events if m.kind == "recall"]
        assert all(m.data["similarity"] < 0.0 for m in fired)
        assert bool(fired) == (e.signals["similarity_min"] < 0.0)  # q = 1: every user has a stored upload
        recalls += len(fired)
    assert recalls > 0
    table = rounds_table(summarize(rounds))
    fig = recall_check(table, cfg.rounds, "t")
    assert [t.name for t in fig.data][:3] == ["mean similarity s", "lowest s of the round", "τ: recall below this"]
