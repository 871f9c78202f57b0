"""A round up to the server (:func:`fedcore.engine.loop.iter_run`): choose the clients, plan their
batches, train them together (:mod:`.local`); above the memory budget, through the mechanism and the
aggregator too, block by block (:mod:`.stream`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from .flat import flatten_stacked
from .graphs import StepGraphs, enabled as graphs_enabled
from .local import CPU_ROWS_BYTES, Workspace, client_chunk, client_gradient_fn, train_clients
from .memory import keep_freed
from .plan import make_plan
from .reference import train_clients_loop
from .rounds import choose_clients
from .stream import block_rows, stream_budget, stream_round, streams


@dataclass
class Local:
    """One round up to the server: the chosen clients and their trained rows."""

    selected: np.ndarray
    events: list
    signals: dict
    sel: Optional[torch.Tensor] = None
    client_flat: Optional[torch.Tensor] = None
    streamed: Optional[tuple] = None
    """A round summed block by block (:mod:`.stream`): its upload's fields and the aggregate."""


class LocalRounds:
    """What every round's local training of setup ``s`` reuses: the per-sample gradient function, the
    CPU chunk, the clients' buffer and, on CUDA, the captured steps. ``trainer="loop"``: the plain
    per-client loop (tests and benchmarks only)."""

    def __init__(self, s, gen: torch.Generator, watcher=None, trainer: str = "batched", row_bytes: int = 0):
        self.s, self.gen, self.watcher, self.trainer = s, gen, watcher, trainer
        self.grad_fn = client_gradient_fn(s.model, s.mechanism.per_sample_clip)
        self.chunk = None  # clients per vmap call: all of them, except on CPU
        if s.device.type == "cpu":
            self.chunk = client_chunk(s.model, tuple(s.x_train.shape[1:]), s.cfg.local.batch_size)
            keep_freed(2 * CPU_ROWS_BYTES)  # a chunk reuses the blocks the last one freed
        self.workspace = Workspace()  # the clients' training buffer, kept across rounds
        self.graphs = StepGraphs() if graphs_enabled(s.device) and trainer == "batched" else None
        self.row_bytes, self.budget = row_bytes, stream_budget()

    def train(self, plan, step_noise=None) -> torch.Tensor:
        """The ``[m, d]`` parameters of the clients of ``plan`` trained from ``s.params``."""
        s = self.s
        return flatten_stacked(train_clients(s.model, s.params, s.x_train, s.y_train, plan, s.cfg.local,
                                             grad_fn=self.grad_fn, chunk=self.chunk, noise_std=step_noise,
                                             gen=self.gen, workspace=self.workspace, graphs=self.graphs))

    def __call__(self, rnd: int, rng: np.random.Generator, global_flat: torch.Tensor) -> Local:
        """Round ``rnd`` up to the server (module doc)."""
        s, watcher = self.s, self.watcher
        selected, events = choose_clients(s, rnd, rng)
        out = Local(selected, events, dict(s.aggregator.round_signals()))
        if not len(selected):
            return out
        out.sel = torch.as_tensor(np.asarray(selected), dtype=torch.long, device=s.device)
        plan = make_plan(s.padded[out.sel], s.counts[out.sel], s.cfg.local, self.gen, s.mechanism.poisson_batches)
        if watcher is not None:
            watcher.plan(out.sel, plan)
        step_noise = s.mechanism.step_noise_std(out.sel)
        if self.trainer == "loop" and step_noise is not None:
            raise ValueError("trainer='loop' does not add per-step DP-SGD noise; use the batched trainer")
        if self.trainer == "loop":
            out.client_flat = flatten_stacked(train_clients_loop(s.model, s.params, s.x_train, s.y_train, plan,
                                                                 s.cfg.local, clip=s.mechanism.per_sample_clip))
        elif step_noise is None and watcher is None and streams(s, len(selected), self.row_bytes, self.budget):
            out.streamed = stream_round(s, plan, out.sel, global_flat, rnd, self.gen, self.train,
                                        block_rows(len(selected), self.row_bytes, self.budget, self.chunk))
        else:  # the buffer becomes the updates (server_round); the next round may reuse it
            out.client_flat = self.train(plan, step_noise)
        return out
