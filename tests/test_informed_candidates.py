"""The informed adversary's closed-form candidates (fully connected models) pick the same
candidate as the written-out per-example gradients, and score them alike."""
from __future__ import annotations

import pytest
import torch

from fedcore.attacks.informed import (DenseCandidates, LayerCandidates, candidate_updates, candidates,
                                      layer_candidates)
from fedcore.models import build_model


def _setup(name: str, n: int, seed: int = 0):
    torch.manual_seed(seed)
    model = build_model(name, (1, 8, 8), 10)
    params = {k: v.detach() + 0.1 * torch.randn_like(v) for k, v in model.named_parameters()}
    return model, params, torch.rand(n, 1, 8, 8), torch.randint(0, 10, (n,))


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_closed_form_candidates_match_the_per_example_gradients(name):
    model, params, x, y = _setup(name, 50)
    dense = candidate_updates(model, params, x, y)
    layered = layer_candidates(model, params, x, y)
    assert isinstance(layered, LayerCandidates)
    torch.testing.assert_close(layered.norms, dense.norm(dim=1), rtol=1e-4, atol=1e-6)
    own = torch.stack([dense[j] + 0.02 * dense[j].norm() * torch.randn_like(dense[j]) / dense.shape[1] ** 0.5
                       for j in (3, 17, 41)])   # a candidate's own update, noised, is recognised by both
    assert layered.best(own, [0, 0, 0]) == DenseCandidates(dense, [50]).best(own, [0, 0, 0]) == [3, 17, 41]
    anything = torch.randn(5, dense.shape[1])   # and any direction scores the same candidate first
    assert layered.best(anything, [0] * 5) == DenseCandidates(dense, [50]).best(anything, [0] * 5)


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_each_received_update_is_matched_within_its_own_clients_block(name):
    model, params, x, y = _setup(name, 30, seed=1)
    dense = candidate_updates(model, params, x, y)
    sizes = [10, 5, 15]                          # three clients' candidates, of unequal counts
    batch = candidates(model, params, x, y, sizes)
    assert isinstance(batch, LayerCandidates)
    received = torch.stack([dense[25], dense[2], dense[12]])   # client 2's 11th, client 0's 3rd, client 1's 3rd
    assert batch.best(received, [2, 0, 1]) == [10, 2, 2]
    assert DenseCandidates(dense, sizes).best(received, [2, 0, 1]) == [10, 2, 2]
    assert batch.best(received[:0], []) == []


def test_a_conv_model_falls_back_to_the_written_out_updates():
    cnn = build_model("lenet5", (1, 28, 28), 10)
    params = {k: v.detach() for k, v in cnn.named_parameters()}
    x, y = torch.rand(4, 1, 28, 28), torch.zeros(4, dtype=torch.long)
    assert layer_candidates(cnn, params, x, y) is None
    assert isinstance(candidates(cnn, params, x, y, [4]), DenseCandidates)
