"""The informed adversary's closed-form candidates (fully connected models) pick the same
candidate as the written-out per-example gradients, and score them alike."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fedcore.attacks.informed import CandidatePool, DenseCandidates, LayerCandidates, candidate_updates
from fedcore.models import build_model


def _setup(name: str, n: int, seed: int = 0):
    torch.manual_seed(seed)
    model = build_model(name, (1, 8, 8), 10)
    params = {k: v.detach() + 0.1 * torch.randn_like(v) for k, v in model.named_parameters()}
    return model, params, torch.rand(n, 1, 8, 8), torch.randint(0, 10, (n,))


def _pool(model, params, x, y, sizes: list[int]) -> CandidatePool:
    """Blocks of ``sizes`` consecutive rows, padded with each block's first row."""
    starts = np.cumsum([0, *sizes[:-1]])
    width = max(sizes)
    padded = torch.as_tensor([[s + (j if j < n else 0) for j in range(width)] for s, n in zip(starts, sizes)])
    return CandidatePool(model, params, x, y, padded, sizes)


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_closed_form_candidates_match_the_per_example_gradients(name):
    model, params, x, y = _setup(name, 50)
    dense = candidate_updates(model, params, x, y)
    pool = _pool(model, params, x, y, [50])
    layered = pool.at([pool.host(params)], [[0]])
    assert isinstance(layered, LayerCandidates)
    np.testing.assert_allclose(layered.norms[0, 0], dense.norm(dim=1).numpy(), rtol=1e-4, atol=1e-6)
    own = torch.stack([dense[j] + 0.02 * dense[j].norm() * torch.randn_like(dense[j]) / dense.shape[1] ** 0.5
                       for j in (3, 17, 41)])   # a candidate's own update, noised, is recognised by both
    assert layered.best(own.numpy(), [0, 0, 0]) == DenseCandidates(dense, [50]).best(own, [0, 0, 0]) == [3, 17, 41]
    anything = torch.randn(5, dense.shape[1])   # and any direction scores the same candidate first
    assert layered.best(anything, [0] * 5) == DenseCandidates(dense, [50]).best(anything, [0] * 5)


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_each_received_update_is_matched_within_its_own_clients_block(name):
    model, params, x, y = _setup(name, 30, seed=1)
    dense = candidate_updates(model, params, x, y)
    sizes = [10, 5, 15]                          # three clients' candidates, of unequal counts (padding masked)
    pool = _pool(model, params, x, y, sizes)
    batch = pool.at([pool.host(params)], [[0, 1, 2]])
    assert isinstance(batch, LayerCandidates)
    received = torch.stack([dense[25], dense[2], dense[12]])   # client 2's 11th, client 0's 3rd, client 1's 3rd
    assert batch.best(received, [2, 0, 1]) == [10, 2, 2]
    assert batch.best(received[1:], [0, 1]) == [2, 2]           # a subset of the blocks
    assert DenseCandidates(dense, sizes).best(received, [2, 0, 1]) == [10, 2, 2]
    assert batch.best(received[:0], []) == []


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_rounds_computed_together_guess_as_each_round_alone(name):
    model, params, x, y = _setup(name, 30, seed=2)
    later = {k: v + 0.3 * torch.randn_like(v) for k, v in params.items()}   # the next round's model
    pool = _pool(model, params, x, y, [10, 20])
    both = pool.at([pool.host(params), pool.host(later)], [[0, 1], [0, 1]])
    received = np.random.default_rng(0).standard_normal((4, sum(v.numel() for v in params.values())), dtype=np.float32)
    blocks, rounds = [0, 1, 1, 0], [0, 0, 1, 1]
    alone = [pool.at([pool.host(p)], [[0, 1]]).best(received[[i]], [blocks[i]])[0]
             for i, p in enumerate([params, params, later, later])]
    assert both.best(received, blocks, rounds) == alone
    assert alone != [pool.at([pool.host(params)], [[0, 1]]).best(received[[i]], [blocks[i]])[0] for i in range(4)]


def test_a_conv_model_falls_back_to_the_written_out_updates():
    cnn = build_model("lenet5", (1, 28, 28), 10)
    params = {k: v.detach() for k, v in cnn.named_parameters()}
    x, y = torch.rand(6, 1, 28, 28), torch.arange(6) % 10
    pool = _pool(cnn, params, x, y, [2, 4])
    assert pool.layers is None
    dense = candidate_updates(cnn, params, x, y)
    got = pool.at([params], [[1]])               # block 1 only: rows 2-5
    assert not isinstance(got, LayerCandidates)
    assert got.best(dense[[4]], [1]) == [2]
