"""Issue 41, Build 4: clients trained chunk by chunk within a memory budget give the parameters of
one vmap over all of them; the start written to a chunk's rows as it begins gives those of the
start written to every row before training."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import fedcore.engine.local as local_mod
import fedcore.engine.local_round as loop_mod   # where a round picks its chunk
from fedcore.config import LocalConfig, RunConfig
from fedcore.engine import iter_run
from fedcore.engine.local import CPU_ROWS_BYTES, client_chunk, train_clients
from fedcore.engine.memory import keep_freed
from fedcore.engine.plan import BatchPlan
from fedcore.engine.setup import prepare
from fedcore.events import RoundEvent
from fedcore.models import build_model


def _final(cfg):
    """``(accuracies, final global parameters)`` of ``cfg`` run through :func:`iter_run`."""
    s = prepare(cfg)
    accs = [e.accuracy for e in iter_run(cfg, setup=s) if isinstance(e, RoundEvent)]
    return accs, s.params


@pytest.mark.parametrize("local", [
    LocalConfig(epochs=2, batch_size=8, lr=0.1),
    LocalConfig(epochs=1, batch_size=4, lr=0.1, optimizer="momentum", momentum=0.9, weight_decay=1e-3),
])
def test_a_run_chunked_under_a_small_budget_equals_one_vmap_over_all_clients(monkeypatch, local):
    cfg = RunConfig(model="mlp", num_clients=12, rounds=2, local=local, seed=4)
    whole_accs, whole = _final(cfg)                               # default budget: one chunk of 12
    d = sum(v.numel() for v in whole.values())
    assert client_chunk(build_model("mlp", (1, 8, 8), 10), (1, 8, 8), local.batch_size) >= 12
    monkeypatch.setattr(local_mod, "CPU_ROWS_BYTES", 5 * 4 * d)   # room for 5 clients' rows
    chunks = []
    monkeypatch.setattr(loop_mod, "client_chunk", lambda *a: chunks.append(local_mod.client_chunk(*a)) or chunks[-1])
    accs, chunked = _final(cfg)
    assert chunks == [5]                                          # 12 clients in chunks of 5, 5, 2
    assert accs == whole_accs
    for k in whole:
        assert torch.equal(chunked[k], whole[k]), k


def test_the_chunk_keeps_the_clients_rows_within_the_budget():
    mlp = build_model("mlp", (1, 28, 28), 10)
    d = sum(p.numel() for p in mlp.parameters())
    chunk = client_chunk(mlp, (1, 28, 28), 32)
    assert chunk == CPU_ROWS_BYTES // (4 * d) and 4 * d * (chunk + 1) > CPU_ROWS_BYTES
    logreg = build_model("logreg", (1, 28, 28), 10)   # small rows: the activations decide, as before
    assert client_chunk(logreg, (1, 28, 28), 32) == local_mod.CPU_CHUNK_BYTES // (4 * 32 * (28 * 28 + 10))


@pytest.mark.parametrize("chunk", [None, 1, 2])
@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_the_start_written_chunk_by_chunk_equals_the_start_written_first(chunk, optimizer):
    """Rows that never train keep the start (a prefix plan: client 2 takes no step, client 1 one of
    two); ``stacked_start`` writes every row before the first step."""
    torch.manual_seed(2)
    x, y = torch.randn(12, 1, 8, 8), torch.randint(0, 10, (12,))
    model = build_model("mlp", (1, 8, 8), 10)
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    plan = BatchPlan(torch.arange(12).view(3, 2, 2), torch.ones(3, 2, 2),
                     torch.tensor([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    local = LocalConfig(steps=2, batch_size=2, lr=0.5, optimizer=optimizer, momentum=0.9, weight_decay=1e-2)
    shared = train_clients(model, start, x, y, plan, local, chunk=chunk)
    copied = train_clients(model, {k: v.unsqueeze(0).expand(3, *v.shape) for k, v in start.items()},
                           x, y, plan, local, chunk=chunk, stacked_start=True)
    for k in start:
        assert torch.equal(shared[k], copied[k]), k
        assert torch.equal(shared[k][2], start[k])                # never trained
        assert not torch.equal(shared[k][0], start[k])


_FAULTS = """
import resource, sys, torch
from fedcore.engine.local import CPU_ROWS_BYTES
from fedcore.engine.memory import keep_freed
kept = keep_freed(2 * CPU_ROWS_BYTES) if sys.argv[1] == "kept" else False
n = CPU_ROWS_BYTES // 4                                       # one chunk's rows, freed at once
torch.empty(n).fill_(1.0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    torch.empty(n).fill_(1.0)
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    """(whether the blocks were kept, page faults of five chunk-sized allocations) in a fresh
    interpreter: a test process's heap, shaped by the tests before, is no measure."""
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and Linux fault counts")
def test_blocks_freed_by_one_chunk_are_reused_by_the_next():
    pages = CPU_ROWS_BYTES // 4096                                # what one chunk-sized block costs afresh
    kept, faults = _faults("kept")
    assert kept == "True" and faults < 3 * pages                  # most of the five reuse a freed block
    assert _faults("default")[1] >= 4.5 * pages                   # without it, every one pays its pages
