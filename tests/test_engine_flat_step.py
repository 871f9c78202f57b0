"""Issue 41: unclipped steps taken chunk by chunk on the rows of the ``[m, d]`` buffer
(``grad_fn.unclipped``: :func:`fedcore.engine.local.flat_step`) give the parameters of the
step-by-step path over all clients."""
import numpy as np
import pytest
import torch

from fedcore.config import LocalConfig
from fedcore.engine.local import client_gradient_fn, train_clients
from fedcore.engine.plan import BatchPlan, make_plan, pad_client_indices
from fedcore.models import build_model


def _clients(sizes, seed=0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(sum(sizes))
    return np.split(perm, np.cumsum(sizes)[:-1])


def _per_layer(model):
    """The gradient function without its mark: train_clients takes the step-by-step path."""
    fn = client_gradient_fn(model)
    return lambda *a: fn(*a)


CASES = [
    ("logreg", (1, 8, 8), LocalConfig(epochs=2, batch_size=7, lr=0.3), None, False),
    ("mlp", (1, 8, 8), LocalConfig(epochs=1, batch_size=5, lr=0.1, optimizer="momentum", momentum=0.9,
                                   weight_decay=1e-3), 2, False),
    ("cnn_uldp", (1, 28, 28), LocalConfig(epochs=1, batch_size=8, lr=0.05), None, False),
    ("cnn_uldp", (1, 28, 28), LocalConfig(epochs=1, batch_size=8, lr=0.05), 3, False),
    ("logreg", (1, 8, 8), LocalConfig(steps=6, batch_size=4, lr=0.2), None, True),     # Poisson batches
    ("mlp", (1, 8, 8), LocalConfig(epochs=2, batch_size=4, lr=0.1, optimizer="momentum", momentum=0.5), None, False),
]


@pytest.mark.parametrize("model_name, shape, local, chunk, poisson", CASES)
def test_flat_step_gives_the_per_layer_parameters(model_name, shape, local, chunk, poisson):
    torch.manual_seed(0)
    sizes = [13, 30, 7, 21]   # unequal: padding, partial batches, clients that idle
    x = torch.randn(sum(sizes), *shape)
    y = torch.randint(0, 10, (sum(sizes),))
    model = build_model(model_name, shape, 10)
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    padded, counts = pad_client_indices(_clients(sizes), "cpu")
    plan = make_plan(padded, counts, local, torch.Generator().manual_seed(1), poisson=poisson)
    fused = client_gradient_fn(model)
    assert fused.unclipped
    flat = train_clients(model, start, x, y, plan, local, grad_fn=fused, chunk=chunk)
    layered = train_clients(model, start, x, y, plan, local, grad_fn=_per_layer(model), chunk=chunk)
    for k in start:
        assert not torch.equal(flat[k], start[k].expand_as(flat[k]))          # it trained
        assert (flat[k] - layered[k]).abs().max().item() <= 1e-6, k


def test_flat_step_follows_a_hand_built_plan_that_is_no_prefix():
    """Active steps that are no prefix of the rows: every step masked (``torch.where``), flat too."""
    torch.manual_seed(1)
    x, y = torch.randn(12, 1, 8, 8), torch.randint(0, 10, (12,))
    model = build_model("logreg", (1, 8, 8), 10)
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    index = torch.arange(12).view(3, 2, 2)
    mask = torch.ones(3, 2, 2)
    active = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    plan = BatchPlan(index, mask, active)
    local = LocalConfig(steps=2, batch_size=2, lr=0.5, optimizer="momentum", momentum=0.9)
    flat = train_clients(model, start, x, y, plan, local, grad_fn=client_gradient_fn(model))
    layered = train_clients(model, start, x, y, plan, local, grad_fn=_per_layer(model))
    for k in start:
        assert (flat[k] - layered[k]).abs().max().item() <= 1e-6, k
