"""Issue 41: accounting beside the round (the ledger's curve worker), the round profile
(``python -m benchmarks.round_profile``) and the per-round ``evaluated`` flag.

Costs are compared as CPU seconds of this thread (``time.thread_time``), never as wall-clock deadlines."""
import json
import time

import numpy as np
import pytest
import torch

from fedcore.accounting import GaussianRecord, Ledger
from fedcore.accounting import curve_workers as workers_mod
from fedcore.accounting import ledger as ledger_mod  # noqa: F401
from fedcore.accounting import rdp_queue as rdp_queue_mod
from fedcore.accounting import rdp as rdp_mod
from fedcore.engine import outbox as loop_mod   # AHEAD_ROUNDS, AHEAD_SECONDS

CLIENTS = 5


def _schedule(seed: int, rounds: int = 4) -> list:
    """Per-round multipliers that change every round (ULDP-FED's central reading with a decaying
    clip), drawn so that no other test of the session meets them."""
    rng = np.random.default_rng(seed)
    return [(0.5 + 0.2 * rng.random()) * np.exp(0.06 * np.arange(CLIENTS)) for _ in range(rounds)]


def _feed(ledger: Ledger, schedule: list, beside: bool) -> list[float]:
    """Record every round and read its headline (as the round loop does); this thread's CPU per round."""
    cpu = []
    for zs in schedule:
        c0 = time.thread_time()
        ledger.record(torch.arange(CLIENTS), torch.zeros(CLIENTS),
                      GaussianRecord(torch.tensor(zs, dtype=torch.float64), sample_rate=0.1, grid=True))
        ledger.headline()
        ledger.views()
        cpu.append(time.thread_time() - c0)
        if len(cpu) == 1 and beside:
            _wait_ready()   # round 1 computes inline while the worker starts; rounds 2- go to it
    return cpu


def _wait_ready() -> None:
    pool = rdp_queue_mod.curve_pool()
    if pool is None:
        pytest.skip("no curve worker could start here")
    worker = pool.workers[0]
    with worker.cond:
        worker.cond.wait_for(lambda: worker.ready or worker.dead, timeout=300)
    if not worker.ready:
        pytest.skip("the curve worker did not start")


@pytest.fixture
def inline(monkeypatch):
    """A ledger that computes every curve in the round from scratch (no worker, no cache)."""
    def use():
        monkeypatch.setattr(rdp_queue_mod, "curve_pool", lambda fill=False: None)
        monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
        monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)
        rdp_mod._gaussian_rdp_cached.cache_clear()
    yield use
    rdp_mod._gaussian_rdp_cached.cache_clear()


def test_curves_computed_beside_the_round_are_bitwise_those_computed_in_it(monkeypatch, inline):
    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "background")
    schedule = _schedule(41_001)
    background = Ledger(CLIENTS, np.full(CLIENTS, 1e-5), "central")
    cpu0 = workers_mod.background_cpu_seconds()
    _feed(background, schedule, beside=True)
    assert workers_mod.background_cpu_seconds() > cpu0, "rounds 2-4 should have sent their curves to the worker"
    inline()
    here = Ledger(CLIENTS, np.full(CLIENTS, 1e-5), "central")
    _feed(here, schedule, beside=False)
    assert np.array_equal(background.rdp, here.rdp)
    assert background.headline().tolist() == here.headline().tolist()
    assert background.views() == here.views()
    assert background.tally == here.tally and background.steps.tolist() == here.steps.tolist()


def test_by_default_new_curves_are_computed_in_the_round_and_no_process_starts(monkeypatch, inline):
    """Issue 55 §2: a curve costs about 2 ms every order at once, so moving it to a worker process only added
    the worker's start-up; by default the ledger starts none and its figures are complete at once."""
    monkeypatch.delenv(workers_mod.ACCOUNTING_ENV, raising=False)
    monkeypatch.setattr(workers_mod, "_POOL", {})
    ledger = Ledger(CLIENTS, np.full(CLIENTS, 1e-5), "central")
    _feed(ledger, _schedule(41_002), beside=False)
    assert workers_mod._POOL.get("pool") is None and not ledger.pending()


def test_a_rounds_snapshot_reads_what_the_ledger_read_then_though_later_rounds_recorded(monkeypatch, inline):
    """The loop builds round t's event from the figures round t left (``Ledger.snapshot``) while rounds
    t+1, ... record: once settled, each snapshot's headline, views and basic ε are bitwise those an inline
    ledger read right after round t."""
    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "background")
    schedule = _schedule(seed=2041, rounds=5)
    beside = Ledger(CLIENTS, np.full(CLIENTS, 1e-5), "central")
    snaps = []
    for t, zs in enumerate(schedule):
        beside.record(torch.arange(CLIENTS), torch.full((CLIENTS,), 0.5),
                      GaussianRecord(torch.tensor(zs, dtype=torch.float64), sample_rate=0.1, grid=True))
        snaps.append(beside.snapshot())
        if t == 0:
            _wait_ready()
    assert all(beside.settle(snap, wait=True) for snap in reversed(snaps))
    inline()
    here = Ledger(CLIENTS, np.full(CLIENTS, 1e-5), "central")
    for zs, snap in zip(schedule, snaps):
        here.record(torch.arange(CLIENTS), torch.full((CLIENTS,), 0.5),
                    GaussianRecord(torch.tensor(zs, dtype=torch.float64), sample_rate=0.1, grid=True))
        assert snap.headline().tolist() == here.headline().tolist()
        assert snap.views() == here.views() and snap.basic.tolist() == here.basic.tolist()
    assert snaps[0].headline().max() < snaps[-1].headline().max()


def test_inline_setting_keeps_every_curve_in_the_round(monkeypatch):
    from fedcore.accounting import curve_workers

    monkeypatch.setattr(curve_workers, "_POOL", {})
    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "inline")
    assert rdp_queue_mod.curve_pool() is None


def test_a_pickled_ledger_carries_its_composed_curves(monkeypatch):
    import pickle

    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "background")
    ledger = Ledger(CLIENTS, np.full(CLIENTS, 1e-5), "central")
    _feed(ledger, _schedule(41_003, rounds=2), beside=True)
    copy = pickle.loads(pickle.dumps(ledger))
    assert np.array_equal(copy.rdp, ledger.rdp) and copy.headline().tolist() == ledger.headline().tolist()


def test_round_events_say_which_rounds_were_evaluated():
    from fedcore.engine import iter_run
    from fedcore.events import RoundEvent
    from fedcore.layering import build_config

    cfg = build_config(None, None, ["dataset=digits", "model=logreg", "num_clients=4", "rounds=5", "eval_every=2",
                                    "method=fedavg", "device=cpu"])
    rounds = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)]
    assert [r.evaluated for r in rounds] == [False, True, False, True, True]
    assert rounds[2].accuracy == rounds[1].accuracy     # carried over from the last evaluated round


def test_round_profile_prints_the_issue_figures(monkeypatch, capsys):
    import fedcore.catalog  # noqa: F401
    from benchmarks import round_profile

    monkeypatch.setenv("FEDCORE_RDP_CACHE", rdp_mod.os.environ.get("FEDCORE_RDP_CACHE", "off"))
    args = ["--workload", "W1/10", "--rounds", "3", "--threads", "0", "--cache", rdp_mod.os.environ["FEDCORE_RDP_CACHE"],
            "--set", "method=dsdp_fedavg", "--set", "privacy.epsilon=[10.0]", "--set", "privacy.delta=[1e-5]", "--json"]
    assert round_profile.main(args) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("aten_calls_per_round", "aten_top_level_calls_per_round", "ledger_cpu_s_per_round",
                "eval_cpu_s_per_round", "train_cpu_s_per_round", "evaluated_rounds", "per_round"):
        assert key in out, key
    assert out["num_clients"] == 10 and out["rounds"] == 3 and out["evaluated_rounds"] == [1, 2, 3]
    assert 100 < out["aten_calls_per_round"] and out["aten_top_level_calls_per_round"] <= out["aten_calls_per_round"]
    assert out["ledger_cpu_s_per_round"] == pytest.approx(
        out["ledger_in_thread_cpu_s_per_round"] + out["ledger_wait_s_per_round"], abs=1e-3)
    assert out["train_cpu_s_per_round"] > 0 and out["eval_cpu_s_per_round"] > 0
    assert [k for r in out["per_round"] for k in r["released"]] == [1, 2, 3]   # every event, once, in order
    assert out["headline_epsilon"] is not None and out["headline_epsilon"] > 0
    parts = out["accounting_cpu_s_all_parts"]    # issue 55 §2: every CPU-second of accounting, round 1 included
    assert parts["rounds"] == 3 and parts["workers"] == 0     # no process computes curves beside the round
    assert out["accounting_cpu_s_per_round_warm"] == pytest.approx(
        (parts["rounds_in_thread"] + parts["run_end_in_thread"] + parts["workers"]) / 3, abs=1e-3)
    assert out["accounting_cpu_s_per_round_all"] == pytest.approx(   # dp-accounting's import: once a process
        out["accounting_cpu_s_per_round_warm"] + parts["library_import"] / 3, abs=1e-3)
    assert parts["rounds_in_thread"] >= parts["round_1_in_thread"] > 0


def test_round_profile_counts_what_a_gpu_would_replay_apart(monkeypatch, capsys):
    """``--graphs`` on CPU: the CUDA-graph path's padded steps and evaluation run eagerly, counted
    apart; the run's numbers are those of the eager path (unclipped padded steps are bitwise)."""
    import fedcore.catalog  # noqa: F401
    from benchmarks import round_profile

    monkeypatch.setenv("FEDCORE_RDP_CACHE", rdp_mod.os.environ.get("FEDCORE_RDP_CACHE", "off"))
    base = ["--workload", "W1/10", "--rounds", "2", "--cache", rdp_mod.os.environ["FEDCORE_RDP_CACHE"], "--json"]
    out = []
    for extra in ([], ["--graphs"]):
        assert round_profile.main(base + extra) == 0
        out.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
    plain, graphs = out
    assert "aten_calls_replayed_per_round" not in plain
    assert graphs["aten_calls_replayed_per_round"] > graphs["aten_calls_by_part"]["eval"]   # steps and evaluation
    assert graphs["aten_calls_outside_graphs_per_round"] == (graphs["aten_calls_per_round"]
                                                            - graphs["aten_calls_replayed_per_round"])
    assert graphs["final_accuracy"] == plain["final_accuracy"]


def _dsdp_digits(rounds=6, eval_every=3):
    import fedcore.catalog  # noqa: F401
    from fedcore.layering import build_config

    return build_config(None, None, ["dataset=digits", "model=logreg", "num_clients=30", f"rounds={rounds}",
                                     f"eval_every={eval_every}", "method=dsdp_fedavg", "privacy.epsilon=[7.3]",
                                     "privacy.delta=[1e-5]", "device=cpu"])


def _events(cfg, monkeypatch):
    """The run's round events, each with the number of local trainings done when it was emitted."""
    from fedcore.engine import iter_run
    from fedcore.engine import local_round as loop
    from fedcore.events import RoundEvent, to_dict

    calls = []
    train = loop.train_clients
    monkeypatch.setattr(loop, "train_clients", lambda *a, **k: (calls.append(1), train(*a, **k))[1])
    out = []
    for e in iter_run(cfg):
        if isinstance(e, RoundEvent):
            d = to_dict(e)
            d.pop("seconds"), d.pop("elapsed")
            out.append((len(calls), d))
    return out


def test_a_round_whose_curves_are_out_trains_the_next_ones_and_changes_no_number(monkeypatch, inline):
    """eval_every = 3: rounds without evaluation have nothing to hide the curves behind, so the next
    rounds train while they are computed; every event is the same as with inline accounting."""
    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "background")
    _wait_ready()
    monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)   # every curve computed: some are out
    monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
    rdp_mod._gaussian_rdp_cached.cache_clear()
    ahead = _events(_dsdp_digits(), monkeypatch)
    inline()
    here = _events(_dsdp_digits(), monkeypatch)
    assert [d for _, d in ahead] == [d for _, d in here]
    assert [n for n, _ in here] == [1, 2, 3, 4, 5, 6]               # inline: one training per event
    assert any(n > r + 1 for r, (n, _) in enumerate(ahead))         # some round went ahead
    assert all(n <= r + 1 + loop_mod.AHEAD_ROUNDS for r, (n, _) in enumerate(ahead))
    assert [d["evaluated"] for _, d in here] == [False, False, True, False, False, True]


def test_no_event_waits_past_the_lag_bound_while_later_rounds_train(monkeypatch, inline):
    """``AHEAD_SECONDS`` bounds how far a live view (and a Stop) trails the training: at 0 every round's
    event leaves before the next round trains, with the same numbers as when rounds go ahead."""
    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "background")
    _wait_ready()
    monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)
    monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
    rdp_mod._gaussian_rdp_cached.cache_clear()
    monkeypatch.setattr(loop_mod, "AHEAD_SECONDS", 0.0)
    bounded = _events(_dsdp_digits(), monkeypatch)
    assert [n for n, _ in bounded] == [1, 2, 3, 4, 5, 6]
    inline()
    assert [d for _, d in bounded] == [d for _, d in _events(_dsdp_digits(), monkeypatch)]



def test_a_failure_in_the_round_trained_ahead_comes_after_the_previous_event(monkeypatch, inline):
    from fedcore.engine import iter_run
    from fedcore.engine import local_round as loop
    from fedcore.events import RoundEvent

    def run():
        seen, plans = [], []
        make_plan = loop.make_plan

        def failing(*a, **k):
            plans.append(1)
            if len(plans) == 4:
                raise RuntimeError("round 4 cannot plan")
            return make_plan(*a, **k)
        monkeypatch.setattr(loop, "make_plan", failing)
        with pytest.raises(RuntimeError, match="round 4"):
            for e in iter_run(_dsdp_digits(rounds=6, eval_every=6)):
                if isinstance(e, RoundEvent):
                    seen.append(e.round)
        return seen

    monkeypatch.setenv(workers_mod.ACCOUNTING_ENV, "background")
    _wait_ready()
    monkeypatch.setattr(rdp_mod, "curve_cache", lambda: None)
    monkeypatch.setattr(rdp_queue_mod, "_CURVES", {})
    rdp_mod._gaussian_rdp_cached.cache_clear()
    ahead = run()
    inline()
    here = run()
    assert ahead == here and len(here) >= 2 and here == list(range(1, len(here) + 1))
