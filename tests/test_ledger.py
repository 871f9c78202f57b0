"""The per-client ledger against dp-accounting itself: the PLD accountant composed over every step
(RDP for grid records), each client at its own delta, central records that cover clients who did not
upload."""
import math

import dp_accounting
import numpy as np
import pytest
import torch
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

from fedcore.accounting import GaussianRecord, Ledger
from fedcore.accounting.rdp import ORDERS, rdp_epsilons


def reference_epsilon(z: float, q: float, count: int, delta: float, rounds: int = 1) -> float:
    """dp-accounting's own PLD accountant (pessimistic, the ledger's interval): ``rounds`` compositions of
    ``count / rounds`` Poisson(q)-subsampled Gaussian steps, epsilon at ``delta``."""
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    event = dp_accounting.GaussianDpEvent(z)
    if q < 1:
        event = dp_accounting.PoissonSampledDpEvent(q, event)
    for _ in range(rounds):
        acc.compose(event, count // rounds)
    return acc.get_epsilon(delta)


def rdp_reference(z: float, q: float, count: int, delta: float) -> float:
    """dp-accounting's RDP accountant: what the headline was before the exact accountant."""
    acc = rdp_lib.RdpAccountant(orders=list(ORDERS))
    event = dp_accounting.GaussianDpEvent(z)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, event) if q < 1 else event, count)
    return acc.get_epsilon(delta)


def test_each_client_composes_its_own_steps_at_its_own_delta():
    deltas = np.array([1e-3, 1e-7, 1e-5])
    ledger = Ledger(3, deltas)
    z = torch.tensor([1.1, 0.8, 1.1])
    steps = torch.tensor([5.0, 12.0, 5.0])
    rounds = 4
    for _ in range(rounds):
        ledger.record(torch.tensor([0, 1, 2]), torch.zeros(3), GaussianRecord(z, sample_rate=0.05, steps=steps))
    ledger.record(torch.tensor([2]), torch.zeros(1), GaussianRecord(torch.tensor([1.1]), 0.05, steps=5))
    got = ledger.headline()
    want = [reference_epsilon(1.1, 0.05, 20, 1e-3, 4), reference_epsilon(0.8, 0.05, 48, 1e-7, 4),
            reference_epsilon(1.1, 0.05, 25, 1e-5, 5)]
    assert got.tolist() == pytest.approx(want, rel=1e-9)
    assert ledger.accountant() == "pld" and ledger.views()["pld"] == pytest.approx(want, rel=1e-9)
    # tighter than RDP for the same releases (7-35 % on the peers' vectors), never looser
    assert all(w < 0.95 * rdp_reference(1.1, 0.05, 25, 1e-5) for w in want[2:])
    # the factors the test is about make a visible difference
    assert want[0] != pytest.approx(reference_epsilon(1.1, 0.05, 4, 1e-3), rel=0.05)        # steps dropped
    assert want[1] != pytest.approx(reference_epsilon(0.8, 0.05, 48, 1e-3), rel=0.05)       # client 0's delta
    assert ledger.steps.tolist() == [20, 48, 25]


def test_vectorised_conversion_is_dp_accounting_compute_epsilon():
    rng = np.random.default_rng(0)
    curves = np.stack([k * np.array([float(x) for x in rdp_lib._compute_rdp_poisson_subsampled_gaussian(
        q, z, ORDERS)]) for k, q, z in [(10, 0.1, 1.2), (300, 0.01, 0.9), (1, 1.0, 3.0)]])
    deltas = rng.choice([1e-5, 1e-3, 1e-8], size=3)
    want = [rdp_lib.compute_epsilon(ORDERS, c, d)[0] for c, d in zip(curves, deltas)]
    assert rdp_epsilons(curves, deltas).tolist() == pytest.approx(want, rel=1e-12)


def test_a_central_record_charges_every_covered_client_not_only_uploaders():
    ledger = Ledger(4, np.full(4, 1e-5), threat_model="central")
    for _ in range(10):   # client 1 uploads; the record covers clients 0-2 (3 was capped)
        ledger.record(torch.tensor([1]), torch.zeros(1),
                      GaussianRecord(torch.full((3,), 1.5), sample_rate=0.1, clients=torch.tensor([0, 1, 2])))
    eps = ledger.headline()
    assert eps[:3].tolist() == pytest.approx([reference_epsilon(1.5, 0.1, 10, 1e-5, 10)] * 3, rel=1e-9)
    assert eps[3] == 0.0


def test_the_grid_rounds_multipliers_down_so_epsilon_only_grows():
    """A grid record is composed by RDP (every user its own noise history) and says so; its multipliers
    are rounded down, so its ε is at least RDP's of the exact multipliers, and above the PLD's."""
    exact, grid = Ledger(1, np.array([1e-5])), Ledger(1, np.array([1e-5]))
    for z in (1.234, 1.2345, 1.236):
        exact.record(torch.tensor([0]), None, GaussianRecord(torch.tensor([z]), 0.1))
        grid.record(torch.tensor([0]), None, GaussianRecord(torch.tensor([z]), 0.1, grid=True))
    rdp = rdp_epsilons(exact.rdp if exact.rdp.any() else sum(
        np.asarray(rdp_lib._compute_rdp_poisson_subsampled_gaussian(0.1, z, ORDERS)) for z in (1.234, 1.2345, 1.236)
    )[None, :], 1e-5)[0]
    assert exact.headline()[0] < rdp <= grid.headline()[0] <= 1.05 * rdp
    assert (exact.accountant(), grid.accountant()) == ("pld", "rdp")
    assert grid.pld_run() < grid.headline_run()          # its PLD is still given beside


def test_nothing_noised_is_infinite_never_zero():
    ledger = Ledger(3, np.full(3, 1e-5), threat_model="none")
    assert np.isinf(ledger.headline()).all()           # even before anyone uploaded
    local = Ledger(3, np.full(3, 1e-5))
    local.record(torch.tensor([0, 1]), torch.zeros(2))   # uploads without any guarantee
    assert local.headline().tolist() == [math.inf, math.inf, 0.0]
    assert math.isinf(local.headline_run())


def test_pure_epsilon_composes_by_pld_and_the_smaller_view_wins():
    from fedcore.accounting.pure import compose_pure

    ledger = Ledger(2, np.full(2, 1e-5))
    for _ in range(3):
        ledger.record(torch.tensor([0, 1]), torch.ones(2), pure=torch.tensor([0.5, 100.0]),
                      gaussian=GaussianRecord(torch.tensor([0.1, 20.0])))
    rdp = [reference_epsilon(0.1, 1.0, 3, 1e-5), reference_epsilon(20.0, 1.0, 3, 1e-5)]   # now the PLD's
    pure = [compose_pure({0.5: 3}, 1e-5), compose_pure({100.0: 3}, 1e-5)]
    assert pure[0] <= 1.5 and pure[1] <= 300.0                      # never above the sum
    assert ledger.pure.tolist() == [1.5, 300.0]                     # the sum is still kept
    assert ledger.headline().tolist() == pytest.approx([min(pure[0], rdp[0]), min(pure[1], rdp[1])], rel=1e-4)
    assert ledger.headline()[0] == pure[0] and ledger.headline()[1] < 300


def test_pure_count_splits_a_round_into_equal_releases():
    """``pure_count``: a round of d per-weight releases is d releases of pure / d each."""
    from fedcore.accounting.pure import compose_pure

    ledger = Ledger(1, np.full(1, 1e-5))
    for _ in range(4):
        ledger.record(torch.tensor([0]), None, pure=torch.tensor([50.0]), pure_count=torch.tensor([100.0]))
    assert ledger.pure_releases[0] == {0.5: 400}
    assert ledger.headline()[0] == pytest.approx(compose_pure({0.5: 400}, 1e-5))
    assert ledger.headline()[0] < 0.5 * 200


def test_the_last_round_holds_only_the_latest_rounds_releases_by_client():
    """``last_round`` (the one-round games' input) is each touched client's latest Gaussian steps by (z, q)
    and pure releases by ε, built when read; the next record replaces it."""
    ledger = Ledger(4, np.full(4, 1e-5))
    ledger.record(torch.tensor([0, 1, 2]), None, GaussianRecord(torch.tensor([1.5, 1.5, 2.0]), 0.1, steps=3))
    assert ledger.last_round == {0: ({(1.5, 0.1): 3.0}, {}), 1: ({(1.5, 0.1): 3.0}, {}), 2: ({(2.0, 0.1): 3.0}, {})}
    ledger.record(torch.tensor([1, 3]), None, GaussianRecord(torch.tensor([1.25]), 1.0, steps=2, clients=torch.tensor([1])),
                  pure=torch.tensor([0.0, 6.0]), pure_count=torch.tensor([1.0, 3.0]))
    assert ledger.last_round == {1: ({(1.25, 1.0): 2.0}, {}), 3: ({}, {2.0: 3.0})}
    assert ledger.tally[1] == {(1.5, 0.1): 3.0, (1.25, 1.0): 2.0} and ledger.pure_releases[3] == {2.0: 3.0}


def test_a_release_outside_every_bound_makes_the_client_infinite():
    ledger = Ledger(2, np.full(2, 1e-5))
    ledger.record(torch.tensor([0, 1]), torch.ones(2), GaussianRecord(torch.tensor([2.0, 2.0])))
    ledger.record(torch.tensor([1]), torch.ones(1))      # e.g. weight decay broke the bound
    eps = ledger.headline()
    assert math.isfinite(eps[0]) and math.isinf(eps[1])
    assert ledger.views()["pld"][1] is None


def test_a_noise_free_gaussian_step_is_infinite_not_free():
    """z = 0 releases the exact clipped value: no RDP bound (ε = ∞), never "no release" (ε = 0)."""
    ledger = Ledger(2, np.full(2, 1e-5), threat_model="local")
    ledger.record(torch.tensor([0, 1]), None, GaussianRecord(torch.tensor([0.0, 1.0]), sample_rate=0.1, steps=3))
    eps = ledger.headline()
    assert math.isinf(eps[0]) and math.isfinite(eps[1]) and eps[1] > 0
    assert math.isinf(ledger.headline_run())
    assert ledger.views()["pld"][0] is None


def test_the_headline_is_the_pld_of_the_same_gaussian_steps_and_well_below_rdp():
    """The headline is the PLD accountant's ε (issue 51; issue 29: KDP-FL at column 100 spent 99.4 under
    RDP, 66.8 under PLD), for one call composing every step as for twenty rounds of five."""
    from dp_accounting.pld import pld_privacy_accountant

    ledger = Ledger(2, np.full(2, 1e-5), threat_model="record")
    for _ in range(20):
        ledger.record(torch.tensor([0, 1]), None, GaussianRecord(torch.tensor([0.5, 2.0]), sample_rate=0.11, steps=5))
    direct = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    direct.compose(dp_accounting.PoissonSampledDpEvent(0.11, dp_accounting.GaussianDpEvent(0.5)), 100)
    assert ledger.headline_run() == ledger.pld_run() == pytest.approx(direct.get_epsilon(1e-5), rel=1e-3)
    assert ledger.headline_run() >= direct.get_epsilon(1e-5) * (1 - 1e-9)    # a coarser grid: still above
    assert ledger.headline_run() < 0.9 * rdp_reference(0.5, 0.11, 100, 1e-5)     # more than 10 % apart here
    pure = Ledger(1, np.full(1, 1e-5))
    pure.record(torch.tensor([0]), None, pure=torch.tensor([1.0]))
    assert pure.pld_run() == pure.headline_run()                            # pure releases: already PLD
    assert math.isinf(Ledger(1, np.full(1, 1e-5), threat_model="none").pld_run())


def test_many_distinct_tallies_compose_one_dominating_tally_that_bounds_every_client():
    """DSDP-FedAvg gives each user its own multipliers: 446 distinct tallies took over 9 CPU minutes at
    the end of a 20-round run (and hung W3 on a GPU). One dominating tally bounds them all, within 10 %."""
    from fedcore.accounting.pure import EXACT_TALLIES, dominating_tally, gaussian_pld_epsilon

    n = EXACT_TALLIES + 1
    ledger = Ledger(n, np.full(n, 1e-5), threat_model="user")
    rng = np.random.default_rng(0)
    for _ in range(5):
        ledger.record(torch.arange(n), None, GaussianRecord(torch.tensor(rng.uniform(0.8, 1.6, n)), sample_rate=0.1,
                                                            grid=True))
    each = [gaussian_pld_epsilon(tuple(sorted(t.items())), 1e-5) for t in ledger.tally]
    assert max(each) <= ledger.pld_run() <= 1.1 * max(each)
    assert ledger.pld_run() < ledger.headline_run()
    # the bound's rounding onto a grid only ever lowers a multiplier
    zs = np.linspace(0.7, 1.4, 100)
    grid = dominating_tally([tuple(((float(z), 0.1), 1.0) for z in zs)], max_entries=4)
    low = np.repeat([z for (z, _), _ in grid], [k for _, k in grid])
    assert 4 < len(grid) < 100 and len(low) == 100 and (low <= zs).all() and (low > zs / 1.01).all()


def test_a_curve_is_kept_on_disk_and_read_back_without_dp_accounting(tmp_path, monkeypatch):
    """W3's rounds spent most of their time in dp-accounting (a new multiplier most rounds): a curve
    another process computed is read back from the host's disk cache, identical."""
    from fedcore.accounting import rdp

    monkeypatch.setenv(rdp.CACHE_ENV, str(tmp_path / "rdp"))
    rdp.curve_cache.cache_clear(); rdp._gaussian_rdp_cached.cache_clear()
    try:
        first = rdp.gaussian_rdp(1.234567, 0.1)
        rdp._gaussian_rdp_cached.cache_clear()                   # a new process: nothing in memory
        monkeypatch.setattr(rdp, "_compute_curve", lambda *a: pytest.fail("recomputed"))
        assert (rdp.gaussian_rdp(1.234567, 0.1) == first).all()
        monkeypatch.setenv(rdp.CACHE_ENV, "off")
        rdp.curve_cache.cache_clear(); rdp._gaussian_rdp_cached.cache_clear()
        assert rdp.curve_cache() is None
        with pytest.raises(pytest.fail.Exception):
            rdp.gaussian_rdp(1.234567, 0.1)                      # off: computed again
    finally:
        rdp.curve_cache.cache_clear(); rdp._gaussian_rdp_cached.cache_clear()


def test_privacy_parameters_reach_the_mechanisms_in_float64():
    """ε = 0.1 and δ = 1e-5 are not rounded through float32 on their way to the mechanism and the ledger."""
    import torch

    from fedcore.engine.setup import prepare
    from fedcore.resolve import preset_config

    cfg = preset_config("demo").with_overrides({"method": "dp_fedavg", "privacy.epsilon": [0.1],
                                                "privacy.delta": [1e-5], "rounds": 1})
    ctx = prepare(cfg).ctx
    assert ctx.epsilon.dtype == torch.float64 and ctx.delta.dtype == torch.float64
    assert float(ctx.epsilon[0]) == 0.1 and float(ctx.delta[0]) == 1e-5
