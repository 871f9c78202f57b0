"""Models the five papers train, behind one registry.

Every entry of ``MODELS`` is a factory ``(input_shape, num_classes) -> nn.Module``; use
:func:`build_model`, which also validates its arguments. All models are plain
``nn.Module`` s without batch norm, dropout or in-place operations on their inputs, so
they work with ``torch.func.functional_call`` + ``torch.func.vmap`` (per-sample
gradients for DP-SGD, many clients' models stacked and evaluated at once).

Each registered model's architecture and paper are its registry entry's summary and paper
(``python -m fedcore list`` prints them): logreg, mlp, cnn_kdp, cnn_uldp, cnn_ldpfl, lenet5,
vgg_small, resnet18.

>>> from fedcore.models import build_model, count_flops, num_parameters
>>> model = build_model("cnn_uldp", (1, 28, 28), 10)
>>> num_parameters(model)
21840
>>> count_flops(build_model("logreg", (64,), 10), (64,))
1280
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from fedcore.errors import ConfigError
from fedcore.models.registry import MODELS

if TYPE_CHECKING:  # torch loads with the first model built, not with the registry's names
    from torch import nn


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Build the registered model ``name`` for inputs of ``input_shape`` (no batch axis).

    Parameters
    ----------
    name : a key of ``MODELS`` (``MODELS.names()`` lists them).
    input_shape : one sample's shape, ``(C, H, W)`` for images or ``(features,)``.
    num_classes : number of output logits, >= 2.

    Raises
    ------
    ConfigError
        for an unknown name, a bad shape or class count, or a model that cannot take
        inputs of this shape (e.g. an unpadded 5x5 conv stack on 8x8 digits).
    """
    if name not in MODELS:
        raise ConfigError("model", name, "allowed: " + ", ".join(MODELS.names()))
    shape = tuple(input_shape)
    if not shape or not all(isinstance(s, int) and s > 0 for s in shape):
        raise ConfigError("input_shape", input_shape, "must be a non-empty tuple of positive ints")
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ConfigError("num_classes", num_classes, "must be an integer >= 2")
    return MODELS.get(name)(shape, num_classes)


def has_batch_norm(model: nn.Module) -> bool:
    """True if ``model`` contains a batch-norm layer.

    Batch norm mixes samples of a batch (so per-sample gradients are not per-sample, which
    breaks DP-SGD's sensitivity argument) and updates running statistics in place (which
    ``torch.func.vmap`` rejects).
    """
    from torch import nn

    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def num_parameters(model: nn.Module) -> int:
    """Number of scalar parameters ``d`` (the dimension a mechanism perturbs)."""
    return sum(p.numel() for p in model.parameters())


@lru_cache(maxsize=64)
def model_parameters(model: str, input_shape: tuple[int, ...], classes: int) -> int:
    """Parameters of model ``model`` for that input (built once on the CPU, then cached)."""
    return num_parameters(build_model(model, input_shape, classes))


def count_flops(model: nn.Module, input_shape: tuple[int, ...]) -> int:
    """Forward FLOPs for one sample, as ``torch.utils.flop_counter.FlopCounterMode`` counts.

    That counter charges 2 FLOPs per multiply-accumulate of matrix products and
    convolutions and nothing for bias additions, activations or pooling; e.g. logistic
    regression on ``(64,)`` with 10 classes costs ``2 * 64 * 10 = 1280``.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    was_training = model.training
    model.eval()
    try:
        param = next(model.parameters(), None)
        dtype = param.dtype if param is not None else torch.float32
        x = torch.zeros((1, *input_shape), dtype=dtype)
        with torch.no_grad(), counter:
            model(x)
    finally:
        model.train(was_training)
    return int(counter.get_total_flops())


__all__ = ["MODELS", "build_model", "count_flops", "has_batch_norm", "num_parameters"]
