"""A round's clients through the papers' small CNNs and MLPs without ``vmap`` or autograd.

Issue 41 §3 (fewer, larger kernels). With the clients' parameters stacked (``{name: [m, ...]}``) and
their batches ``x [m, B, ...]``, a convolution is one grouped convolution (the clients' filters side
by side, ``groups = m``, the input laid out ``[B, m * C, H, W]``), and a linear layer one batched
matrix product. ``vmap`` reaches the same kernels through its batching rules, but wraps each of them
in reshapes, permutes and views, and autograd adds its own glue around every kernel (one cnn_uldp
step of 7 clients: 366 aten calls under ``vmap``, 241 with autograd on these kernels). Here the
backward pass is written out: each layer's gradient is the aten kernel autograd's derivative formula
calls (``convolution_backward``, ``max_pool2d_with_indices_backward``, ``threshold_backward``, the two
``bmm`` of a product, ``_log_softmax_backward_data``), on the same tensors in the same order.

The gradients are therefore **bitwise** those of the ``vmap`` path (``tests/test_stacked.py``): a
convolution's bias is added after it, as ``vmap``'s rule for a batched bias does, and a linear layer
is ``(W @ x^T)^T + b``, as under :class:`fedcore.engine.local.WeightFirstLinear`.

Models other than :class:`~fedcore.models.convnet.ConvPoolNet` (conv / ReLU / 2x2 max-pool blocks and
a fully connected head) and :class:`~fedcore.models.linear.FlatMLP` keep the ``vmap`` path
(:func:`supports`).
"""
from __future__ import annotations

from typing import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from ..models.convnet import ConvPoolNet
from ..models.linear import FlatMLP

_FEATURES = (nn.Conv2d, nn.ReLU, nn.MaxPool2d)
_HEAD = (nn.Flatten, nn.Linear, nn.ReLU)
_POOL = [2, 2]
_ONES = [1, 1]


def supports(model: nn.Module) -> bool:
    """Whether :func:`stacked_gradients` computes ``model`` (otherwise the caller uses ``vmap``)."""
    if isinstance(model, ConvPoolNet):
        return (all(isinstance(m, _FEATURES) for m in model.features.children())
                and all(isinstance(m, _HEAD) for m in model.classifier.children())
                and all(m.kernel_size in (2, (2, 2)) and m.stride in (2, (2, 2)) and m.padding == 0
                        and m.dilation == 1 and not m.ceil_mode
                        for m in model.features.children() if isinstance(m, nn.MaxPool2d))
                and all(m.stride == (1, 1) and m.dilation == (1, 1) and m.groups == 1 and m.padding_mode == "zeros"
                        for m in model.features.children() if isinstance(m, nn.Conv2d)))
    return type(model) is FlatMLP and all(isinstance(m, _HEAD) for m in model.children())


def _layers(model: nn.Module) -> Iterator[tuple[str, str, nn.Module]]:
    """``(kind, parameter prefix, layer)`` in forward order; ``to_head`` is the flatten from the
    grouped ``[B, m * C, H, W]`` layout to ``[m, B, features]``."""
    head, prefix = model, ""
    if isinstance(model, ConvPoolNet):
        for name, layer in model.features.named_children():
            kind = "conv" if isinstance(layer, nn.Conv2d) else "relu" if isinstance(layer, nn.ReLU) else "pool"
            yield kind, f"features.{name}", layer
        yield "to_head", "", model.classifier
        head, prefix = model.classifier, "classifier."
    for name, layer in head.named_children():
        if isinstance(layer, (nn.Linear, nn.ReLU)):
            yield ("linear" if isinstance(layer, nn.Linear) else "relu"), f"{prefix}{name}", layer


def _forward(model: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, list]:
    """Logits ``[m, B, classes]`` and the tape the backward pass reads (each layer's inputs)."""
    m, batch = x.shape[:2]
    conv_net = isinstance(model, ConvPoolNet)
    h = x.transpose(0, 1).reshape(batch, m * x.shape[2], *x.shape[3:]) if conv_net else x.reshape(m, batch, -1)
    tape, first = [], True   # the first layer's input needs no gradient
    for kind, key, layer in _layers(model):
        if kind == "conv":
            w, b = params[f"{key}.weight"], params.get(f"{key}.bias")
            wr = w.reshape(-1, *w.shape[2:])
            tape.append((kind, key, h, wr, first, b is not None, list(layer.padding)))
            h = F.conv2d(h, wr, None, padding=layer.padding, groups=m)
            if b is not None:
                h = h + b.reshape(1, -1, 1, 1)
        elif kind == "linear":
            w, b = params[f"{key}.weight"], params.get(f"{key}.bias")
            tape.append((kind, key, h, w, first, b is not None))
            h = torch.bmm(w, h.transpose(1, 2)).transpose(1, 2)
            if b is not None:
                h = h + b.unsqueeze(1)
        elif kind == "relu":
            h = torch.relu(h)
            tape.append((kind, h))
        elif kind == "pool":
            out, idx = torch.ops.aten.max_pool2d_with_indices(h, _POOL, _POOL)
            tape.append((kind, h, idx))
            h = out
        else:   # to_head
            tape.append((kind, h.shape))
            h = h.reshape(batch, m, -1).transpose(0, 1)
        first = first and kind not in ("conv", "linear")
    return h, tape


def _loss_gradient(logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Gradient of ``sum_c sum_i mask_ci CE(logits_ci, y_ci) / max(1, sum_i mask_ci)`` (each client's
    masked mean cross-entropy, :func:`fedcore.engine.local.cross_entropy`) with respect to the logits,
    by autograd's steps: ``1 / denominator`` times the mask (the mask divided by it: the same
    floats, the mask being 0 or 1, in two dispatched ops fewer), negated into the label's column
    (``gather``'s derivative), then ``log_softmax``'s derivative."""
    out = torch.log_softmax(logits, -1)
    g = mask / mask.sum(1, keepdim=True).clamp(min=1.0)
    g = torch.zeros_like(out).scatter_add_(-1, y.unsqueeze(-1), g.neg().unsqueeze(-1))
    return torch.ops.aten._log_softmax_backward_data(g, out, -1, out.dtype)


def _backward(tape: list, g: torch.Tensor, m: int) -> dict[str, torch.Tensor]:
    """Each parameter's gradient from the logits' gradient ``g``, layer by layer from the last:
    the kernels autograd's derivative formulas call, on the tensors it would pass them."""
    grads = {}
    for rec in reversed(tape):
        kind = rec[0]
        if kind == "linear":
            _, key, h, w, first, bias = rec
            if bias:   # h + b.unsqueeze(1): the bias's gradient sums over the batch
                grads[f"{key}.bias"] = g.sum(1)
            gt = g.transpose(1, 2)
            grads[f"{key}.weight"] = torch.bmm(gt, h)
            if not first:
                g = torch.bmm(w.transpose(1, 2), gt).transpose(1, 2)
        elif kind == "conv":
            _, key, h, wr, first, bias, padding = rec
            if bias:
                grads[f"{key}.bias"] = g.sum([0, 2, 3], keepdim=True).reshape(m, -1)
            gi, gw, _ = torch.ops.aten.convolution_backward(g, h, wr, None, _ONES, padding, _ONES, False,
                                                            [0, 0], m, [not first, True, False])
            grads[f"{key}.weight"] = gw.reshape(m, -1, *gw.shape[1:])
            g = gi
        elif kind == "relu":
            g = torch.ops.aten.threshold_backward(g, rec[1], 0)
        elif kind == "pool":
            g = torch.ops.aten.max_pool2d_with_indices_backward(g, rec[1], _POOL, _POOL, [0, 0], _ONES, False, rec[2])
        else:   # to_head
            g = g.transpose(0, 1).reshape(rec[1])
    return grads


@torch.no_grad()
def stacked_gradients(model: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                      mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every client's gradient of its masked mean cross-entropy, ``{name: [m, ...]}``: client ``c``
    with parameters ``params[k][c]`` on its batch ``x[c]`` (``x [m, B, *input_shape]``, labels
    ``y [m, B]``, ``mask [m, B]``); :func:`supports` must hold."""
    logits, tape = _forward(model, params, x)
    return _backward(tape, _loss_gradient(logits, y, mask), x.shape[0])
