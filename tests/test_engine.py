"""The batched round loop: equals a per-client loop, FedAvg weights, reproducibility, demo."""
import numpy as np
import pytest
import torch

from fedcore.config import LocalConfig, RunConfig
from fedcore.engine import iter_run
from fedcore.engine.local import train_clients
from fedcore.engine.plan import make_plan, pad_client_indices
from fedcore.engine.reference import train_clients_loop
from fedcore.errors import ConfigError
from fedcore.events import RoundEvent, RunFinished, RunStarted, event_from_dict, to_dict
from fedcore.models import build_model
from fedcore.resolve import preset_config


def _clients(sizes, seed=0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(sum(sizes))
    return np.split(perm, np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("model_name, shape, local", [
    ("logreg", (1, 8, 8), LocalConfig(epochs=2, batch_size=7, lr=0.3)),
    ("mlp", (1, 8, 8), LocalConfig(epochs=1, batch_size=5, lr=0.1, optimizer="momentum", momentum=0.9,
                                   weight_decay=1e-3)),
    ("cnn_uldp", (1, 28, 28), LocalConfig(epochs=1, batch_size=8, lr=0.05)),
    ("logreg", (1, 8, 8), LocalConfig(steps=6, batch_size=4, lr=0.2)),
])
def test_batched_training_equals_per_client_loop(model_name, shape, local):
    torch.manual_seed(0)
    sizes = [13, 30, 7, 21]  # unequal sizes exercise padding, partial batches and idle steps
    x = torch.randn(sum(sizes), *shape)
    y = torch.randint(0, 10, (sum(sizes),))
    model = build_model(model_name, shape, 10)
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    padded, counts = pad_client_indices(_clients(sizes), "cpu")
    plan = make_plan(padded, counts, local, torch.Generator().manual_seed(1))
    batched = train_clients(model, start, x, y, plan, local)
    looped = train_clients_loop(model, start, x, y, plan, local)
    for k in start:
        assert not torch.allclose(batched[k], start[k].expand_as(batched[k]))  # it trained
        torch.testing.assert_close(batched[k], looped[k], rtol=1e-4, atol=1e-5)


def test_epoch_plan_visits_every_sample_once_per_epoch():
    sizes = [5, 12, 1]
    padded, counts = pad_client_indices(_clients(sizes), "cpu")
    plan = make_plan(padded, counts, LocalConfig(epochs=3, batch_size=4), torch.Generator().manual_seed(0))
    for c, ix in enumerate(_clients(sizes)):
        used = torch.cat(plan.client_batches(c)).sort().values
        assert used.tolist() == sorted(list(ix) * 3)
        assert len(plan.client_batches(c)) == 3 * -(-sizes[c] // 4)


def _run(cfg):
    return list(iter_run(cfg))


def test_fedavg_weights_are_sample_fractions():
    cfg = RunConfig(num_clients=5, rounds=1, partition={"kind": "dirichlet", "alpha": 0.5, "min_size": 5})
    start, rnd, end = _run(cfg)
    sizes = np.array(start.client_sizes, dtype=float)
    assert len(set(sizes)) > 1
    np.testing.assert_allclose(rnd.weights, sizes[rnd.uploaded] / sizes[rnd.uploaded].sum(), rtol=1e-6)
    mean = _run(cfg.with_overrides({"privacy.aggregator": "mean"}))[1]
    np.testing.assert_allclose(mean.weights, [0.2] * 5)


def test_seeded_runs_are_reproducible_and_seeds_differ():
    cfg = RunConfig(rounds=3, participation=0.5)
    a, b = _run(cfg), _run(cfg)
    c = _run(cfg.replace(seed=1))
    rounds = lambda evs: [(e.accuracy, e.loss, e.selected) for e in evs if isinstance(e, RoundEvent)]
    assert rounds(a) == rounds(b)
    assert rounds(a) != rounds(c)
    assert all(len(e.selected) == 5 for e in a if isinstance(e, RoundEvent))


def test_poisson_sampling_varies_the_number_of_clients():
    cfg = RunConfig(num_clients=40, rounds=6, participation=0.3, sampling="poisson")
    counts = {len(e.selected) for e in _run(cfg) if isinstance(e, RoundEvent)}
    assert len(counts) > 1


def test_demo_preset_reaches_ninety_percent():
    events = _run(preset_config("demo"))
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert [e.round for e in rounds] == list(range(1, 21))
    assert rounds[-1].accuracy >= 0.90
    assert rounds[-1].epsilon_spent == [0.0] * 10
    assert events[-1].status == "finished"


def test_events_round_trip_through_json():
    for event in _run(RunConfig(rounds=2)):
        assert event_from_dict(to_dict(event)) == event


def test_stop_request_ends_run_with_stopped_status():
    calls = iter([False, False, True])
    events = list(iter_run(RunConfig(rounds=10), should_stop=lambda: next(calls)))
    assert events[-1].status == "stopped" and events[-1].rounds_done == 2


def test_more_clients_than_samples_is_a_config_error():
    with pytest.raises(ConfigError, match="num_clients"):
        _run(RunConfig(num_clients=5000, rounds=1))


def test_model_too_large_for_input_is_a_config_error():
    with pytest.raises(ConfigError, match="model"):
        _run(RunConfig(model="cnn_uldp", rounds=1))


def test_the_run_echoes_its_privacy_parameters_as_configured_in_float64():
    """Issue 31: RunStarted said ε = 0.10000000149 (a float32 round trip) for a configured 0.1."""
    from fedcore.engine import iter_run
    from fedcore.layering import build_config

    cfg = build_config("demo", None, ["rounds=1", "num_clients=3", "privacy.epsilon=0.1,0.3,1e-3"])
    start = next(iter_run(cfg))
    assert start.epsilon == [0.1, 0.3, 0.001] and start.delta == [1e-05] * 3


def test_a_rounds_ledger_entry_is_made_once_after_its_evaluation_is_queued(monkeypatch):
    """Issue 55 §5: the round's ledger entry is made while the device evaluates (``evaluate(meanwhile=...)``):
    once a round, after the pass is queued and before its sums are read; in a round not evaluated, after the
    server's step. The figures are those of recording inside the server's step."""
    from fedcore.accounting import Ledger
    from fedcore.engine import evaluate as evaluate_mod

    order: list = []
    record, sums = Ledger.record, evaluate_mod.accuracy_sums
    monkeypatch.setattr(Ledger, "record", lambda self, *a, **k: (order.append("record"), record(self, *a, **k))[1])
    monkeypatch.setattr(evaluate_mod, "accuracy_sums", lambda *a: (order.append("pass"), sums(*a))[1])
    cfg = preset_config("demo").with_overrides({"rounds": 4, "eval_every": 2})
    ends = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)]
    assert order == ["record", "pass", "record", "record", "pass", "record"]
    monkeypatch.setattr(Ledger, "record", record)
    from fedcore.engine import loop

    inside = loop.server_round
    monkeypatch.setattr(loop, "server_round", lambda *a, record=True, **k: inside(*a, **k))   # records inside
    again = [e for e in iter_run(cfg) if isinstance(e, RoundEvent)]
    assert [e.epsilon_spent for e in again] == [e.epsilon_spent for e in ends]
    assert [e.accuracy for e in again] == [e.accuracy for e in ends]


def test_a_deferred_ledger_entry_holds_host_copies_of_the_rounds_tensors():
    """``on_host``: the entry made while the device evaluates reads no device memory (no wait on the pass);
    tuples, dicts and a ``GaussianRecord`` keep their shape and values."""
    from fedcore.accounting import GaussianRecord
    from fedcore.engine.rounds import on_host

    device = "cuda" if torch.cuda.is_available() else "cpu"
    record = GaussianRecord(torch.tensor([1.5, 2.0], device=device), 0.1, torch.tensor(3, device=device),
                            torch.tensor([4, 7], device=device), grid=True)
    fields = (torch.tensor([4, 7], device=device), None, record, {"claim": torch.ones(2, device=device)}, 0.5)
    ids, none, rec, claims, half = on_host(fields)
    assert ids.device.type == "cpu" and ids.tolist() == [4, 7] and none is None and half == 0.5
    assert isinstance(rec, GaussianRecord) and rec.grid and rec.sample_rate == 0.1
    assert all(t.device.type == "cpu" for t in (rec.noise_multiplier, rec.steps, rec.clients, claims["claim"]))
    assert rec.noise_multiplier.tolist() == [1.5, 2.0] and rec.clients.tolist() == [4, 7]


@pytest.mark.parametrize("preset, overrides", [("demo", {"rounds": 5, "eval_every": 2}),
                                               ("uldp_recall_digits", {"rounds": 4})])
def test_a_pipelined_run_gives_the_same_events_and_stops_where_asked(preset, overrides, monkeypatch):
    """On a GPU (:func:`fedcore.engine.loop.pipelined`) round t's ledger entry and event wait until round t + 1's
    training is queued; the events are those of the plain order, field for field, and a stop polled before
    round 3 ends the run after round 2, with both rounds' events out. Forced here on the CPU."""
    from fedcore.engine import loop

    cfg = preset_config(preset).with_overrides(overrides)
    timing = {"seconds", "elapsed"}

    def rounds(events):
        return [{k: v for k, v in to_dict(e).items() if k not in timing} for e in events if isinstance(e, RoundEvent)]

    plain = list(iter_run(cfg))
    monkeypatch.setattr(loop, "pipelined", lambda device, outbox: outbox.may_go_ahead)
    ahead = list(iter_run(cfg))
    assert rounds(ahead) == rounds(plain) and len(rounds(ahead)) == cfg.rounds
    assert all(e.seconds > 0 for e in ahead if isinstance(e, RoundEvent))
    assert {k: v for k, v in to_dict(ahead[-1]).items() if k not in timing} == \
        {k: v for k, v in to_dict(plain[-1]).items() if k not in timing}
    calls = iter([False, False, True])
    stopped = list(iter_run(cfg, should_stop=lambda: next(calls)))
    assert stopped[-1].status == "stopped" and stopped[-1].rounds_done == 2
    assert rounds(stopped) == rounds(plain)[:2]


def test_a_pipelined_round_that_fails_still_lets_the_rounds_before_it_out(monkeypatch):
    """A failure while round 3 trains: round 2's entry and event, still pending (pipelined), come out before it."""
    from fedcore.engine import local_round as local_mod
    from fedcore.engine import loop

    monkeypatch.setattr(loop, "pipelined", lambda device, outbox: outbox.may_go_ahead)
    real = local_mod.LocalRounds.__call__

    def failing(self, rnd, rng, global_flat):
        if rnd == 3:
            raise RuntimeError("round 3 failed")
        return real(self, rnd, rng, global_flat)

    monkeypatch.setattr(local_mod.LocalRounds, "__call__", failing)
    seen = []
    with pytest.raises(RuntimeError, match="round 3 failed"):
        for event in iter_run(preset_config("demo").with_overrides({"rounds": 5})):
            seen.append(event)
    assert [e.round for e in seen if isinstance(e, RoundEvent)] == [1, 2]
    assert all(e.epsilon_headline for e in seen if isinstance(e, RoundEvent))
