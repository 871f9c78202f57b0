"""Issue 41 §3: local steps from static buffers (:mod:`fedcore.engine.graphs`), the step a CUDA graph
captures: DP-SGD's at a padded width, unclipped ones with the clients padded to a multiple of
``ROWS_QUANTUM``. On CPU the same padded steps run eagerly; on a GPU the captured replay is checked
against them bit for bit."""
import pytest
import torch

from fedcore.engine import graphs as graphs_mod
from fedcore.engine.flat import flatten, flatten_stacked
from fedcore.engine.evaluate import evaluate
from fedcore.engine.local import client_gradient_fn, train_clients
from fedcore.engine.plan import make_plan
from fedcore.engine.setup import prepare
from fedcore.layering import build_config


DP_SGD = ("privacy.mechanism=dp_sgd", "privacy.aggregator=fedavg", "privacy.epsilon=[5.0]", "privacy.delta=[1e-5]")
UNCLIPPED = ("method=fedavg", "local.optimizer=momentum", "local.momentum=0.9", "local.weight_decay=0.001")


def _setup(device: str, batching: str, data: tuple = ("dataset=digits", "model=mlp"), method: tuple = DP_SGD):
    cfg = build_config(None, None, [*data, "num_clients=12", "partition.kind=iid",
                                    "rounds=2", "local.steps=3", "local.batch_size=8", "local.lr=0.05", *method,
                                    *([f"privacy.mechanism_options.batching={batching}"] if method == DP_SGD else []),
                                    f"device={device}"])
    s = prepare(cfg)
    sel = torch.arange(12, device=s.device)
    plan = make_plan(s.padded[sel], s.counts[sel], cfg.local, torch.Generator(device=s.device).manual_seed(3),
                     s.mechanism.poisson_batches)
    return cfg, s, plan, s.mechanism.step_noise_std(sel), client_gradient_fn(s.model, s.mechanism.per_sample_clip)


def _train(cfg, s, plan, noise, grad_fn, graphs=None, gen=None):
    gen = gen if gen is not None else torch.Generator(device=s.device)
    gen.manual_seed(11)
    return flatten_stacked(train_clients(s.model, s.params, s.x_train, s.y_train, plan, cfg.local, grad_fn=grad_fn,
                                         noise_std=noise, gen=gen, graphs=graphs)).clone()


def test_full_width_steps_from_static_buffers_are_the_eager_steps_bit_for_bit():
    """Fixed batches of 8 (a multiple of the width quantum): nothing is padded, the same arithmetic."""
    cfg, s, plan, noise, grad_fn = _setup("cpu", "shuffle")
    assert noise is not None and plan.expected is None
    graphs = graphs_mod.StepGraphs(capture=False)
    assert torch.equal(_train(cfg, s, plan, noise, grad_fn, graphs), _train(cfg, s, plan, noise, grad_fn))
    assert len(graphs.steps) == 1


def test_poisson_steps_padded_to_one_width_agree_with_the_eager_steps():
    """Poisson batches of changing widths, padded to one: padding adds zero terms only."""
    cfg, s, plan, noise, grad_fn = _setup("cpu", "poisson")
    assert plan.expected is not None
    graphs = graphs_mod.StepGraphs(capture=False)
    padded, eager = _train(cfg, s, plan, noise, grad_fn, graphs), _train(cfg, s, plan, noise, grad_fn)
    key = next(iter(graphs.steps))
    assert key[1] % graphs_mod.WIDTH_QUANTUM == 0 and key[1] >= plan.index.shape[2]
    assert torch.allclose(padded, eager, rtol=1e-5, atol=1e-6), (padded - eager).abs().max()
    assert not torch.equal(padded, s.params[next(iter(s.params))].new_zeros(1))   # it trained


def test_unclipped_steps_with_padded_clients_are_the_eager_steps_bit_for_bit():
    """12 clients padded to 16 (rows that are masked out), momentum and weight decay: each client's
    arithmetic is its own, so the padding changes nothing."""
    cfg, s, plan, noise, grad_fn = _setup("cpu", "shuffle", method=UNCLIPPED)
    assert noise is None and grad_fn.unclipped
    graphs = graphs_mod.StepGraphs(capture=False)
    padded, eager = _train(cfg, s, plan, noise, grad_fn, graphs), _train(cfg, s, plan, noise, grad_fn)
    assert [key[0] for key in graphs.steps] == [graphs_mod.ROWS_QUANTUM]
    assert torch.equal(padded, eager) and not torch.equal(padded, flatten(s.params).expand_as(padded))


def test_steps_too_big_for_a_graph_train_eagerly(monkeypatch):
    cfg, s, plan, noise, grad_fn = _setup("cpu", "shuffle", method=UNCLIPPED)
    monkeypatch.setattr(graphs_mod, "GRAPH_BYTES", 1000)
    graphs = graphs_mod.StepGraphs(capture=False)
    assert torch.equal(_train(cfg, s, plan, noise, grad_fn, graphs), _train(cfg, s, plan, noise, grad_fn))
    assert not graphs.steps


def test_graphs_are_used_on_cuda_only_unless_turned_off(monkeypatch):
    assert not graphs_mod.enabled(torch.device("cpu"))
    assert graphs_mod.enabled(torch.device("cuda"))
    monkeypatch.setenv(graphs_mod.GRAPHS_ENV, "off")
    assert not graphs_mod.enabled(torch.device("cuda"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_replayed_graph_is_the_padded_eager_step_bit_for_bit_on_a_gpu():
    """W4's model on MNIST (what a device has; digits needs scikit-learn)."""
    cfg, s, plan, noise, grad_fn = _setup("cuda", "poisson", ("dataset=mnist", "model=cnn_uldp", "train_size=2000",
                                                              "test_size=500"))
    graphs, gen = graphs_mod.StepGraphs(), torch.Generator(device="cuda")
    replayed = _train(cfg, s, plan, noise, grad_fn, graphs, gen)
    assert graphs.broken is None and graphs.replays == plan.steps
    again = _train(cfg, s, plan, noise, grad_fn, graphs, gen)       # the same graph, replayed again
    eager = _train(cfg, s, plan, noise, grad_fn, graphs_mod.StepGraphs(capture=False))
    assert graphs.replays == 2 * plan.steps and len(graphs.steps) == 1
    assert torch.equal(replayed, eager) and torch.equal(again, eager)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_replayed_unclipped_steps_are_the_padded_eager_steps_bit_for_bit_on_a_gpu():
    """W3's model and method (DSDP-FedAvg's clients train unclipped) on MNIST."""
    cfg, s, plan, noise, grad_fn = _setup("cuda", "shuffle", ("dataset=mnist", "model=cnn_uldp", "train_size=2000",
                                                              "test_size=500"), UNCLIPPED)
    graphs = graphs_mod.StepGraphs()
    replayed = _train(cfg, s, plan, noise, grad_fn, graphs)
    assert graphs.broken is None and graphs.replays == plan.steps
    eager_padded = _train(cfg, s, plan, noise, grad_fn, graphs_mod.StepGraphs(capture=False))
    eager = _train(cfg, s, plan, noise, grad_fn)
    assert torch.equal(replayed, eager_padded)
    assert torch.allclose(replayed, eager, rtol=1e-5, atol=1e-6), (replayed - eager).abs().max()


def _two_evaluations(device: str, graphs):
    """The test pass of two different parameter sets (the second copied into the same buffers)."""
    cfg, s, *_ = _setup(device, "shuffle", ("dataset=mnist", "model=cnn_uldp", "train_size=600", "test_size=300")
                        if device == "cuda" else ("dataset=digits", "model=mlp"), UNCLIPPED)
    other = {k: v + 0.1 * torch.randn_like(v) for k, v in s.params.items()}
    return [evaluate(s.model, p, s.x_test, s.y_test, chunk=128, graphs=graphs) for p in (s.params, other)]


def test_an_evaluation_through_static_buffers_is_the_eager_one():
    graphs = graphs_mod.StepGraphs(capture=False)
    torch.manual_seed(0)
    got = _two_evaluations("cpu", graphs)
    torch.manual_seed(0)
    assert got == _two_evaluations("cpu", None) and got[0] != got[1] and len(graphs.tests) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_replayed_evaluation_is_the_eager_one_on_a_gpu():
    graphs = graphs_mod.StepGraphs()
    torch.manual_seed(0)
    got = _two_evaluations("cuda", graphs)
    torch.manual_seed(0)
    assert got == _two_evaluations("cuda", None) and got[0] != got[1]
    assert graphs.eval_broken is None and graphs.replays == 2


def test_an_evaluation_whose_activations_pass_the_limit_runs_eagerly(monkeypatch):
    monkeypatch.setattr(graphs_mod, "GRAPH_BYTES", 1000)
    graphs = graphs_mod.StepGraphs(capture=False)
    torch.manual_seed(0)
    got = _two_evaluations("cpu", graphs)
    torch.manual_seed(0)
    assert got == _two_evaluations("cpu", None) and list(graphs.tests.values()) == [None]
