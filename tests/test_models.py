"""Specification of fedcore.models: shapes, refusals, vmap-compatibility, sizes and FLOPs."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch.func import functional_call, grad, stack_module_state, vmap

from fedcore.errors import ConfigError
from benchmarks.dp_sgd_clipping import materialised_clipped_grad
from fedcore.engine.local import client_gradient_fn
from fedcore.models import MODELS, build_model, count_flops, has_batch_norm, num_parameters

DIGITS, MNIST, CIFAR, COVTYPE = (1, 8, 8), (1, 28, 28), (3, 32, 32), (54,)
ALL_SHAPES = (DIGITS, MNIST, CIFAR, COVTYPE)
IMAGES = (DIGITS, MNIST, CIFAR)

SUPPORTED = {
    "logreg": ALL_SHAPES,
    "mlp": ALL_SHAPES,
    "cnn_kdp": IMAGES,
    "cnn_ldpfl": IMAGES,
    "vgg_small": IMAGES,
    "resnet18": IMAGES,
    "cnn_uldp": (MNIST, CIFAR),  # unpadded 5x5 stack: needs 16x16
    "lenet5": (MNIST, CIFAR),
}

# The dataset each model is trained on in its paper; used for the vmap checks.
NATURAL_SHAPE = {
    "logreg": MNIST,
    "mlp": MNIST,
    "cnn_kdp": MNIST,
    "cnn_ldpfl": MNIST,
    "cnn_uldp": MNIST,
    "lenet5": CIFAR,
    "vgg_small": CIFAR,
    "resnet18": CIFAR,
}


def test_every_registered_model_is_covered_and_documented():
    assert set(MODELS.names()) == set(SUPPORTED) == set(NATURAL_SHAPE)
    for entry in MODELS.entries():
        assert entry.summary and "\n" not in entry.summary
        assert entry.paper
        assert entry.obj.__doc__


@pytest.mark.parametrize("shape", ALL_SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_output_shape_or_clear_refusal(name, shape):
    torch.manual_seed(0)
    if shape in SUPPORTED[name]:
        model = build_model(name, shape, 10)
        assert model(torch.randn(2, *shape)).shape == (2, 10)
    else:
        with pytest.raises(ConfigError, match=rf"model: got '{name}'; needs images") as err:
            build_model(name, shape, 10)
        assert str(shape) in str(err.value)


def test_unpadded_cnn_refuses_images_below_its_minimum_side():
    build_model("cnn_uldp", (1, 16, 16), 10)  # 16 -> 12 -> 6 -> 2 -> 1
    with pytest.raises(ConfigError, match=r"needs images of at least 16x16; .* \(1, 15, 15\)"):
        build_model("cnn_uldp", (1, 15, 15), 10)
    with pytest.raises(ConfigError, match="at least 16x16"):
        build_model("lenet5", (3, 32, 15), 10)  # either side too small


def test_first_convolution_takes_the_dataset_channels():
    for name in ("cnn_kdp", "cnn_uldp", "cnn_ldpfl", "lenet5", "vgg_small", "resnet18"):
        for shape in (MNIST, CIFAR):
            model = build_model(name, shape, 10)
            first_conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
            assert first_conv.in_channels == shape[0]


def test_build_model_rejects_bad_arguments():
    with pytest.raises(ConfigError, match=r"model: got 'alexnet'; allowed: .*logreg"):
        build_model("alexnet", MNIST, 10)
    with pytest.raises(ConfigError, match="num_classes"):
        build_model("logreg", MNIST, 1)
    with pytest.raises(ConfigError, match="input_shape"):
        build_model("logreg", (0, 28), 10)


def test_resnet18_keeps_imagenet_stem_for_large_images():
    small = build_model("resnet18", CIFAR, 10)
    large = build_model("resnet18", (1, 96, 96), 10)
    assert small.conv1.kernel_size == (3, 3) and isinstance(small.maxpool, torch.nn.Identity)
    assert large.conv1.kernel_size == (7, 7) and large.conv1.in_channels == 1
    assert isinstance(large.maxpool, torch.nn.MaxPool2d)


def test_none_of_our_models_has_batch_norm_but_torchvision_resnet_does():
    for name, shape in NATURAL_SHAPE.items():
        assert not has_batch_norm(build_model(name, shape, 10)), name
    assert has_batch_norm(torchvision.models.resnet18(weights=None))


@pytest.mark.parametrize("name", sorted(NATURAL_SHAPE))
def test_vmap_over_stacked_models_equals_each_models_forward(name):
    torch.manual_seed(0)
    shape = NATURAL_SHAPE[name]
    models = [build_model(name, shape, 10) for _ in range(3)]
    params, buffers = stack_module_state(models)
    skeleton = copy.deepcopy(models[0]).to("meta")
    x = torch.randn(2, *shape)

    def forward(p, b, inputs):
        return functional_call(skeleton, (p, b), (inputs,))

    stacked = vmap(forward, in_dims=(0, 0, None))(params, buffers, x)
    expected = torch.stack([m(x) for m in models])
    torch.testing.assert_close(stacked, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(NATURAL_SHAPE))
def test_per_sample_gradients_with_vmap_grad_match_autograd(name):
    torch.manual_seed(0)
    shape = NATURAL_SHAPE[name]
    model = build_model(name, shape, 10)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = torch.randn(2, *shape), torch.tensor([3, 7])

    def loss(p, sample, label):
        logits = functional_call(model, p, (sample.unsqueeze(0),))
        return F.cross_entropy(logits, label.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(2):
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for k, p in model.named_parameters():
            torch.testing.assert_close(
                per_sample[k][i], p.grad, rtol=1e-4, atol=1e-5, msg=f"{name}.{k}"
            )


@pytest.mark.parametrize("name", sorted(NATURAL_SHAPE))
@pytest.mark.parametrize("clip", [0.05, 100.0])
def test_clipped_mean_gradient_equals_clipping_materialised_per_sample_gradients(name, clip):
    """DP-SGD's clipped mean (engine.local, linear layers by their outer-product norm) is
    Abadi et al.'s Alg. 1 computed the direct way (every per-sample gradient materialised).
    clip 0.05 binds for every sample, 100 for none; the masked sample must not count."""
    torch.manual_seed(0)
    shape = NATURAL_SHAPE[name]
    model = build_model(name, shape, 10)
    params = {k: v.detach() + 0.01 * torch.randn(2, *v.shape) for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())
    x, y = torch.randn(2, 3, *shape), torch.randint(0, 10, (2, 3))
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])

    got = client_gradient_fn(model, clip)(params, buffers, x, y, mask)
    want = materialised_clipped_grad(model, clip)(params, buffers, x, y, mask)
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-6, msg=f"{name}.{k}")


class _Twice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(10, 10)

    def forward(self, x):
        return self.fc(self.fc(x.flatten(1)))


@pytest.mark.parametrize("model, shape", [
    (torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Flatten(), torch.nn.Linear(6, 10)), (2, 4)),  # a sequence
    (_Twice(), (10,)),                                                                             # weights shared
])
def test_clipping_refuses_a_linear_layer_without_one_outer_product_per_sample(model, shape):
    params = {k: v.detach().unsqueeze(0) for k, v in model.named_parameters()}
    with pytest.raises(ValueError, match="only one row per sample, once per forward pass"):
        client_gradient_fn(model, 1.0)(params, {}, torch.randn(1, 2, *shape), torch.zeros(1, 2, dtype=torch.long),
                                       torch.ones(1, 2))


def test_parameter_counts_match_hand_computation():
    # cnn_uldp on 1x28x28: 28 -conv5-> 24 -pool-> 12 -conv5-> 8 -pool-> 4, so fc1 sees 20*4*4.
    conv1, conv2 = 1 * 10 * 25 + 10, 10 * 20 * 25 + 20
    fc1, fc2 = 20 * 4 * 4 * 50 + 50, 50 * 10 + 10
    assert conv1 + conv2 + fc1 + fc2 == 21_840
    assert num_parameters(build_model("cnn_uldp", MNIST, 10)) == 21_840
    # lenet5 on 3x32x32: 32 -> 28 -> 14 -> 10 -> 5, so fc1 sees 16*5*5 = 400.
    convs = (3 * 6 * 25 + 6) + (6 * 16 * 25 + 16)
    lenet = convs + (400 * 120 + 120) + (120 * 84 + 84) + (84 * 10 + 10)
    assert lenet == 62_006
    assert num_parameters(build_model("lenet5", CIFAR, 10)) == 62_006
    # cnn_kdp on MNIST with 'same' padding is McMahan et al.'s CNN (64*7*7 into fc512).
    assert num_parameters(build_model("cnn_kdp", MNIST, 10)) == 1_663_370
    assert num_parameters(build_model("logreg", COVTYPE, 7)) == 54 * 7 + 7


def test_flops_are_counted_per_sample_as_flop_counter_mode_does():
    # 2 FLOPs per multiply-accumulate; bias, ReLU and pooling are free.
    assert count_flops(build_model("logreg", (64,), 10), (64,)) == 2 * 64 * 10
    assert count_flops(build_model("logreg", MNIST, 10), MNIST) == 2 * 784 * 10
    conv = 2 * (10 * 1 * 25) * 24 * 24 + 2 * (20 * 10 * 25) * 8 * 8
    fc = 2 * 320 * 50 + 2 * 50 * 10
    assert count_flops(build_model("cnn_uldp", MNIST, 10), MNIST) == conv + fc == 961_000
    for name, shape in NATURAL_SHAPE.items():
        model = build_model(name, shape, 10)
        model.train()
        assert count_flops(model, shape) > 0
        assert model.training  # mode is restored
