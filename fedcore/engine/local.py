"""Local SGD for all of a round's clients at once (torch.func: stacked params + vmap).

The ``m`` clients' parameters are stacked along a new leading dimension; the clients'
losses are computed by one ``vmap`` of the model over the stack, and one backward pass of their
sum gives every client's mini-batch gradient (client ``c``'s loss depends only on slice ``c`` of
the stack). For the papers' small CNNs and MLPs the same kernels, forward and backward, are written
out without ``vmap``'s or autograd's glue (:mod:`.stacked`, bitwise the same numbers). The SGD
update is a tensor operation over the stack. The only Python loop is over local *steps*, never over
clients. The clients' parameters live in one ``[m, d]`` buffer; each layer is a view of it. With
``clip`` set,
gradients are DP-SGD's (Abadi et al. 2016, Alg. 1): per-sample gradients
(``vmap(grad)`` over the batch, inside the vmap over clients; a linear layer's by its
outer-product norm, never materialised: :func:`_clipped_mean_grad`), each clipped to L2
norm ``clip``, then averaged. With ``noise_std`` (the mechanism's per-step DP-SGD noise,
:meth:`fedcore.mechanisms.base.Mechanism.step_noise_std`) every step adds
``N(0, noise_std_c^2 I)`` to client c's *sum* of clipped per-sample gradients before the
division by its batch size: Abadi et al. 2016, Alg. 1, line "add noise". A Poisson plan
(:mod:`fedcore.engine.plan`) divides by the expected batch size instead.

Plain autograd rather than ``torch.func.grad`` for the other models' unclipped step, and cross-entropy
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

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.overrides import TorchFunctionMode

from ..config import LocalConfig
from .flat import contiguous_strides, flatten
from .plan import BatchPlan
from .stacked import stacked_gradients, supports as stackable


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample cross-entropy ``-log softmax(logits)[y]`` (``F.cross_entropy``, reduction none)."""
    return -F.log_softmax(logits, dim=-1).gather(-1, y.unsqueeze(-1)).squeeze(-1)


def _masked_mean_loss(model):
    def loss(params, buffers, x, y, mask):
        logits = functional_call(model, (params, buffers), (x,))
        return (cross_entropy(logits, y) * mask).sum() / mask.sum().clamp(min=1.0)
    return loss


def _clipped_mean_grad(model, clip: float):
    """DP-SGD's clipped mean gradient of one client's batch (Abadi et al. 2016, Alg. 1).

    Per-sample gradients of every layer except the linear ones come from ``vmap(grad)``
    over the batch. A linear layer's per-sample weight gradient is the outer product
    ``g_i a_i^T`` of its output gradient and its input, so it is never materialised
    (Goodfellow 2015, "Efficient per-example gradient computations"; the "ghost norm" of
    Li et al. 2022): its squared norm is ``|g_i|^2 |a_i|^2`` and the clipped sum is
    ``sum_i f_i g_i a_i^T``, one matrix product (:class:`_LinearProbes`). For cnn_kdp's
    1.6M-weight fc layer that replaces a ``[B, 512, 3136]`` tensor per client and step.
    """
    linear = {n: mod for n, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)}
    big = {k for k, _ in model.named_parameters() if k.rpartition(".")[0] in linear}
    width = {f"{n}.weight": mod.out_features for n, mod in linear.items()}
    bias = {f"{n}.weight": f"{n}.bias" for n, mod in linear.items() if f"{n}.bias" in big}

    def sample_loss(small, probes, fixed, buffers, x, y):
        with _LinearProbes(fixed, probes) as seen:
            logits = functional_call(model, ({**small, **fixed}, buffers), (x.unsqueeze(0),))
        return cross_entropy(logits, y.unsqueeze(0)).sum(), seen.inputs

    per_sample = vmap(grad(sample_loss, argnums=(0, 1), has_aux=True), in_dims=(None, None, None, None, 0, 0))

    def clipped(params, buffers, x, y, mask):
        small = {k: v for k, v in params.items() if k not in big}
        fixed = {k: v for k, v in params.items() if k in big}
        probes = {k: x.new_zeros(1, n) for k, n in width.items() if k in fixed}
        (g, g_out), inputs = per_sample(small, probes, fixed, buffers, x, y)
        sq = sum(v.reshape(v.shape[0], -1).pow(2).sum(1) for v in g.values())
        for k, go in g_out.items():
            go_sq = go.reshape(go.shape[0], -1).pow(2).sum(1)
            sq = sq + go_sq * inputs[k].reshape(go.shape[0], -1).pow(2).sum(1)
            if k in bias:
                sq = sq + go_sq
        factor = (clip / (sq.sqrt() + 1e-12)).clamp(max=1.0) * mask
        denom = mask.sum().clamp(min=1.0)
        out = {k: torch.tensordot(factor, v, dims=1) / denom for k, v in g.items()}
        for k, go in g_out.items():
            weighted = go.reshape(go.shape[0], -1) * (factor / denom).unsqueeze(1)
            out[k] = weighted.T @ inputs[k].reshape(go.shape[0], -1)
            if k in bias:
                out[bias[k]] = weighted.sum(0)
        return {k: out[k] for k in params}
    return clipped


class _LinearProbes(TorchFunctionMode):
    """Inside one sample's forward: every ``F.linear`` whose weight is one of ``fixed``
    adds the zero ``probes[name]`` to its output (so the gradient with respect to the
    probe is the layer's output gradient) and keeps its input in ``inputs[name]``.
    A linear layer that sees more than one row per sample (a sequence), or is used twice in
    one pass, has no single outer product and is refused."""

    def __init__(self, fixed: dict, probes: dict):
        super().__init__()
        self.names = {id(t): k for k, t in fixed.items()}
        self.probes, self.inputs = probes, {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.linear and id(args[1]) in self.names:
            name = self.names[id(args[1])]
            if args[0].dim() != 2 or args[0].shape[0] != 1 or name in self.inputs:
                raise ValueError(f"per-sample clipping: linear layer {name} sees input of shape "
                                 f"{tuple(args[0].shape)} per sample{' again' if name in self.inputs else ''}; "
                                 "only one row per sample, once per forward pass, is supported")
            self.inputs[name] = args[0]
            return func(*args, **kwargs) + self.probes[name]
        return func(*args, **kwargs)


class WeightFirstLinear(TorchFunctionMode):
    """``F.linear(x, W, b)`` computed as ``(W @ x^T)^T + b`` (the same products).

    Under the vmap over clients a linear layer becomes a batched matrix product, and
    autograd differentiates ``bmm(x, W^T)`` with respect to ``W^T`` as ``x^T @ g``: an
    ``[in, out]`` result per client, e.g. 784 x 10 from 32 samples, a shape the CPU
    kernels run several times slower than the ``[out, in]`` product ``g^T @ x``, and whose
    transposed layout slows the SGD update too. With ``W`` on the left, the weight
    gradient comes out as ``g^T @ x``, laid out like ``W`` (round of 100-1000 MNIST logreg
    clients ~10-20% less CPU, docs/benchmarks.md). Inputs of one dimension go to
    ``F.linear`` unchanged.
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.linear and args and args[0].dim() >= 2:
            x, w = args[0], args[1]
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            out = torch.matmul(w, x.transpose(-1, -2)).transpose(-1, -2)
            return out if b is None else out + b
        return func(*args, **kwargs)


def client_gradient_fn(model: torch.nn.Module, clip: Optional[float] = None):
    """``f(params[m], buffers, x[m,B,...], y[m,B], mask[m,B]) -> grads[m]`` for all clients."""
    if clip is not None:
        return vmap(_clipped_mean_grad(model, clip), in_dims=(0, None, 0, 0, 0))
    if stackable(model):   # the same numbers without vmap's or autograd's glue (issue 41 §3)
        def gradients(params, buffers, x, y, mask):
            grads = stacked_gradients(model, params, x, y, mask)
            return {k: grads[k] for k in params}
    else:
        client_losses = vmap(_masked_mean_loss(model), in_dims=(0, None, 0, 0, 0))

        def gradients(params, buffers, x, y, mask):
            with torch.enable_grad():
                leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
                with WeightFirstLinear():
                    total = client_losses(leaves, buffers, x, y, mask).sum()
                return dict(zip(leaves, torch.autograd.grad(total, list(leaves.values()))))

    gradients.unclipped = True   # train_clients may take a chunk's steps together (_train_flat)
    return gradients


CPU_CHUNK_BYTES = 16 * 2**20
"""Activations per vmap call on CPU: about 8 clients of cnn_uldp at batch 32, all 100 of logreg."""
CPU_ROWS_BYTES = 64 * 2**20
"""Parameters per vmap call on CPU (so each of the chunk's ``[chunk, d]`` rows, gradients and
momentum): 105 clients of the MLP (d = 159,010), every chunk of logreg (d = 7,850) already fits.
Blocks up to twice this size are reused from one chunk to the next (:mod:`.memory`)."""


def client_chunk(model: torch.nn.Module, input_shape: tuple, batch_size: int) -> int:
    """Clients per vmap call on CPU: as many as keep one step's activations (every leaf
    module's output, measured on one sample) within :data:`CPU_CHUNK_BYTES` and their
    parameters within :data:`CPU_ROWS_BYTES`."""
    floats = activation_floats(model, input_shape)
    d = sum(p.numel() for p in model.parameters())
    return max(1, min(CPU_CHUNK_BYTES // (4 * batch_size * floats), CPU_ROWS_BYTES // (4 * max(1, d))))


def activation_floats(model: torch.nn.Module, input_shape: tuple) -> int:
    """Floats of every leaf module's output for one sample (measured by one forward pass; at least 1)."""
    floats = []
    hooks = [mod.register_forward_hook(lambda _m, _i, out: floats.append(out.numel()))
             for mod in model.modules() if not list(mod.children())]
    try:
        with torch.no_grad():
            model(torch.zeros(1, *input_shape, device=next(model.parameters()).device))
    finally:
        for h in hooks:
            h.remove()
    return max(1, sum(floats))


def _schedule(plan: BatchPlan) -> tuple[Optional[torch.Tensor], Optional[list[int]], list[int]]:
    """Which rows each step needs: ``(order, live, width)``.

    ``order`` (None = keep the order) sorts the clients by their number of active steps,
    longest first, so that the clients active at step ``s`` are the first ``live[s]`` rows
    (a client that finished its epoch idles until the next one: within an epoch the
    active clients are always the longer ones). ``width[s]`` is the batch width step ``s``
    needs: trailing batch positions that are padding for every client are dropped (10
    samples per client at batch 32 use 10 of 32). If the active pattern is not such a
    prefix (a plan built by hand), ``live`` is None: every step takes all rows, masked by
    ``active``. One host sync per round.
    """
    m, steps = plan.active.shape
    used = plan.mask.sum(0) > 0                                   # [S, B]: position used by someone
    pos = torch.arange(1, used.shape[1] + 1, device=used.device)
    width = (used * pos).amax(1).clamp(min=1).tolist()
    per_client = plan.active.sum(1)
    order = torch.argsort(per_client, descending=True, stable=True)
    active = plan.active[order] > 0
    if m > 1 and bool((active[1:] & ~active[:-1]).any()):         # not a prefix at some step
        return None, None, width
    live = active.sum(0).tolist()
    if bool((order == torch.arange(m, device=order.device)).all()):
        order = None
    return order, live, width


def _storage_users(t: torch.Tensor) -> int:
    """How many tensors share ``t``'s storage (0 where torch cannot say)."""
    count = getattr(torch._C, "_storage_Use_Count", None)
    return int(count(t.untyped_storage()._cdata)) if count else 0


class Workspace:
    """Training buffers kept from one round to the next (one per run, :func:`iter_run`).

    A fresh ``[m, d]`` buffer is paid in page faults on CPU: at 6000 clients of a linear
    model (190 MB) that costs more than the round's arithmetic. A kept buffer is handed out
    again only when no tensor outside the workspace still uses its storage (so an update
    that a mechanism kept is never overwritten); otherwise a new one is made.
    """

    def __init__(self, slots: int = 2):
        self.slots = slots
        self._bufs: list[tuple[torch.Tensor, int]] = []  # (buffer, its storage count when idle)

    def take(self, m: int, d: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """An ``[m, d]`` buffer (uninitialised) that nothing else uses."""
        for buf, idle in self._bufs:
            if (buf.dtype == dtype and buf.device == device and buf.shape[1] == d and buf.shape[0] >= m
                    and idle and _storage_users(buf) == idle):
                return buf[:m]
        buf = torch.empty(m, d, dtype=dtype, device=device)
        self._bufs = self._bufs[-(self.slots - 1):] if self.slots > 1 else []
        self._bufs.append((buf, _storage_users(buf)))
        return buf[:m]  # a view: while the caller holds it (or any view of it), it counts as a user


def flat_buffer(start: dict[str, torch.Tensor], m: int, stacked: bool,
                 workspace: Optional[Workspace] = None) -> tuple[torch.Tensor, dict]:
    """One ``[m, d]`` buffer holding every client's parameters, and ``{name: [m, ...]}``
    views of it in :func:`~fedcore.engine.flat.layer_slices` order (so that
    :func:`~fedcore.engine.flat.flatten_stacked` returns the buffer without copying)."""
    shapes = {k: tuple(v.shape[1:] if stacked else v.shape) for k, v in start.items()}
    first = next(iter(start.values()))
    d = sum(math.prod(sh) for sh in shapes.values())
    flat = (workspace.take(m, d, first.dtype, first.device) if workspace is not None else
            torch.empty(m, d, dtype=first.dtype, device=first.device))
    return flat, layer_views(flat, shapes)


def train_clients(model: torch.nn.Module, start: dict[str, torch.Tensor], x_all: torch.Tensor,
                  y_all: torch.Tensor, plan: BatchPlan, local: LocalConfig,
                  clip: Optional[float] = None, grad_fn=None,
                  chunk: Optional[int] = None, stacked_start: bool = False,
                  noise_std: Optional[torch.Tensor] = None,
                  gen: Optional[torch.Generator] = None,
                  workspace: Optional[Workspace] = None, graphs=None) -> dict[str, torch.Tensor]:
    """Run every client's local SGD from ``start``; returns stacked params ``{name: [m, ...]}``
    (views of one ``[m, d]`` buffer, from ``workspace`` when given: :class:`Workspace`).

    ``stacked_start``: ``start`` already holds one row per client (``{name: [m, ...]}``),
    e.g. the clients of several runs trained together (:mod:`fedcore.engine.lockstep`).

    Plain SGD: ``w <- w - lr (g + wd w)``; momentum (PyTorch's form): ``v <- mu v + g + wd w``,
    ``w <- w - lr v`` (:func:`sgd_update`). Clients inactive at a step keep their weights
    and momentum.
    ``chunk``: clients per vmap call (default all; see :func:`client_chunk`).
    ``noise_std`` ``[m]``: per-step DP-SGD noise on each client's clipped gradient sum
    (the gradients must be per-sample clipped), drawn from ``gen`` (or ``gen(shape, step)``
    when callable: :mod:`fedcore.engine.lockstep` draws each run's rows from its own generator).

    Only what a step needs is computed (:func:`_schedule`): the clients still active (the
    rows are sorted by steps, so those are a prefix of the buffer, updated in place) and
    the batch positions someone uses; each chunk gathers its own samples. Noise is still
    drawn for all ``m`` clients at every step, so the draws are those of a dense step.

    ``graphs`` (a :class:`~fedcore.engine.graphs.StepGraphs`, on CUDA): where every client takes every
    step, the steps (DP-SGD's, or unclipped ones) are replayed as captured graphs (:mod:`.graphs`).
    """
    m = plan.index.shape[0]
    chunk = chunk or m
    buffers = dict(model.named_buffers())
    grad_fn = grad_fn or client_gradient_fn(model, clip)
    order, live, width = _schedule(plan)
    prefix = live is not None
    live = live or [m] * plan.steps
    chunked = noise_std is None and getattr(grad_fn, "unclipped", False)
    if (graphs is not None and order is None and prefix and min(live) == m and chunk >= m and not stacked_start
            and not callable(gen) and (noise_std is not None or chunked)):
        out = (graphs.train(grad_fn, start, buffers, x_all, y_all, plan, local, noise_std, gen, width, workspace)
               if noise_std is not None else
               graphs.train_flat(grad_fn, start, buffers, x_all, y_all, plan, local, width, workspace))
        if out is not None:
            return out
    flat, params = flat_buffer(start, m, stacked_start, workspace)
    shared = chunked and not stacked_start   # the chunked path writes the start chunk by chunk
    with torch.no_grad():
        for k, v in ({} if shared else start).items():
            params[k].copy_(v[order] if stacked_start and order is not None else
                            v if stacked_start else v.unsqueeze(0).expand_as(params[k]))
    index, mask, active = ((plan.index, plan.mask, plan.active) if order is None else
                           (plan.index[order], plan.mask[order], plan.active[order]))
    expected = None if plan.expected is None else (plan.expected if order is None else plan.expected[order])
    shapes = {k: tuple(v.shape[1:]) for k, v in params.items()}
    if chunked:   # a chunk's clients take all their steps together
        return _train_flat(grad_fn, flat, params, shapes, buffers, x_all, y_all, plan, local, order, live, width,
                           prefix, chunk, start, stacked_start, workspace, index, mask, active, expected,
                           flatten(start) if shared else None)
    velocity = ({k: torch.zeros_like(v) for k, v in params.items()} if local.optimizer == "momentum"
                else None)
    with torch.no_grad():
        for s in range(plan.steps):
            k_s, w = live[s], width[s]
            z = scale = None
            if noise_std is not None:
                z = {k: (gen(p.shape, s) if callable(gen) else  # lockstep: each run's own generator
                         torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype))
                     for k, p in params.items()}
                if order is not None:
                    z = {k: v[order] for k, v in z.items()}
                std = noise_std.to(mask.dtype) if order is None else noise_std.to(mask.dtype)[order]
                scale = std / (expected if expected is not None else mask[:, s].sum(1).clamp(min=1.0))
            for i in range(0, k_s, chunk):
                rows = slice(i, min(i + chunk, k_s))
                idx = index[rows, s, :w]
                rows_idx = idx.reshape(-1)
                part = {k: p[rows] for k, p in params.items()}
                grads = grad_fn(part, buffers, gather_rows(x_all, idx, rows_idx), gather_rows(y_all, idx, rows_idx),
                                mask[rows, s, :w])
                if expected is not None:  # Poisson batches: the clipped sum over the expected size
                    ratio = mask[rows, s, :w].sum(1) / expected[rows]
                    grads = {k: g * ratio.view(-1, *([1] * (g.dim() - 1))).to(g.dtype) for k, g in grads.items()}
                if z is not None:
                    c = scale[rows]
                    grads = {k: g + c.view(-1, *([1] * (g.dim() - 1))).to(g.dtype) * z[k][rows]
                             for k, g in grads.items()}
                a = None if prefix else active[rows, s]
                for k, p in part.items():
                    sgd_update(p, grads[k], a, local, None if velocity is None else velocity[k][rows])
    if order is not None:  # back to the callers' client order
        out, params = flat_buffer(start, m, stacked_start, workspace)
        out.index_copy_(0, order, flat)
    return params


def _train_flat(grad_fn, flat, params, shapes, buffers, x_all, y_all, plan, local, order, live, width, prefix,
                chunk, start, stacked_start, workspace, index, mask, active, expected, shared=None):
    """:func:`train_clients`'s steps where the gradients are unclipped (``grad_fn.unclipped``), each
    step :func:`flat_step` on the chunk's rows of the buffer.

    Chunk by chunk: a chunk's clients take all their steps before the next chunk starts (no
    draws happen here, and a client's steps depend on its own rows only), so the rows, their
    gradients and their momentum (one ``[chunk, d]`` buffer, reused) stay small and warm; a step's
    rows are those of the step-by-step order (the chunk's rows still active at that step).
    ``shared`` ``[d]``: every client's start, copied to a chunk's rows as the chunk begins."""
    m = flat.shape[0]
    velocity = flat.new_empty(min(chunk, m), flat.shape[1]) if local.optimizer == "momentum" else None
    with torch.no_grad():
        for i in range(0, m, chunk):
            n = min(chunk, m - i)
            if shared is not None:
                flat[i:i + n].copy_(shared.expand(n, -1))
            v = None if velocity is None else velocity[:n].zero_()
            for s in range(plan.steps):
                stop, w = min(i + n, live[s]), width[s]
                if stop <= i:
                    continue
                rows = slice(i, stop)
                flat_step(grad_fn, flat if stop - i == m else flat[rows], shapes, buffers, x_all, y_all,
                          index[rows, s, :w], mask[rows, s, :w], None if expected is None else expected[rows],
                          None if prefix else active[rows, s], local, None if v is None else v[:stop - i])
    if order is not None:  # back to the callers' client order
        out, params = flat_buffer(start, m, stacked_start, workspace)
        out.index_copy_(0, order, flat)
    return params


def flat_step(grad_fn, part: torch.Tensor, shapes: dict, buffers, x_all: torch.Tensor, y_all: torch.Tensor,
              idx: torch.Tensor, batch_mask: torch.Tensor, expected: Optional[torch.Tensor], a: Optional[torch.Tensor],
              local: LocalConfig, v: Optional[torch.Tensor]) -> None:
    """One unclipped local step, in place, of the clients whose parameters are the rows of ``part``
    ``[rows, d]`` (the tensors of ``shapes`` side by side): their batches (sample indices
    ``idx [rows, w]``, ``batch_mask [rows, w]``), each layer's gradient, the Poisson ratio (the sum over
    the ``expected`` batch size, where given), then :func:`sgd_update` of each layer's view of the rows
    (``a``: which rows are active, None = all; ``v``: their momentum rows, ``[rows, d]``). Layer by
    layer rather than one ``[rows, d]`` gradient: placing the gradients side by side cost a copy of
    them, 15 % of a CPU step of the MLP (docs/benchmarks.md); the arithmetic is the same element by
    element."""
    rows_idx = idx.reshape(-1)   # one copy of the step's indices for both gathers
    params = layer_views(part, shapes)
    grads = grad_fn(params, buffers, gather_rows(x_all, idx, rows_idx), gather_rows(y_all, idx, rows_idx), batch_mask)
    ratio = None if expected is None else batch_mask.sum(1) / expected   # Poisson: the sum over the expected size
    velocity = None if v is None else layer_views(v, shapes)
    for k, p in params.items():
        g = grads[k] if ratio is None else grads[k] * ratio.view(-1, *([1] * (p.dim() - 1))).to(p.dtype)
        sgd_update(p, g, a, local, None if velocity is None else velocity[k])


def layer_views(flat: torch.Tensor, shapes: dict[str, tuple]) -> dict[str, torch.Tensor]:
    """``{name: [m, *shape]}`` views of the rows of ``flat [m, d]``, the tensors of ``shapes`` side by
    side in that order: one ``as_strided`` each (a slice and a ``view`` are four dispatched ops, every
    local step: :func:`fedcore.engine.flat.unflatten` does the same for one row)."""
    (rows, col), offset, views = flat.stride(), flat.storage_offset(), {}
    for k, sh in shapes.items():
        views[k] = flat.as_strided((flat.shape[0], *sh), (rows, *(st * col for st in contiguous_strides(sh))), offset)
        offset += math.prod(sh) * col
    return views


def gather_rows(data: torch.Tensor, idx: torch.Tensor, flat_idx: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``data[idx]`` by rows (``index_select``: on CPU 1.2-3x faster than advanced indexing);
    ``flat_idx``: ``idx.reshape(-1)`` when the caller has it."""
    return data.index_select(0, idx.reshape(-1) if flat_idx is None else flat_idx).view(*idx.shape, *data.shape[1:])


def sgd_update(p: torch.Tensor, g: torch.Tensor, a: Optional[torch.Tensor], local: LocalConfig,
                v: Optional[torch.Tensor]) -> None:
    """One in-place SGD (or momentum) step of the clients ``p`` (rows) with gradients ``g``,
    in ``torch.optim.SGD``'s arithmetic (``g + wd p``, ``v <- mu v + g``, ``p <- p - lr v``
    as one fused ``add_``). ``a`` [rows] (None = all active) masks the rows that idle."""
    if local.weight_decay:
        g = g.add(p, alpha=local.weight_decay)
    if a is None:
        if v is not None:
            g = v.mul_(local.momentum).add_(g)
        p.add_(g, alpha=-local.lr)
        return
    a = a.view(-1, *([1] * (p.dim() - 1))) > 0
    if v is not None:
        v.copy_(torch.where(a, v * local.momentum + g, v))
        g = v
    p.copy_(torch.where(a, p.add(g, alpha=-local.lr), p))
