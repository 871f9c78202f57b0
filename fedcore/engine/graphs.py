"""Local steps captured as CUDA graphs and replayed (issue 41, Build 3: fewer launches).

A DP-SGD round (Abadi et al. 2016, Alg. 1: per-sample clipping, Gaussian noise on the clipped sum,
one SGD step) launches about 340 small kernels per local step from Python; on an H200 the GPU then
idles two thirds of a round (W4: busy 23-33 %). The same step captured once as a CUDA graph and
replayed launches them all at once: W4's whole local training ran 5.2x faster as one graph, with
bitwise the same parameters (``benchmarks.graph_step``, docs/benchmarks.md, 2026-11-27). Unclipped
steps (W3: ULDP-FED's DSDP-FedAvg clients, ~266 aten calls a step, :mod:`.stacked`) are captured
the same way.

A graph replays fixed shapes and fixed addresses, so a step here reads **static buffers**: the
clients' parameters ``[rows, d]``, the step's sample indices and mask, and (DP-SGD) the noise scale.

- **DP-SGD**: the batch is padded to a **fixed width** (a Poisson plan's batch widths change every
  step; they are padded up to a multiple of :data:`WIDTH_QUANTUM` and masked: padding positions get a
  clipping factor 0, so they add nothing). The noise is drawn from the run's generator, registered
  with each graph, in the eager order (one draw per parameter tensor per step), so the draws are
  those of the eager step. Sums over the batch then have more (zero) terms, so the results agree
  with the eager path to float rounding, not bit for bit.
- **Unclipped**: no draws, so the *clients* are padded up to a multiple of :data:`ROWS_QUANTUM`
  (masked rows; a round's number of clients changes under Poisson user sampling) and the width is
  the widest step's. Each client's arithmetic is its own, so on CPU the padded steps are bitwise the
  eager ones (``tests/test_graphs.py``); on a GPU a kernel may pick another algorithm for another
  number of clients, so a replay is bitwise its padded eager step and agrees with the unpadded one
  to rounding.

The test-set evaluation (:func:`fedcore.engine.evaluate.evaluate`, 164 aten calls a W3 round) is
captured whole, once per run: the round's global parameters are copied into static buffers and the
pass replayed (the same kernels on the same data).

One graph per shape is kept for the run (W4: two or three; W3: about three, and the evaluation's). Used where it applies
(:func:`fedcore.engine.local.train_clients` decides): on CUDA, every client taking every step (an
IID or equal-size partition), one vmap over all clients, static buffers within :data:`GRAPH_BYTES`.
``FEDCORE_CUDA_GRAPHS=off`` trains every step eagerly. A step that cannot be captured (an op torch
refuses inside a capture) is reported once on stderr and the run goes on eagerly.
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
"""DP-SGD batch widths are padded up to a multiple of this (a handful of graphs per run)."""
ROWS_QUANTUM = 16
"""Unclipped steps: clients are padded up to a multiple of this (W3's ~100 a round: a few graphs)."""
GRAPH_BYTES = 2**30
"""A step whose static parameters (and momentum) would pass this many bytes is trained eagerly (the
graph's buffers come on top of the run's own: 5,000 clients of the MLP would double 3.2 GB), and an
evaluation whose chunk's activations (every layer's output, summed) would pass it runs eagerly (a
graph keeps its memory for the run): cnn_uldp's 8,192 test images take 508 MiB, cnn_kdp's 2.7 GiB."""


def enabled(device: torch.device) -> bool:
    """Whether a run on ``device`` replays its local steps as graphs (CUDA, unless turned off)."""
    return device.type == "cuda" and os.environ.get(GRAPHS_ENV, "on").strip().lower() not in ("off", "0", "no")


def padded_width(widths: list[int], quantum: int = WIDTH_QUANTUM) -> int:
    """The one batch width of a round's steps: the widest step, rounded up to ``quantum``.

    >>> padded_width([41, 52, 44])
    56
    """
    return quantum * math.ceil(max(widths) / quantum)


class _Step:
    """One ``(rows, width)`` step: its static buffers, and its graph once captured. ``noisy``: a DP-SGD
    step (per-tensor momentum and a noise scale); otherwise an unclipped step
    (:func:`~fedcore.engine.local.flat_step`: momentum one ``[rows, d]`` buffer, seen layer by layer)."""

    def __init__(self, start: dict, rows: int, width: int, poisson: bool, momentum: bool, noisy: bool):
        from .local import flat_buffer

        self.flat, self.params = flat_buffer(start, rows, False)
        dev = self.flat.device
        self.velocity = None
        if momentum:
            self.velocity = ({k: torch.zeros_like(v) for k, v in self.params.items()} if noisy
                             else torch.zeros_like(self.flat))
        self.index = torch.zeros(rows, width, dtype=torch.long, device=dev)
        self.mask = torch.zeros(rows, width, dtype=torch.float32, device=dev)
        self.std = torch.zeros(rows, dtype=torch.float32, device=dev) if noisy else None
        self.expected = torch.ones(rows, dtype=torch.float32, device=dev) if poisson else None
        self.graph = None

    def state(self) -> list[torch.Tensor]:
        """The tensors a step changes (parameters, momentum)."""
        v = self.velocity
        return [self.flat, *([] if v is None else v.values() if isinstance(v, dict) else [v])]


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
        self.tests: dict[tuple, Optional[tuple]] = {}   # evaluation: static parameters, graph, outputs
        self.eval_broken: Optional[str] = None
        self.replays = 0

    def train(self, grad_fn, start: dict, buffers, x_all, y_all, plan, local, noise_std, gen,
              widths: list[int], workspace=None) -> Optional[dict]:
        """Every client's local DP-SGD steps of ``plan``, replayed; ``{name: [m, ...]}`` views of a
        buffer of ``workspace`` (as :func:`~fedcore.engine.local.train_clients` returns), or None where
        this round is trained eagerly (capture failed once in this run, or the buffers are too big)."""
        m, width = plan.index.shape[0], padded_width(widths)
        st = self._step(start, m, width, plan, local, noisy=True, gen=gen)
        if st is None:
            return None
        st.std.copy_(noise_std.to(torch.float32))
        return self._replay(st, start, plan, workspace, gen,
                            lambda g: step_once(st, grad_fn, buffers, x_all, y_all, local, g))

    def train_flat(self, grad_fn, start: dict, buffers, x_all, y_all, plan, local, widths: list[int],
                   workspace=None) -> Optional[dict]:
        """The same for unclipped steps (``grad_fn.unclipped``; W3's DSDP-FedAvg clients):
        each step is :func:`~fedcore.engine.local.flat_step` on the static buffers. The clients are
        padded up to a multiple of :data:`ROWS_QUANTUM` (masked rows: a round's changing number of
        clients needs a few graphs, not one each), the width is the widest step's (nothing is padded
        when every step is as wide: the eager step's arithmetic)."""
        from .local import flat_step

        m = plan.index.shape[0]
        rows = ROWS_QUANTUM * math.ceil(m / ROWS_QUANTUM)
        shapes = {k: tuple(v.shape) for k, v in start.items()}
        st = self._step(start, rows, max(widths), plan, local, noisy=False, gen=None)
        if st is None:
            return None
        return self._replay(st, start, plan, workspace, None,
                            lambda g: flat_step(grad_fn, st.flat, shapes, buffers, x_all, y_all, st.index, st.mask,
                                                st.expected, None, local, st.velocity))

    def _step(self, start, rows, width, plan, local, noisy, gen) -> Optional[_Step]:
        """This shape's static buffers (made on first use); None where the run trains eagerly."""
        momentum = local.optimizer == "momentum"
        d = sum(v.numel() for v in start.values())
        if self.broken is not None or rows * d * 4 * (1 + momentum) > GRAPH_BYTES:
            return None
        key = (rows, width, plan.expected is not None, momentum, tuple(start), noisy, None if gen is None else id(gen))
        if key not in self.steps:
            self.steps[key] = _Step(start, rows, width, plan.expected is not None, momentum, noisy)
        return self.steps[key]

    @torch.no_grad()
    def _replay(self, st: _Step, start: dict, plan, workspace, gen, body) -> Optional[dict]:
        """Every step of ``plan`` through ``st`` (its rows and width padded, masked), from ``start``;
        the clients' parameters as :func:`~fedcore.engine.local.train_clients` returns them."""
        from .local import flat_buffer

        m, steps, b = plan.index.shape[0], plan.steps, plan.index.shape[2]
        rows, width = st.index.shape
        pad = (0, max(0, width - b), 0, 0, 0, rows - m)
        index = torch.nn.functional.pad(plan.index, pad)[..., :width]
        mask = torch.nn.functional.pad(plan.mask, pad)[..., :width]
        st.flat.copy_(flatten(start).expand(rows, -1))
        for v in st.state()[1:]:
            v.zero_()
        if st.expected is not None:
            st.expected[:m].copy_(plan.expected.to(torch.float32))
        for s in range(steps):
            st.index.copy_(index[:, s])
            st.mask.copy_(mask[:, s])
            if not self._run(st, body, gen):
                return None
        out, params = flat_buffer(start, m, False, workspace)
        out.copy_(st.flat[:m])
        return params

    @torch.no_grad()
    def evaluate(self, sums, params: dict, key: tuple, size=None) -> Optional[tuple]:
        """``sums(params)`` (the test pass of :func:`fedcore.engine.evaluate.evaluate`) replayed: the
        parameters copied into static buffers, the pass captured on first use (one graph per ``key``:
        the test set and chunk). Its outputs are the graph's own tensors (read them before the next
        call); None where the pass runs eagerly: capture failed once in this run, or ``size()`` (the
        pass's activation bytes, asked once) passes :data:`GRAPH_BYTES` (a graph keeps its memory)."""
        if self.eval_broken is not None:
            return None
        full = (key, tuple((k, v.shape) for k, v in params.items()))
        if full not in self.tests and size is not None and size() > GRAPH_BYTES:
            self.tests[full] = None
        if full not in self.tests:
            static = {k: v.detach().clone() for k, v in params.items()}
            if not self.capture:
                self.tests[full] = (static, None, None)
            else:
                try:
                    graph, out = _capture([], static[next(iter(static))].device, lambda _g: sums(static), None)
                except Exception as exc:   # noqa: BLE001 -- the run goes on eagerly
                    self.eval_broken = _report(exc, "evaluating")
                    return None
                self.tests[full] = (static, graph, out)
        if self.tests[full] is None:
            return None
        static, graph, out = self.tests[full]
        for k, v in params.items():
            static[k].copy_(v)
        if graph is None:
            return sums(static)
        graph.replay()
        self.replays += 1
        return out

    def _run(self, st: _Step, body, gen) -> bool:
        if not self.capture:
            body(gen)
            return True
        if st.graph is None:
            try:
                st.graph, _ = _capture(st.state(), st.flat.device, body, gen)
            except Exception as exc:   # noqa: BLE001 -- the run goes on eagerly
                self.broken = _report(exc, "training")
                return False
        st.graph.replay()
        self.replays += 1
        return True


def _report(exc: Exception, doing: str) -> str:
    """Say once on stderr that a capture failed (the run goes on eagerly); the reason."""
    reason = f"{type(exc).__name__}: {str(exc)[:300]}"
    print(f"fedcore: CUDA graph capture failed, {doing} eagerly: {reason}", file=sys.stderr)
    return reason


def _capture(state: list[torch.Tensor], device: torch.device, body, gen) -> tuple:
    """Capture ``body`` with ``gen`` registered (None: a pass without draws); ``(graph, what the
    captured call returned)``. ``state`` (the tensors ``body`` changes) and the generator are as
    before (warm-up, then the tensors copied back and the generator's offset put back)."""
    saved = [t.clone() for t in state]
    scratch = torch.Generator(device=device).manual_seed(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up on the capture stream: cuDNN plans, workspace sizes
        for _ in range(2):
            body(scratch)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    offset = None
    if gen is not None:
        graph.register_generator_state(gen)
        offset = gen.get_offset()
    with torch.cuda.graph(graph):
        out = body(gen)
    if gen is not None:
        gen.set_offset(offset)
    for t, kept in zip(state, saved):
        t.copy_(kept)
    return graph, out
