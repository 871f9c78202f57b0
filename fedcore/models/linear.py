"""Fully connected models on flattened inputs: logistic regression and a one-hidden-layer MLP.

Both take any input shape: tabular rows such as Covertype's ``(54,)``, or images, which
they flatten (``(1, 8, 8)`` digits become 64 features).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Sequence

from torch import nn

from fedcore.models.registry import MODELS


class FlatMLP(nn.Sequential):
    """Flatten, then fully connected layers with ReLU between them.

    Layers are named ``fc1, relu1, ..., fcN`` (``fcN`` gives the logits), so parameter
    names read ``fc1.weight``, ``fc2.bias``. With ``hidden=()`` this is multinomial
    logistic regression.

    Parameters
    ----------
    input_shape : one sample's shape (no batch axis); its product is the input width.
    num_classes : number of logits.
    hidden : widths of the hidden layers.
    """

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden: Sequence[int] = ()):
        widths = [math.prod(input_shape), *hidden, num_classes]
        layers: list[tuple[str, nn.Module]] = [("flatten", nn.Flatten())]
        for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:]), start=1):
            if i > 1:
                layers.append((f"relu{i - 1}", nn.ReLU()))
            layers.append((f"fc{i}", nn.Linear(fan_in, fan_out)))
        super().__init__(OrderedDict(layers))


@MODELS.register(
    "logreg",
    summary="Multinomial logistic regression: flatten, one linear layer, softmax in the loss.",
    paper="PLDP-FL (seed 000)",
)
def logreg(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """PLDP-FL's model (Hosmer & Lemeshow logistic regression trained by SGD):
    ``flatten - fc(num_classes)``; cross-entropy on its logits is the multinomial
    log-likelihood."""
    return FlatMLP(input_shape, num_classes)


@MODELS.register(
    "mlp",
    summary="Flatten, one hidden layer of 200 ReLU units, linear output.",
    paper="baseline (METHODS section 7)",
)
def mlp(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """A one-hidden-layer perceptron, ``flatten - fc200 - ReLU - fc(num_classes)``; the
    non-convolutional baseline of METHODS section 7 (width 200 as in FedAvg's 2NN)."""
    return FlatMLP(input_shape, num_classes, hidden=(200,))
