"""The clients' gradients without vmap (fedcore/engine/stacked.py) are bitwise those of the vmap path."""
import pytest
import torch

from fedcore.config import LocalConfig
from fedcore.engine import local, stacked
from fedcore.engine.plan import make_plan, pad_client_indices
from fedcore.models import build_model

MODELS = [("cnn_uldp", (1, 28, 28)), ("cnn_kdp", (1, 28, 28)), ("cnn_ldpfl", (1, 28, 28)),
          ("lenet5", (1, 28, 28)), ("vgg_small", (3, 32, 32)), ("logreg", (64,)), ("mlp", (1, 8, 8))]


def _vmap_only(monkeypatch):
    monkeypatch.setattr(local, "stackable", lambda model: False)


@pytest.mark.parametrize("name, shape", MODELS)
def test_gradients_are_bitwise_those_of_vmap(name, shape, monkeypatch):
    torch.manual_seed(0)
    model = build_model(name, shape, 10)
    assert stacked.supports(model)
    base = {k: v.detach() for k, v in model.named_parameters()}
    shapes = {k: tuple(v.shape) for k, v in base.items()}
    m, batch = 4, 5
    flat = torch.cat([v.reshape(-1) for v in base.values()]).repeat(m, 1)
    flat += 0.05 * torch.randn_like(flat)              # every client its own weights
    x, y = torch.randn(m, batch, *shape), torch.randint(0, 10, (m, batch))
    mask = (torch.rand(m, batch) > 0.3).float()
    mask[2] = 0                                        # a client without samples at this step
    params = {k: part.view(m, *shapes[k]) for k, part in zip(shapes, flat.split([v.numel() for v in base.values()], 1))}
    ours = local.client_gradient_fn(model)
    got = ours(params, {}, x, y, mask)
    _vmap_only(monkeypatch)
    want = local.client_gradient_fn(model)(params, {}, x, y, mask)
    assert list(got) == list(want) and all(torch.equal(got[k], want[k]) for k in want)
    assert all(float(g.abs().sum()) > 0 and float(g[2].abs().sum()) == 0 for g in got.values())


@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_local_training_is_bitwise_that_of_vmap(optimizer, monkeypatch):
    model = build_model("cnn_uldp", (1, 28, 28), 10)
    start = {k: v.detach() for k, v in model.named_parameters()}
    x, y = torch.randn(120, 1, 28, 28), torch.randint(0, 10, (120,))
    counts, offset, indices = [0, 9, 30, 17, 4, 25], 0, []
    for c in counts:
        indices.append(torch.arange(offset, offset + c))
        offset += c
    padded, cnt = pad_client_indices(indices, torch.device("cpu"))
    cfg = LocalConfig(epochs=2, batch_size=8, lr=0.1, optimizer=optimizer,
                      momentum=0.9 if optimizer == "momentum" else 0.0, weight_decay=0.01)
    plan = make_plan(padded, cnt, cfg, torch.Generator().manual_seed(1))
    got = local.train_clients(model, start, x, y, plan, cfg, chunk=4)
    _vmap_only(monkeypatch)
    want = local.train_clients(model, start, x, y, plan, cfg, chunk=4)
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_other_models_keep_vmap():
    model = build_model("cnn_uldp", (1, 28, 28), 10)
    model.features.pool1 = torch.nn.AvgPool2d(2)
    assert not stacked.supports(model)
    assert not stacked.supports(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2)))
