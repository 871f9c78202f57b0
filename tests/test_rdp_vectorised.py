"""Issue 55 §2: the RDP curve of a (subsampled) Gaussian step, every order at once
(:func:`fedcore.accounting.rdp.subsampled_gaussian_rdp`), against dp-accounting, the reference; and the
ledger's headline computed that way against the one it gave with dp-accounting's own curves."""
import numpy as np
import pytest
import torch

from fedcore.accounting import GaussianRecord, Ledger
from fedcore.accounting import rdp as rdp_mod
from fedcore.accounting import rdp_queue as rdp_queue_mod


def _library_curve(z: float, q: float, orders=rdp_mod.ORDERS) -> np.ndarray:
    """The curve as the ledger computed it before issue 55: dp-accounting's RdpAccountant, one event."""
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    acc = rdp_lib.RdpAccountant(orders=orders)
    event = dp_accounting.GaussianDpEvent(z)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, event) if q < 1 else event, 1)
    return np.asarray(acc.rdp)


@pytest.mark.parametrize("q", [1e-4, 0.01, 0.1, 0.3, 0.999])
@pytest.mark.parametrize("z", [0.1, 0.57, 1.0, 5.0, 100.0])
def test_every_order_at_once_agrees_with_dp_accounting(z, q):
    """Same terms, same stopping rule: equal to 1e-12 relative (1e-15 absolute for the tiny values at orders
    near 1), and infinite exactly where dp-accounting's series does not converge."""
    ours, theirs = rdp_mod.subsampled_gaussian_rdp(z, q), _library_curve(z, q)
    assert np.array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("z", [0.3, 1.0, 7.5])
def test_an_unsampled_round_is_the_librarys_closed_form_bit_for_bit(z):
    assert np.array_equal(rdp_mod.subsampled_gaussian_rdp(z, 1.0), _library_curve(z, 1.0))
    assert np.array_equal(rdp_mod.subsampled_gaussian_rdp(z, 0.0), np.zeros(len(rdp_mod.ORDERS)))
    assert np.isinf(rdp_mod.subsampled_gaussian_rdp(0.0, 0.1)).all()


def _w3_like(ledger: Ledger, rounds: int = 5, clients: int = 40, seed: int = 55) -> list:
    """ULDP-FED's central reading in small: every round a new sum noise, each user its multiplier at the clip
    of its participation count (a grid record, composed by RDP); each round's per-client headline."""
    rng = np.random.default_rng(seed)
    participations = np.zeros(clients, dtype=int)
    heads = []
    for _ in range(rounds):
        sigma_sum = 0.55 + 0.1 * rng.random()
        z = sigma_sum / np.exp(-0.05 * (participations + 1))
        ledger.record(torch.arange(clients), torch.zeros(clients),
                      GaussianRecord(torch.tensor(z, dtype=torch.float64), sample_rate=0.1, grid=True))
        participations += rng.random(clients) < 0.1
        heads.append(ledger.headline())
    return heads


def test_the_ledgers_headline_is_the_one_dp_accountings_curves_gave(monkeypatch):
    monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)
    monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
    rdp_mod._gaussian_rdp_cached.cache_clear()
    ours = _w3_like(Ledger(40, np.full(40, 1e-5), "central"))
    monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
    rdp_mod._gaussian_rdp_cached.cache_clear()
    monkeypatch.setattr(rdp_mod, "_compute_curve", lambda z, q, pieces=1, piece=0: tuple(_library_curve(z, q)))
    theirs = _w3_like(Ledger(40, np.full(40, 1e-5), "central"))
    rdp_mod._gaussian_rdp_cached.cache_clear()
    for a, b in zip(ours, theirs):
        assert np.all(np.isfinite(a)) and a.max() > 1
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=0)


def _dense(pld) -> list:
    return [(p.to_dense_pmf()._lower_loss, p.to_dense_pmf()._probs, p.to_dense_pmf()._infinity_mass)   # noqa: SLF001
            for p in (pld._pmf_remove, pld._pmf_add)]                                                    # noqa: SLF001


@pytest.mark.parametrize("z,q,steps", [(0.57, 0.1, 1), (0.585397, 0.1, 3), (1.0, 0.01, 10), (2.5, 1.0, 1),
                                       (0.8, 1.0, 4), (0.3, 0.5, 1)])
def test_a_gaussian_pld_is_dp_accountings_bit_for_bit(z, q, steps):
    """The PLD parts of the exact accountant (:func:`fedcore.accounting.pure.gaussian_steps_pld`) take every
    loss's hockey-stick divergence at once; the PLD is the one ``from_gaussian_mechanism`` builds."""
    import math

    import dp_accounting
    from dp_accounting.pld import privacy_loss_distribution as pld

    from fedcore.accounting.pure import gaussian_steps_pld

    add_remove = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    if q >= 1:
        theirs = pld.from_gaussian_mechanism(z / math.sqrt(steps), value_discretization_interval=1e-3,
                                             neighboring_relation=add_remove)
    else:
        theirs = pld.from_gaussian_mechanism(z, value_discretization_interval=1e-3, sampling_prob=q,
                                             neighboring_relation=add_remove)
        if steps > 1:
            theirs = theirs.self_compose(steps)
        else:   # the accountant self-composes one step too: its 1e-15 tail truncation only adds to ε
            accountants = theirs.self_compose(1).get_epsilon_for_delta(1e-5)
            ours_one = gaussian_steps_pld(z, q, 1).get_epsilon_for_delta(1e-5)
            assert ours_one <= accountants <= ours_one * (1 + 1e-9)
    ours = gaussian_steps_pld(z, q, steps)
    for (lo_a, p_a, inf_a), (lo_b, p_b, inf_b) in zip(_dense(ours), _dense(theirs)):
        assert lo_a == lo_b and inf_a == inf_b and np.array_equal(p_a, p_b)
    assert ours.get_epsilon_for_delta(1e-5) == theirs.get_epsilon_for_delta(1e-5)


def test_a_small_runs_per_client_headline_is_dp_accountings_per_client_composition(monkeypatch):
    """A short ULDP-FED run (central reading, decaying clip: grid records composed by RDP): every client's
    headline against its own tally composed the way the ledger did before issue 55, each step's curve from
    dp-accounting's accountant, client by client."""
    import fedcore.catalog  # noqa: F401
    from fedcore.engine import iter_run, loop
    from fedcore.events import RoundEvent
    from fedcore.layering import build_config

    monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)
    ledgers = []
    new_ledger = loop.new_ledger
    monkeypatch.setattr(loop, "new_ledger", lambda s: ledgers.append(new_ledger(s)) or ledgers[-1])
    cfg = build_config(None, None, ["dataset=digits", "model=logreg", "num_clients=30", "rounds=4", "eval_every=4",
                                    "method=dsdp_fedavg", "privacy.epsilon=[7.3]", "privacy.delta=[1e-5]",
                                    "device=cpu"])
    last = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)][-1]
    ledger = ledgers[0]
    assert last.accountant == "rdp" and ledger.rdp_only.all()
    theirs = np.array([rdp_mod.rdp_epsilons(sum(k * _library_curve(z, q) for (z, q), k in tally.items())[None, :],
                                            1e-5)[0] if tally else 0.0 for tally in ledger.tally])
    ours = np.array([np.inf if e is None else e for e in last.epsilon_headline])
    assert theirs.max() > 1 and len({tuple(sorted(t.items())) for t in ledger.tally}) > 3
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=0)


def test_histories_dropped_by_compaction_leave_every_clients_curve_bit_for_bit():
    """Clients with the same history share one composed curve; once the histories outnumber twice the clients
    the unheld ones are dropped. Every client's curve stays the sum of its own steps, in the order recorded."""
    clients, rng = 6, np.random.default_rng(7)
    ledger, mine = Ledger(clients, np.full(clients, 1e-5), "central"), np.zeros((clients, len(rdp_mod.ORDERS)))
    for _ in range(30):
        z = np.round(0.6 + rng.random(clients), 3)
        z[:2] = 0.9                                    # two clients keep the same history throughout
        ledger.record(torch.arange(clients), torch.zeros(clients),
                      GaussianRecord(torch.tensor(z, dtype=torch.float64), sample_rate=0.1, grid=True))
        grid = ledger_grid(z)
        mine += np.stack([rdp_mod.gaussian_rdp(v, 0.1) for v in grid])
    assert ledger.rdp_queue._count <= 2 * clients + 64 + clients
    assert ledger.rdp_queue.history[0] == ledger.rdp_queue.history[1]
    assert np.array_equal(ledger.rdp, mine)


def ledger_grid(z: np.ndarray) -> np.ndarray:
    """The multipliers a grid record composes (:data:`fedcore.accounting.ledger.GRID`, 6 digits)."""
    from fedcore.accounting.ledger import GRID

    down = GRID ** np.floor(np.log(z) / np.log(GRID))
    return np.array([float(f"{v:.6g}") for v in down])


@pytest.mark.parametrize("seed", range(4))
def test_a_composition_truncates_tails_as_dp_accounting_bit_for_bit(seed):
    """:func:`fedcore.accounting.pure.compose` finds the tails by cumulative sums; every composed PMF (remove
    and add, symmetric and not, dense and sparse) is the library's ``compose`` bit for bit."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    from fedcore.accounting.pure import compose, gaussian_steps_pld

    rng = np.random.default_rng(seed)
    theirs = ours = pld.identity(value_discretization_interval=1e-3)
    for _ in range(4):
        part = gaussian_steps_pld(float(rng.uniform(0.4, 3.0)), float(rng.choice([0.01, 0.1, 1.0])),
                                  int(rng.integers(1, 4)))
        theirs, ours = theirs.compose(part), compose(ours, part)
        for (lo_a, p_a, inf_a), (lo_b, p_b, inf_b) in zip(_dense(ours), _dense(theirs)):
            assert lo_a == lo_b and inf_a == inf_b and np.array_equal(p_a, p_b)


def test_self_convolution_bounds_are_dp_accountings_on_any_pmf():
    """:func:`fedcore.accounting.pure._self_convolve_bounds` takes the 40 Chernoff orders in one ``logsumexp``;
    the truncation bounds are the library's ``compute_self_convolve_bounds`` on PMFs of every shape."""
    from dp_accounting.pld import common

    from fedcore.accounting.pure import _self_convolve_bounds

    rng = np.random.default_rng(7)
    for _ in range(200):
        probs = rng.random(int(rng.integers(2, 3000))) ** rng.uniform(1, 12)
        probs /= probs.sum() * rng.uniform(1, 1.01)
        times, tail = int(rng.integers(2, 8)), float(rng.choice([0.0, 10 ** rng.uniform(-16, -4)]))
        assert _self_convolve_bounds(probs, times, tail) == common.compute_self_convolve_bounds(probs, times, tail)


def test_a_dominating_tally_takes_each_rank_s_smallest_multiplier_over_every_tally():
    """:func:`fedcore.accounting.pure.dominating_tally` compares every tally's sorted steps at once; it is the
    definition's loop (each rate: each tally's multipliers expanded by steps and sorted, then the elementwise
    minimum, a shorter list counting as no step) on random tallies of several rates and fractional steps."""
    import math

    from fedcore.accounting.pure import dominating_tally

    def by_definition(tallies, max_entries):
        out = {}
        for q in sorted({q for t in tallies for (_, q), _ in t}):
            rows = [np.repeat(*zip(*sorted((z, math.ceil(k - 1e-9)) for (z, r), k in t if r == q)))
                    if any(r == q for (_, r), _ in t) else np.empty(0) for t in tallies]
            low = np.full(max(len(r) for r in rows), np.inf)
            for r in rows:
                low[:len(r)] = np.minimum(low[:len(r)], r)
            values, counts = np.unique(low[np.isfinite(low)], return_counts=True)
            if len(values) > max_entries:
                values = 1.01 ** np.floor(np.log(values) / np.log(1.01) + 1e-12)
            for z, k in zip(values.tolist(), counts.tolist()):
                out[(z, q)] = out.get((z, q), 0) + k
        return tuple(sorted(out.items()))

    rng = np.random.default_rng(3)
    for _ in range(100):
        tallies = [tuple({(round(float(rng.uniform(0.3, 3.0)), 3), float(rng.choice([0.01, 0.1, 1.0]))):
                          float(rng.choice([1.0, 2.0, 0.5, 3.0])) for _ in range(int(rng.integers(1, 12)))}.items())
                   for _ in range(int(rng.integers(1, 25)))]
        max_entries = int(rng.choice([3, 64]))
        assert dominating_tally(tallies, max_entries=max_entries) == by_definition(tallies, max_entries)


def test_orders_proven_never_to_stop_are_the_full_series_result_bit_for_bit(monkeypatch):
    """The fractional orders :func:`rdp._never_stops` proves infinite after the first block (the orders near 1 whose
    series dp-accounting abandons after 1,000 terms) give the curve the full 1,000 terms give, bit for bit, over a
    spread of multipliers and sampling rates; and the proof does fire where W3 runs (q = 0.1, z 0.6-1.2)."""
    frac = rdp_mod.ORDERS[rdp_mod.ORDERS != np.floor(rdp_mod.ORDERS)]
    proven = []
    real = rdp_mod._never_stops

    def spy(*args):
        out = real(*args)
        proven.append(int(out.sum()))
        return out

    rng = np.random.default_rng(5)
    cases = [(float(z), q) for z in np.exp(rng.uniform(np.log(0.05), np.log(50), 40))
             for q in (1e-3, 0.01, 0.1, 0.3, 0.9)] + [(0.6, 0.1), (0.9, 0.1), (1.2, 0.1)]
    for z, q in cases:
        monkeypatch.setattr(rdp_mod, "_never_stops", spy)
        fast = rdp_mod._fractional_log_a(q, z, frac)
        monkeypatch.setattr(rdp_mod, "_never_stops", lambda q, s, alpha, *rest: np.zeros(len(alpha), bool))
        assert np.array_equal(fast, rdp_mod._fractional_log_a(q, z, frac)), (z, q)
    assert proven[-3:] == [6, 5, 3]
