"""DP-SGD local steps captured as CUDA graphs and replayed (issue 41, Build 3: fewer launches).

A DP-SGD round (Abadi et al. 2016, Alg. 1: per-sample clipping, Gaussian noise on the clipped sum,
one SGD step) launches about 340 small kernels per local step from Python; on an H200 the GPU then
idles two thirds of a round (W4: busy 23-33 %). The same step captured once as a CUDA graph and
replayed launches them all at once: W4's whole local training ran 5.2x faster as one graph, with
bitwise the same parameters (``benchmarks.graph_step``, docs/benchmarks.md, 2026-11-27).

A graph replays fixed shapes and fixed addresses, so a step here reads **static buffers**: the
clients' parameters ``[m, d]``, the step's sample indices and mask padded to a **fixed width** (a
Poisson plan's batch widths change every step; they are padded up to a multiple of
:data:`WIDTH_QUANTUM` and masked: padding positions get a clipping factor 0, so they add nothing),
and the noise scale. One graph per ``(clients, width)`` is kept for the run (W4: two or three). The
noise is drawn from the run's generator, registered with each graph, in the eager order (one draw
per parameter tensor per step), so the draws are those of the eager step. The arithmetic is the
eager step's (:func:`fedcore.engine.local.train_clients`) with the batch width padded: sums over the
batch then have more (zero) terms, so the results agree with the eager path to float rounding, not
bit for bit.

Used where it applies (:func:`fedcore.engine.local.train_clients` decides): on CUDA, DP-SGD with every client taking every step (an
IID or equal-size partition), one vmap over all clients. ``FEDCORE_CUDA_GRAPHS=off`` trains every
step eagerly. A step that cannot be captured (an op torch refuses inside a capture) is reported
once on stderr and the run goes on eagerly.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Optional

import torch

from .flat import flatten

GRAPHS_ENV = "FEDCORE_CUDA_GRAPHS"
WIDTH_QUANTUM = 8
"""Batch widths are padded up to a multiple of this (a handful of graphs per run)."""


def enabled(device: torch.device) -> bool:
    """Whether a run on ``device`` replays its DP-SGD steps as graphs (CUDA, unless turned off)."""
    return device.type == "cuda" and os.environ.get(GRAPHS_ENV, "on").strip().lower() not in ("off", "0", "no")


def padded_width(widths: list[int], quantum: int = WIDTH_QUANTUM) -> int:
    """The one batch width of a round's steps: the widest step, rounded up to ``quantum``.

    >>> padded_width([41, 52, 44])
    56
    """
    return quantum * math.ceil(max(widths) / quantum)


class _Step:
    """One ``(clients, width)`` step: its static buffers, and its graph once captured."""

    def __init__(self, start: dict, m: int, width: int, poisson: bool, momentum: bool):
        from .local import flat_buffer

        self.flat, self.params = flat_buffer(start, m, False)
        dev = self.flat.device
        self.velocity = {k: torch.zeros_like(v) for k, v in self.params.items()} if momentum else None
        self.index = torch.zeros(m, width, dtype=torch.long, device=dev)
        self.mask = torch.zeros(m, width, dtype=torch.float32, device=dev)
        self.std = torch.zeros(m, dtype=torch.float32, device=dev)
        self.expected = torch.ones(m, dtype=torch.float32, device=dev) if poisson else None
        self.graph = None


def step_once(st: _Step, grad_fn, buffers, x_all, y_all, local, gen) -> None:
    """One DP-SGD step of every client of ``st`` from its static buffers, in place: the eager step of
    :func:`fedcore.engine.local.train_clients` (clip, Poisson ratio, noise on the clipped sum, SGD) at
    the padded width. What a graph captures, and what runs eagerly on a host without CUDA (tests)."""
    from .local import gather_rows, sgd_update

    idx, mask = st.index, st.mask
    rows_idx = idx.reshape(-1)
    grads = grad_fn(st.params, buffers, gather_rows(x_all, idx, rows_idx), gather_rows(y_all, idx, rows_idx), mask)
    if st.expected is not None:   # Poisson batches: the clipped sum over the expected size
        ratio = mask.sum(1) / st.expected
        grads = {k: g * ratio.view(-1, *([1] * (g.dim() - 1))).to(g.dtype) for k, g in grads.items()}
    z = {k: torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype) for k, p in st.params.items()}
    scale = st.std / (st.expected if st.expected is not None else mask.sum(1).clamp(min=1.0))
    grads = {k: g + scale.view(-1, *([1] * (g.dim() - 1))).to(g.dtype) * z[k] for k, g in grads.items()}
    for k, p in st.params.items():
        sgd_update(p, grads[k], None, local, None if st.velocity is None else st.velocity[k])


class StepGraphs:
    """The graphs of one run (like :class:`~fedcore.engine.local.Workspace`, one per :func:`iter_run`)."""

    def __init__(self, capture: bool = True):
        self.capture = capture       # False: the same padded steps, eagerly (a host without CUDA)
        self.steps: dict[tuple, _Step] = {}
        self.broken: Optional[str] = None
        self.replays = 0

    def train(self, grad_fn, start: dict, buffers, x_all, y_all, plan, local, noise_std, gen,
              widths: list[int], workspace=None) -> Optional[dict]:
        """Every client's local DP-SGD steps of ``plan``, replayed; ``{name: [m, ...]}`` views of a
        buffer of ``workspace`` (as :func:`~fedcore.engine.local.train_clients` returns), or None where
        this round is trained eagerly (capture failed once in this run)."""
        if self.broken is not None:
            return None
        m, steps = plan.index.shape[0], plan.steps
        width = padded_width(widths)
        key = (m, width, plan.expected is not None, local.optimizer == "momentum", tuple(start), id(gen))
        st = self.steps.get(key)
        if st is None:
            st = self.steps[key] = _Step(start, m, width, plan.expected is not None, local.optimizer == "momentum")
        b = plan.index.shape[2]
        index = torch.nn.functional.pad(plan.index, (0, max(0, width - b)))[..., :width]
        mask = torch.nn.functional.pad(plan.mask, (0, max(0, width - b)))[..., :width]
        with torch.no_grad():
            st.flat.copy_(flatten(start).expand(m, -1))
            if st.velocity is not None:
                for v in st.velocity.values():
                    v.zero_()
            st.std.copy_(noise_std.to(torch.float32))
            if st.expected is not None:
                st.expected.copy_(plan.expected.to(torch.float32))
            for s in range(steps):
                st.index.copy_(index[:, s])
                st.mask.copy_(mask[:, s])
                if not self._run(st, grad_fn, buffers, x_all, y_all, local, gen):
                    return None
        from .local import flat_buffer

        out, params = flat_buffer(start, m, False, workspace)
        out.copy_(st.flat)
        return params

    def _run(self, st: _Step, grad_fn, buffers, x_all, y_all, local, gen) -> bool:
        if not self.capture:
            step_once(st, grad_fn, buffers, x_all, y_all, local, gen)
            return True
        if st.graph is None:
            try:
                st.graph = _capture(st, grad_fn, buffers, x_all, y_all, local, gen)
            except Exception as exc:   # noqa: BLE001 -- the run goes on eagerly
                self.broken = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(f"fedcore: CUDA graph capture failed, training eagerly: {self.broken}", file=sys.stderr)
                return False
        st.graph.replay()
        self.replays += 1
        return True


def _capture(st: _Step, grad_fn, buffers, x_all, y_all, local, gen):
    """Capture :func:`step_once` on ``st`` with ``gen`` registered; the run's buffers and generator
    are as before (warm-up on copies, the generator's offset put back)."""
    saved = st.flat.clone()
    saved_v = None if st.velocity is None else {k: v.clone() for k, v in st.velocity.items()}
    scratch = torch.Generator(device=gen.device).manual_seed(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up on the capture stream: cuDNN plans, workspace sizes
        for _ in range(2):
            step_once(st, grad_fn, buffers, x_all, y_all, local, scratch)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    graph.register_generator_state(gen)
    offset = gen.get_offset()
    with torch.cuda.graph(graph):
        step_once(st, grad_fn, buffers, x_all, y_all, local, gen)
    gen.set_offset(offset)
    st.flat.copy_(saved)
    if saved_v is not None:
        for k, v in st.velocity.items():
            v.copy_(saved_v[k])
    return graph
