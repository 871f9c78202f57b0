"""A round's clients through the papers' small CNNs and MLPs without ``vmap``.

Issue 41 §3 (fewer, larger kernels). With the clients' parameters stacked (``{name: [m, ...]}``) and
their batches ``x [m, B, ...]``, a convolution is one grouped convolution (the clients' filters side
by side, ``groups = m``, the input laid out ``[B, m * C, H, W]``), and a linear layer one batched
matrix product. ``vmap`` reaches the same kernels through its batching rules, but wraps each of them
in reshapes, permutes and views: one cnn_uldp step of 7 clients makes 366 aten calls under ``vmap``
and 241 here, and on a GPU each call is a dispatch. The gradients are **bitwise** those of the
``vmap`` path (``tests/test_stacked.py``): a convolution's bias is added after it, as ``vmap``'s rule
for a batched bias does, and a linear layer is ``(W @ x^T)^T + b``, as under
:class:`fedcore.engine.local.WeightFirstLinear`.

Models other than :class:`~fedcore.models.convnet.ConvPoolNet` (conv / ReLU / 2x2 max-pool blocks and
a fully connected head) and :class:`~fedcore.models.linear.FlatMLP` keep the ``vmap`` path
(:func:`supports`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..models.convnet import ConvPoolNet
from ..models.linear import FlatMLP

_FEATURES = (nn.Conv2d, nn.ReLU, nn.MaxPool2d)
_HEAD = (nn.Flatten, nn.Linear, nn.ReLU)


def supports(model: nn.Module) -> bool:
    """Whether :func:`stacked_logits` computes ``model`` (otherwise the caller uses ``vmap``)."""
    if isinstance(model, ConvPoolNet):
        return (all(isinstance(m, _FEATURES) for m in model.features.children())
                and all(isinstance(m, _HEAD) for m in model.classifier.children())
                and all(m.kernel_size in (2, (2, 2)) and m.stride in (2, (2, 2)) and m.padding == 0
                        and m.dilation == 1 and not m.ceil_mode
                        for m in model.features.children() if isinstance(m, nn.MaxPool2d))
                and all(m.stride == (1, 1) and m.dilation == (1, 1) and m.groups == 1 and m.padding_mode == "zeros"
                        for m in model.features.children() if isinstance(m, nn.Conv2d)))
    return type(model) is FlatMLP and all(isinstance(m, _HEAD) for m in model.children())


def stacked_logits(model: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits ``[m, B, classes]`` of ``m`` clients, client ``c`` with parameters ``params[k][c]``
    on its batch ``x[c]`` (``x [m, B, *input_shape]``); :func:`supports` must hold."""
    m, batch = x.shape[:2]
    if isinstance(model, ConvPoolNet):
        h = x.transpose(0, 1).reshape(batch, m * x.shape[2], *x.shape[3:])   # [B, m * C, H, W]
        for name, layer in model.features.named_children():
            if isinstance(layer, nn.Conv2d):
                w, b = params[f"features.{name}.weight"], params.get(f"features.{name}.bias")
                h = F.conv2d(h, w.reshape(-1, *w.shape[2:]), None, padding=layer.padding, groups=m)
                if b is not None:
                    h = h + b.reshape(1, -1, 1, 1)
            elif isinstance(layer, nn.ReLU):
                h = torch.relu(h)
            else:
                h = F.max_pool2d(h, 2)
        h = h.reshape(batch, m, -1).transpose(0, 1)                              # [m, B, features]
        head, prefix = model.classifier, "classifier."
    else:
        h, head, prefix = x.reshape(m, batch, -1), model, ""
    for name, layer in head.named_children():
        if isinstance(layer, nn.Linear):
            w, b = params[f"{prefix}{name}.weight"], params.get(f"{prefix}{name}.bias")
            h = torch.bmm(w, h.transpose(1, 2)).transpose(1, 2)
            if b is not None:
                h = h + b.unsqueeze(1)
        elif isinstance(layer, nn.ReLU):
            h = torch.relu(h)
    return h
