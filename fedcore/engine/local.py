"""Local SGD for all of a round's clients at once (torch.func: stacked params + vmap).

The ``m`` clients' parameters are stacked along a new leading dimension; the clients'
losses are computed by one ``vmap`` of the model over the stack, and one backward pass
of their sum gives every client's mini-batch gradient (client ``c``'s loss depends only
on slice ``c`` of the stack). The SGD update is a tensor operation over the stack. The
only Python loop is over local *steps*, never over clients. With ``clip`` set,
gradients are DP-SGD's (Abadi et al. 2016, Alg. 1): per-sample gradients
(``vmap(grad)`` over the batch, inside the vmap over clients), each clipped to L2 norm
``clip``, then averaged. With ``noise_std`` (the mechanism's per-step DP-SGD noise,
:meth:`fedcore.mechanisms.base.Mechanism.step_noise_std`) every step adds
``N(0, noise_std_c^2 I)`` to client c's *sum* of clipped per-sample gradients before the
division by its batch size: Abadi et al. 2016, Alg. 1, line "add noise".

Plain autograd rather than ``torch.func.grad`` for the unclipped step, and cross-entropy
written as ``-log_softmax[y]``: the kernels are the same, but ``torch.func.grad``'s first
call imports ``torch._dynamo`` and ``F.cross_entropy`` under ``vmap`` runs a decomposition
that imports sympy, together about 2 s of a run's start-up.

On CPU the clients go through the vmap in chunks (:func:`client_chunk`): one vmap over
100 clients of a small CNN keeps ~200 MB of activations, spills the caches and runs
about 1.7x slower than chunks of 8 clients, which run about as fast as the plain loop
(docs/benchmarks.md). On a GPU all clients go at once. Chunking changes nothing in the
arithmetic.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from ..config import LocalConfig
from .plan import BatchPlan


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample cross-entropy ``-log softmax(logits)[y]`` (``F.cross_entropy``, reduction none)."""
    return -F.log_softmax(logits, dim=-1).gather(-1, y.unsqueeze(-1)).squeeze(-1)


def _masked_mean_loss(model):
    def loss(params, buffers, x, y, mask):
        logits = functional_call(model, (params, buffers), (x,))
        return (cross_entropy(logits, y) * mask).sum() / mask.sum().clamp(min=1.0)
    return loss


def _clipped_mean_grad(model, clip: float):
    def sample_loss(params, buffers, x, y):
        logits = functional_call(model, (params, buffers), (x.unsqueeze(0),))
        return cross_entropy(logits, y.unsqueeze(0)).sum()

    per_sample_grad = vmap(grad(sample_loss), in_dims=(None, None, 0, 0))

    def clipped(params, buffers, x, y, mask):
        g = per_sample_grad(params, buffers, x, y)
        sq = sum(v.reshape(v.shape[0], -1).pow(2).sum(1) for v in g.values())
        factor = (clip / (sq.sqrt() + 1e-12)).clamp(max=1.0) * mask
        denom = mask.sum().clamp(min=1.0)
        return {k: torch.tensordot(factor, v, dims=1) / denom for k, v in g.items()}
    return clipped


def client_gradient_fn(model: torch.nn.Module, clip: Optional[float] = None):
    """``f(params[m], buffers, x[m,B,...], y[m,B], mask[m,B]) -> grads[m]`` for all clients."""
    if clip is not None:
        return vmap(_clipped_mean_grad(model, clip), in_dims=(0, None, 0, 0, 0))
    client_losses = vmap(_masked_mean_loss(model), in_dims=(0, None, 0, 0, 0))

    def gradients(params, buffers, x, y, mask):
        with torch.enable_grad():
            leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
            total = client_losses(leaves, buffers, x, y, mask).sum()
            return dict(zip(leaves, torch.autograd.grad(total, list(leaves.values()))))
    return gradients


CPU_CHUNK_BYTES = 16 * 2**20
"""Activations per vmap call on CPU: about 8 clients of cnn_uldp at batch 32, all 100 of logreg."""


def client_chunk(model: torch.nn.Module, input_shape: tuple, batch_size: int) -> int:
    """Clients per vmap call on CPU: as many as keep one step's activations (every leaf
    module's output, measured on one sample) within :data:`CPU_CHUNK_BYTES`."""
    floats = []
    hooks = [mod.register_forward_hook(lambda _m, _i, out: floats.append(out.numel()))
             for mod in model.modules() if not list(mod.children())]
    try:
        with torch.no_grad():
            model(torch.zeros(1, *input_shape))
    finally:
        for h in hooks:
            h.remove()
    return max(1, CPU_CHUNK_BYTES // (4 * batch_size * max(1, sum(floats))))


def _chunked(grad_fn, chunk: int, params, buffers, x, y, mask):
    """``grad_fn`` over clients ``[0, chunk)``, ``[chunk, 2 chunk)``, ..., concatenated."""
    if chunk >= x.shape[0]:
        return grad_fn(params, buffers, x, y, mask)
    parts = [grad_fn({k: v[i:i + chunk] for k, v in params.items()}, buffers,
                     x[i:i + chunk], y[i:i + chunk], mask[i:i + chunk]) for i in range(0, x.shape[0], chunk)]
    return {k: torch.cat([p[k] for p in parts]) for k in params}


def train_clients(model: torch.nn.Module, start: dict[str, torch.Tensor], x_all: torch.Tensor,
                  y_all: torch.Tensor, plan: BatchPlan, local: LocalConfig,
                  clip: Optional[float] = None, grad_fn=None,
                  chunk: Optional[int] = None, stacked_start: bool = False,
                  noise_std: Optional[torch.Tensor] = None,
                  gen: Optional[torch.Generator] = None) -> dict[str, torch.Tensor]:
    """Run every client's local SGD from ``start``; returns stacked params ``{name: [m, ...]}``.

    ``stacked_start``: ``start`` already holds one row per client (``{name: [m, ...]}``),
    e.g. the clients of several runs trained together (:mod:`fedcore.engine.lockstep`).

    Plain SGD: ``w <- w - lr (g + wd w)``; momentum (PyTorch's form): ``v <- mu v + g + wd w``,
    ``w <- w - lr v``. Clients inactive at a step keep their weights and momentum.
    ``chunk``: clients per vmap call (default all; see :func:`client_chunk`).
    ``noise_std`` ``[m]``: per-step DP-SGD noise on each client's clipped gradient sum
    (the gradients must be per-sample clipped), drawn from ``gen`` (or ``gen(shape, step)``
    when callable: :mod:`fedcore.engine.lockstep` draws each run's rows from its own generator).
    """
    m = plan.index.shape[0]
    chunk = chunk or m
    buffers = dict(model.named_buffers())
    grad_fn = grad_fn or client_gradient_fn(model, clip)
    params = ({k: v.detach() for k, v in start.items()} if stacked_start else
              {k: v.detach().unsqueeze(0).repeat(m, *([1] * v.dim())) for k, v in start.items()})
    velocity = {k: torch.zeros_like(v) for k, v in params.items()} if local.optimizer == "momentum" else None
    with torch.no_grad():
        for s in range(plan.steps):
            idx = plan.index[:, s]
            grads = _chunked(grad_fn, chunk, params, buffers, x_all[idx], y_all[idx], plan.mask[:, s])
            if noise_std is not None:
                scale = noise_std.to(plan.mask.dtype) / plan.mask[:, s].sum(1).clamp(min=1.0)
                for k, g in grads.items():
                    z = (gen(g.shape, s) if callable(gen) else  # lockstep: each run's own generator
                         torch.randn(g.shape, generator=gen, device=g.device, dtype=g.dtype))
                    grads[k] = g + scale.view(-1, *([1] * (g.dim() - 1))).to(g.dtype) * z
            act = plan.active[:, s]
            for k, p in params.items():
                a = act.view(-1, *([1] * (p.dim() - 1)))
                g = grads[k] + local.weight_decay * p if local.weight_decay else grads[k]
                if velocity is not None:
                    velocity[k] = torch.where(a > 0, local.momentum * velocity[k] + g, velocity[k])
                    g = velocity[k]
                params[k] = p - local.lr * a * g
    return params
