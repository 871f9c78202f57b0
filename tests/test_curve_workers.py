"""Issue 41: a round's new RDP curves spread over a pool of worker processes
(:mod:`fedcore.accounting.curve_workers`), each curve bitwise the one computed here."""
import numpy as np
import pytest

from fedcore.accounting import GaussianRecord, Ledger, curve_workers
from fedcore.accounting import curve_workers as workers_mod
from fedcore.accounting import ledger as ledger_mod  # noqa: F401
from fedcore.accounting import rdp_queue as rdp_queue_mod
from fedcore.accounting import rdp as rdp_mod
from fedcore.errors import FedcoreError


@pytest.fixture
def fresh_pool(monkeypatch):
    """A pool of its own (at most 2 workers), no disk cache, nothing remembered."""
    monkeypatch.setenv(curve_workers.ACCOUNTING_ENV, "background")
    monkeypatch.setenv(curve_workers.WORKERS_ENV, "2")
    monkeypatch.setattr(curve_workers, "_POOL", {})
    monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
    monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)
    monkeypatch.setattr(rdp_queue_mod, "curve_cache", lambda: None)   # its own name: a curve kept by a test before
    rdp_mod._gaussian_rdp_cached.cache_clear()
    yield
    pool = curve_workers._POOL.get("pool")
    if pool is not None:
        pool.stop()
    rdp_mod._gaussian_rdp_cached.cache_clear()


def _ready(pool, n: int) -> None:
    """Wait until ``n`` workers of ``pool`` answer (a condition, no deadline of our own)."""
    for worker in pool.workers[:n]:
        with worker.cond:
            worker.cond.wait_for(lambda: worker.ready or worker.dead, timeout=600)
    if sum(w.ready for w in pool.workers) < n:
        pytest.skip("worker processes could not start here")


def test_pool_size_reads_the_setting_and_defaults_to_all_cores_but_two(monkeypatch):
    monkeypatch.setenv(curve_workers.WORKERS_ENV, "3")
    assert curve_workers.pool_size() == 3
    monkeypatch.setenv(curve_workers.WORKERS_ENV, "0")
    assert curve_workers.pool_size() == 1
    monkeypatch.setenv(curve_workers.WORKERS_ENV, "many")
    with pytest.raises(FedcoreError, match="whole number"):
        curve_workers.pool_size()
    monkeypatch.delenv(curve_workers.WORKERS_ENV)
    monkeypatch.setattr(curve_workers.os, "sched_getaffinity", lambda _: set(range(16)), raising=False)
    assert curve_workers.pool_size() == 14
    monkeypatch.setattr(curve_workers.os, "sched_getaffinity", lambda _: set(range(64)), raising=False)
    assert curve_workers.pool_size() == 16
    monkeypatch.setattr(curve_workers.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    assert curve_workers.pool_size() == 1


def test_a_pool_starts_whole_and_its_curves_are_the_serial_ones(fresh_pool):
    """The first grid record starts every worker (they warm up during round 1, which computes inline);
    rounds 2-3 send their curves out, both workers answer, and the composed curves are bitwise those
    computed in this process."""
    clients = 6
    rng = np.random.default_rng(41_777)
    rounds = [(0.55 + 0.3 * rng.random()) * np.exp(0.05 * np.arange(clients)) for _ in range(3)]
    ledger = Ledger(clients, np.full(clients, 1e-5), "central")
    import torch

    for r, zs in enumerate(rounds):
        ledger.record(torch.arange(clients), torch.zeros(clients),
                      GaussianRecord(torch.tensor(zs, dtype=torch.float64), sample_rate=0.1, grid=True))
        pool = rdp_queue_mod.curve_pool()
        assert pool is not None and pool.size == 2
        if r == 0:               # round 1 computed inline while both workers started
            assert len(pool.workers) == 2 and sum(w.sent for w in pool.workers) == 0
            _ready(pool, 2)
    head = ledger.headline().tolist()
    assert sum(w.sent for w in pool.workers) >= 2 * clients - 2   # rounds 2-3 went out
    assert all(w.sent > 0 for w in pool.workers), [w.sent for w in pool.workers]   # round 3 spread
    here = Ledger(clients, np.full(clients, 1e-5), "central")
    for zs in rounds:
        here.rdp_queue.grid_records = -10   # never hand a curve out
        here.record(torch.arange(clients), torch.zeros(clients),
                    GaussianRecord(torch.tensor(zs, dtype=torch.float64), sample_rate=0.1, grid=True))
    rdp_queue_mod._CURVES.clear()
    assert np.array_equal(ledger.rdp, here.rdp)
    assert head == here.headline().tolist()


def test_a_curves_pieces_put_back_together_are_the_whole_curve_bit_for_bit():
    """dp-accounting computes each order on its own: every PIECES-th order apart, then scattered back."""
    for z, q in ((0.8123, 0.1), (2.5, 0.01), (1.1, 1.0)):
        whole = np.array(rdp_mod._compute_curve(z, q))
        for pieces in (2, 3, curve_workers.PIECES):
            back = np.empty_like(whole)
            for piece in range(pieces):
                back[piece::pieces] = rdp_mod._compute_curve(z, q, pieces, piece)
            assert np.array_equal(back, whole), (z, q, pieces)


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [False, True])
def test_a_run_whose_curves_go_out_in_pieces_emits_the_inline_events(fresh_pool, monkeypatch, ahead):
    """DSDP-FedAvg on digits with two workers (curves in two pieces): every round event is the one the
    same run emits with every curve computed in its round; also pipelined as on a GPU (``ahead``: round t's
    entry and event wait for round t + 1's training, :func:`fedcore.engine.loop.pipelined`)."""
    from fedcore.engine import iter_run, loop
    from fedcore.events import RoundEvent, to_dict
    from fedcore.layering import build_config

    import fedcore.catalog  # noqa: F401

    def events():
        cfg = build_config(None, None, ["dataset=digits", "model=logreg", "num_clients=30", "rounds=5",
                                        "eval_every=2", "method=dsdp_fedavg", "privacy.epsilon=[6.1]",
                                        "privacy.delta=[1e-5]", "device=cpu"])
        out = []
        for e in iter_run(cfg):
            if isinstance(e, RoundEvent):
                d = to_dict(e)
                d.pop("seconds"), d.pop("elapsed")
                out.append(d)
        return out

    _ready(rdp_queue_mod.curve_pool(), 1)   # started and ready before the run (a slow host starts it late)
    if ahead:
        monkeypatch.setattr(loop, "pipelined", lambda device, outbox: outbox.may_go_ahead)
    beside = events()
    pool = curve_workers._POOL.get("pool")
    assert pool is not None and sum(w.sent for w in pool.workers) > 0, "no curve went out"
    monkeypatch.setenv(curve_workers.ACCOUNTING_ENV, "inline")
    monkeypatch.setattr(curve_workers, "_POOL", {})
    rdp_queue_mod._CURVES.clear()
    rdp_mod._gaussian_rdp_cached.cache_clear()
    assert events() == beside


def test_a_pld_built_by_the_workers_is_the_accountants_bit_for_bit(fresh_pool):
    """The run's PLD view (and an attack cap's PLD) composes 64-71 entries at the end of a W3 run: a running
    pool builds them side by side, and the composition is dp-accounting's PLDAccountant exactly; with no
    pool running the entries are built here, to the same figure."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    from fedcore.accounting import pure

    tally = (((0.61, 0.1), 3), ((0.74, 0.1), 1), ((0.9, 0.1), 2), ((3.0, 1.0), 2))

    def accountant(relation):
        acc = pld_privacy_accountant.PLDAccountant(getattr(dp_accounting.NeighboringRelation, relation),
                                                   value_discretization_interval=pure.PLD_INTERVAL)
        for (z, q), k in tally:
            event = dp_accounting.GaussianDpEvent(z)
            acc.compose(event if q >= 1 else dp_accounting.PoissonSampledDpEvent(q, event), k)
        return acc.get_epsilon(1e-5)

    assert curve_workers.side_by_side([["pld", 1.0, 0.1, 1, "ADD_OR_REMOVE_ONE", 1e-3]]) is None   # no pool yet
    here = {r: pure.composed_gaussian_pld(tally, r).get_epsilon_for_delta(1e-5) for r in ("ADD_OR_REMOVE_ONE", "REPLACE_ONE")}
    pool = curve_workers.curve_pool(fill=True)
    _ready(pool, 2)
    before = [w.sent for w in pool.workers]
    for relation, eps in here.items():
        # the accountant's but for one-step parts, not self-composed here (no 1e-15 tail truncation)
        assert eps <= accountant(relation) <= eps * (1 + 1e-9)
        assert pure.composed_gaussian_pld(tally, relation).get_epsilon_for_delta(1e-5) == eps
    assert all(w.sent > b for w, b in zip(pool.workers, before)), "both workers should have built entries"
    assert pure.composed_gaussian_pld((((0.0, 0.1), 1), ((1.0, 0.1), 1))) is None         # z = 0: no guarantee
    bad = curve_workers.side_by_side([["pld", 1.0, 0.1, 1, "NO_SUCH_RELATION", 1e-3]] * 2)
    assert bad == [None, None]                                              # a failure answers None, workers live on
    assert len(pool.live) == 2


def test_a_gpu_runs_end_worker_composes_the_pld_so_the_run_never_imports_dp_accounting():
    """Issue 55 §5: a GPU run starts one worker at its setup (:func:`curve_workers.start_end_worker`); the run's
    PLD at its end (:func:`pure.gaussian_pld_epsilon`) is composed there, the same float as here, and the run's
    process never imports dp-accounting. A worker that ended leaves the work to the caller."""
    import subprocess
    import sys

    from fedcore.accounting import pure

    tally = (((0.61, 0.1), 3.0), ((0.74, 0.1), 1.0), ((0.9, 0.1), 2.0))
    here = pure.composed_epsilon(tuple((zq, int(k)) for zq, k in tally), delta=1e-5)
    probe = ("import sys; from fedcore.accounting import curve_workers as cw, pure; cw.start_end_worker(); "
             f"w = cw.end_worker(); eps = pure.gaussian_pld_epsilon({tally!r}, 1e-5); "
             "print(repr(eps), 'dp_accounting' in sys.modules, w.sent, cw.background_cpu_seconds() > 0); "
             "w.stop(); w.proc.wait(); w.result(w.sent - 1); w.dead = True; "
             f"print(cw.end_worker() is None, pure.gaussian_pld_epsilon.__wrapped__({tally!r}, 1e-5) == eps)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)  # a hang only
    assert out.returncode == 0, out.stderr[-2000:]
    first, second = out.stdout.splitlines()
    assert first.split() == [repr(here), "False", "1", "True"]
    assert second.split() == ["True", "True"]   # after the worker ended: computed in the process, the same ε
