"""Issue 41, Build 4 (bounded memory at scale): a round whose ``[m, d]`` buffer passes the memory
budget is trained, privatized and summed block by block (:mod:`fedcore.engine.stream`) and ends
where the dense round ends, up to the sum's rounding, with the same event fields; a round below
the budget, or one the blocks cannot give, keeps the dense round."""
import pytest
import torch

import fedcore.engine.local_round as loop_mod   # where a round goes block by block
import fedcore.engine.stream as stream_mod
from fedcore.config import LocalConfig, RunConfig
from fedcore.engine import iter_run
from fedcore.engine.setup import prepare
from fedcore.engine.stream import STREAM_BYTES, STREAM_ENV, block_rows, stream_budget
from fedcore.events import RoundEvent
from fedcore.mechanisms.none import NoMechanism
from fedcore.models import build_model

D_MLP = sum(p.numel() for p in build_model("mlp", (1, 8, 8), 10).parameters())


@pytest.fixture
def blocks(monkeypatch):
    """The ``rows`` argument of every streamed round (empty: every round went dense)."""
    seen = []
    real = loop_mod.stream_round

    def spy(*args):
        seen.append(args[-1])
        return real(*args)

    monkeypatch.setattr(loop_mod, "stream_round", spy)
    return seen


def _run(cfg):
    """``(round events, final global parameters)`` of ``cfg``."""
    s = prepare(cfg)
    events = [e for e in iter_run(cfg, setup=s) if isinstance(e, RoundEvent)]
    return events, s.params


def _relative(a: dict, b: dict) -> float:
    num = sum(float((a[k] - b[k]).double().pow(2).sum()) for k in a)
    return (num / sum(float(b[k].double().pow(2).sum()) for k in b)) ** 0.5


def _fields(e: RoundEvent) -> tuple:
    return (e.selected, e.uploaded, e.weights, e.signals, e.epsilon_spent, [vars(x) for x in e.events], e.aggregated)


@pytest.mark.parametrize("aggregator", ["fedavg", "mean", "weighted"])
@pytest.mark.parametrize("budget_rows, share, slice_rows", [(0, 8, 1), (6, 2, 2), (6, 1, 4)])
def test_a_round_above_the_budget_streams_and_ends_where_the_dense_round_ends(
        monkeypatch, blocks, aggregator, budget_rows, share, slice_rows):
    cfg = RunConfig(model="mlp", num_clients=16, rounds=3, seed=5, participation=0.8, sampling="poisson",
                    local=LocalConfig(epochs=1, batch_size=8, lr=0.2, optimizer="momentum", momentum=0.9))
    cfg = cfg.with_overrides({"partition.kind": "dirichlet", "partition.alpha": 0.5,
                              "privacy.aggregator": aggregator})
    dense_events, dense = _run(cfg)
    assert blocks == []                                        # the default budget: dense
    monkeypatch.setenv(STREAM_ENV, str(budget_rows * 4 * D_MLP))
    monkeypatch.setattr(stream_mod, "BLOCK_SHARE", share)
    monkeypatch.setattr(stream_mod, "SLICE_BYTES", slice_rows * 4 * D_MLP)
    events, streamed = _run(cfg)
    sizes = [len(e.selected) for e in events]
    assert len(blocks) == sum(m > budget_rows for m in sizes) >= 2   # every round above the budget streamed
    assert set(blocks) == {max(1, budget_rows // share)}
    assert [_fields(e) for e in events] == [_fields(e) for e in dense_events]
    assert 0 < _relative(streamed, dense) < 1e-6               # the sum's rounding, nothing more
    assert [e.accuracy for e in events] == pytest.approx([e.accuracy for e in dense_events], abs=0.01)


@pytest.mark.parametrize("overrides", [
    {"privacy.mechanism": "gaussian"},                          # draws its noise for all rows at once
    {"privacy.aggregator": "kalman"},                           # not a weighted sum
    {"privacy.aggregator": "uldp"},                             # a subclass of fedavg: may do more
    {"privacy.mechanism": "dp_sgd"},                            # per-step noise
])
def test_rounds_the_blocks_cannot_give_stay_dense_under_any_budget(monkeypatch, blocks, overrides):
    from fedcore.layering import build_config

    sets = [f"{k}={v}" for k, v in {"model": "mlp", "num_clients": 6, "rounds": 1, **overrides}.items()]
    cfg = build_config(None, None, sets)
    monkeypatch.setenv(STREAM_ENV, "0")
    events, _ = _run(cfg)
    assert blocks == [] and len(events) == 1 and events[0].aggregated


def test_a_streaming_mechanism_that_breaks_its_promise_is_refused(monkeypatch):
    real = NoMechanism.privatize

    def with_signal(self, updates, clients, round, gen):
        upload = real(self, updates, clients, round, gen)
        upload.signals = {"mean": float(updates.mean())}    # a mean over the block, not the round
        return upload

    monkeypatch.setattr(NoMechanism, "privatize", with_signal)
    monkeypatch.setenv(STREAM_ENV, "0")
    with pytest.raises(RuntimeError, match="block by block"):
        _run(RunConfig(model="mlp", num_clients=4, rounds=1))


def test_blocks_are_whole_training_chunks_within_an_eighth_of_the_budget():
    row = 4 * 1000
    assert block_rows(10**6, row, 2**30, None) == 2**30 // (8 * row) == 33554  # a GPU: the budget alone
    assert block_rows(10**6, row, 2**30, 100) == 33500                         # CPU: whole chunks of 100
    assert block_rows(5000, row, 8 * 250 * row, 100) == 200
    assert block_rows(5000, row, 8 * 50 * row, 100) == 50                       # less than a chunk: as it is
    assert block_rows(5000, row, 0, 100) == 1
    assert block_rows(30, row, 2**30, 100) == 30


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(STREAM_ENV, raising=False)
    assert stream_budget() == STREAM_BYTES == 2**30
    monkeypatch.setenv(STREAM_ENV, " 4096 ")
    assert stream_budget() == 4096
    for bad in ("1GiB", "-1"):
        monkeypatch.setenv(STREAM_ENV, bad)
        with pytest.raises(ValueError, match=STREAM_ENV):
            stream_budget()
