"""The informed adversary's re-identification: match the update against every candidate's own.

The adversary of the cap (Balle, Cherubin & Hayes 2022, "Reconstructing training data with
informed adversaries"; ``shared/ATTACKS.md`` §3) knows the global model and the n images the
client may have trained on. For each candidate z_j it computes the update that image alone
would give, ``u_j = -∇θ ℓ(f_θ(x_j), y_j)`` at the round's global parameters, and guesses the
candidate most aligned with what it received ``v``:

    ĵ = argmax_j ⟨v, u_j⟩ / (‖v‖ ‖u_j‖)

For one example, one step and isotropic Gaussian noise after L2 clipping this is close to the
likelihood-ratio guess among real candidates, so a mechanism that adds far less noise than it
accounts shows up here (the planted σ/10 of ``tests/test_attacks.py``); real digits' updates are
too alike to expose σ/3, which the worst-case record does (:mod:`.worst_case`). Unlike the
analytic inversion it needs no linear first layer: one ``vmap(grad)`` over the candidates
(:class:`DenseCandidates`). For fully connected models (logreg, mlp) the per-example gradient of
each layer is the outer product ``δ_l a_{l-1}ᵀ`` of its back-propagated error and its input, so
the score and the norm come from one batched forward and backward pass without forming any
``u_j`` (:class:`LayerCandidates`; the "ghost norm" of Goodfellow 2015, "Efficient per-example
gradient computations", and of Li et al. 2022's ghost clipping).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torch.func import functional_call, vmap

from ..engine.flat import layer_slices
from ..models.linear import FlatMLP
from .inversion import LinearLayer
from .metrics import by_block
from .registry import Attack, reconstruction_game, register


def candidate_updates(model: torch.nn.Module, params: dict, x: torch.Tensor, y: torch.Tensor,
                      chunk: int = 512) -> torch.Tensor:
    """``[n, d]``: each candidate's single-example update direction ``-∇θ ℓ`` (flattened).

    One copy of the parameters per candidate, a ``vmap`` of the forward pass and one plain
    backward (as :mod:`fedcore.engine.local` trains): ``torch.func.grad``'s first call would
    import ``torch._dynamo``, a second of start-up on every run that carries the attack."""
    rows = []
    for i in range(0, len(x), chunk):
        xs, ys = x[i:i + chunk], y[i:i + chunk]
        copies = {k: v.detach().unsqueeze(0).repeat(len(xs), *([1] * v.dim())).requires_grad_()
                  for k, v in params.items()}
        logits = vmap(lambda p, xi: functional_call(model, p, (xi[None],))[0])(copies, xs)
        loss = -torch.log_softmax(logits, -1).gather(1, ys[:, None]).sum()
        grads = torch.autograd.grad(loss, list(copies.values()))
        rows.append(-torch.cat([g.reshape(len(xs), -1) for g in grads], 1))
    return torch.cat(rows)


def match_candidates(received: torch.Tensor, updates: torch.Tensor) -> int:
    """Index of the candidate whose update is most aligned (cosine) with ``received [d]``."""
    norms = updates.norm(dim=1).clamp(min=1e-30)
    return int(((updates @ received.to(updates.dtype)) / norms).argmax())


class Candidates:
    """The candidates of several clients, over one or more rounds: block ``b`` holds client b's; the
    guess ``ĵ = argmax_j ⟨v, u_j⟩ / ‖u_j‖`` of each received ``v`` among its client's block at its
    round's parameters (:meth:`best`)."""

    def best(self, vectors, blocks: list[int], rounds: Optional[list[int]] = None) -> list[int]:
        """For each received ``vectors[i] [d]`` (an array or a tensor), the index within block
        ``blocks[i]`` of its guess, at round ``rounds[i]`` (default: the first) of these candidates."""
        raise NotImplementedError


class DenseCandidates(Candidates):
    """Every ``u_j`` of one round written out (:func:`candidate_updates`), blocks of ``sizes``
    consecutive rows: any model."""

    def __init__(self, updates: torch.Tensor, sizes: list[int]):
        self.updates, self.sizes = updates, list(sizes)
        self.starts = [sum(self.sizes[:b]) for b in range(len(self.sizes))]

    def best(self, vectors, blocks: list[int], rounds: Optional[list[int]] = None) -> list[int]:
        vectors = torch.as_tensor(vectors, device=self.updates.device)
        return [match_candidates(v, self.updates[self.starts[b]:self.starts[b] + self.sizes[b]])
                for v, b in zip(vectors, blocks)]


class _PerRound(Candidates):
    """One round's :class:`Candidates` per round, each with its own block numbering (``order[t]``:
    pool block -> that round's block)."""

    def __init__(self, rounds: list[Candidates], order: list[dict]):
        self.rounds, self.order = rounds, order

    def best(self, vectors, blocks: list[int], rounds: Optional[list[int]] = None) -> list[int]:
        rounds = [0] * len(blocks) if rounds is None else list(rounds)
        out = [0] * len(blocks)
        for t in sorted(set(rounds)):
            rows = [i for i, u in enumerate(rounds) if u == t]
            got = self.rounds[t].best(vectors[rows], [self.order[t][blocks[i]] for i in rows])
            for i, g in zip(rows, got):
                out[i] = g
        return out


class LayerCandidates(Candidates):
    """The ``u_j`` of a :class:`~fedcore.models.linear.FlatMLP`, kept as each layer's input
    ``a_{l-1}`` and error ``δ_l = ∂ℓ_j/∂z_l``, feature-major: ``[T, B, fan, n]`` for ``T`` rounds and
    ``B`` blocks padded to ``n`` candidates (the first layer's input, the images, is ``[B, pixels, n]``
    for every round; ``valid [B, n]`` marks the real candidates). Layer l's part of ``-u_j`` is
    ``(δ_l a_{l-1}ᵀ, δ_l)`` (weight, bias), so

        ⟨v, u_j⟩ = -Σ_l δ_l · (V_l a_{l-1} + b_l),   ‖u_j‖² = Σ_l ‖δ_l‖² (‖a_{l-1}‖² + 1)

    with ``V_l``, ``b_l`` layer l's slices of ``v`` (``layers``: where each sits in the flattened
    parameters). Each received vector is scored against its own block only, one batched product
    per layer; numpy on the host (small arrays: no kernel per operation; the feature-major layout
    keeps every reduction over a contiguous axis). Every product and reduction is per block and
    round, so a vector's guess does not depend on how many rounds are computed together."""

    def __init__(self, layers: list[LinearLayer], inputs: list[np.ndarray], errors: list[np.ndarray],
                 valid: np.ndarray, square: np.ndarray):
        self.layers, self.inputs, self.errors, self.valid = layers, inputs, errors, valid
        squares = [square, *(np.einsum("tbin,tbin->tbn", a, a) for a in inputs[1:])]   # ‖a_{l-1}‖²
        self.norms = np.sqrt(sum(np.einsum("tbon,tbon->tbn", d, d) * (s + 1) for s, d in zip(squares, errors)))

    def best(self, vectors, blocks: list[int], rounds: Optional[list[int]] = None) -> list[int]:
        if not len(blocks):
            return []
        v = vectors.detach().cpu().numpy() if isinstance(vectors, torch.Tensor) else np.asarray(vectors)
        blocks = np.asarray(blocks)
        rounds = np.zeros_like(blocks) if rounds is None else np.asarray(rounds)
        dot = 0.0
        for l, (layer, a, d) in enumerate(zip(self.layers, self.inputs, self.errors)):
            w = v[:, layer.weight].reshape(len(v), layer.rows, layer.inputs).astype(a.dtype, copy=False)
            if l == 0:       # the images: one product per block, every round's vectors of it at once
                mixed = by_block(w, a, blocks)
            else:
                mixed = w @ a[rounds, blocks]
            b = v[:, layer.bias].astype(a.dtype, copy=False)
            dot = dot + np.einsum("kon,kon->kn", mixed + b[:, :, None], d[rounds, blocks])
        score = np.where(self.valid[blocks], -dot / np.maximum(self.norms[rounds, blocks], 1e-30), -np.inf)
        return score.argmax(1).tolist()


class CandidatePool:
    """A run's candidates, fixed for the run: block ``b`` holds the images ``x[padded[b, :counts[b]]]``
    of one watched client (the padding is zeros, masked out by ``valid``), on the host,
    feature-major (``images [B, pixels, n]``, ``square [B, n]`` their squared norms, ``labels [B, n]``, and
    for fully connected models ``onehot [B, classes, n]``, made once, not per round).
    :meth:`at` gives the :class:`Candidates` at one or more rounds' global parameters."""

    def __init__(self, model: torch.nn.Module, params: dict, x: torch.Tensor, y: torch.Tensor,
                 padded: torch.Tensor, counts: list[int]):
        self.model, self.x, self.y, self.counts, self.padded = model, x, y, list(counts), padded
        n = padded.shape[1] if len(counts) else 0
        self.valid = np.arange(n)[None, :] < np.asarray(self.counts, dtype=np.int64).reshape(-1, 1)
        source = x.reshape(len(x), -1).to(next(iter(params.values())).dtype)
        index = padded.cpu().numpy()
        if source.device.type != "cpu":     # gathered on the device: only the pool's rows cross to the host
            source, index = source[padded.reshape(-1)].cpu().numpy(), np.arange(index.size).reshape(index.shape)
        else:
            source = source.numpy()
        rows = np.zeros((len(counts), n, source.shape[1]), dtype=source.dtype)   # padding: zeros, masked by valid
        self.square = np.zeros((len(counts), n), dtype=source.dtype)
        low, high = [], []
        for b, c in enumerate(self.counts):   # each block's own images, copied once straight into place
            block = rows[b, :c]
            np.take(source, index[b, :c], axis=0, out=block, mode="clip")   # "raise" buffers a copy
            self.square[b, :c] = np.einsum("np,np->n", block, block)
            low.append(block.min(initial=np.inf))
            high.append(block.max(initial=-np.inf))
        self.box = (float(min(low, default=0.0)), float(max(high, default=0.0)))
        """The pixel range of the candidates' images (read while each block is fresh in the cache)."""
        self.images = rows.transpose(0, 2, 1)   # feature-major, a view: BLAS reads the rows transposed
        self.labels = y[padded].cpu().numpy()
        self.layers = _flat_mlp_layers(model, params)
        self.onehot = None if self.layers is None else \
            (self.labels[:, None, :] == np.arange(self.layers[-1].rows)[:, None]).astype(self.images.dtype)
        widths = [w.shape[0] for k, w in params.items() if w.dim() == 2] if self.layers is not None else [1]
        self.round_bytes = max(1, 4 * self.valid.size * 2 * sum(widths))
        """What one round's candidates hold (each layer's output and error per candidate, float32)."""

    def host(self, params: dict) -> Optional[list[np.ndarray]]:
        """What :meth:`at` needs of a round's ``params``, copied to the host (None: the model is not
        fully connected, :meth:`at` takes ``params`` as they are)."""
        if self.layers is None:
            return None
        return [params[f"fc{i}.{k}"].detach().cpu().numpy() for i in range(1, len(self.layers) + 1)
                for k in ("weight", "bias")]

    def at(self, params: list, blocks: list[list[int]]) -> Candidates:
        """The candidates at each round's parameters ``params[t]`` (:meth:`host`'s arrays, or the
        parameters themselves), in closed form where the model allows it (:func:`layer_errors`; every
        block is computed: a few more rows cost less than a copy), else written out for the round's
        ``blocks[t]`` only."""
        if self.layers is not None:
            inputs, errors = layer_errors(params, self.images, self.onehot)
            return LayerCandidates(self.layers, inputs, errors, self.valid, self.square)
        rounds, order = [], []
        for p, wanted in zip(params, blocks):
            rows = [self.padded[b, : self.counts[b]] for b in wanted]
            at = torch.cat(rows)
            rounds.append(DenseCandidates(candidate_updates(self.model, p, self.x[at], self.y[at]),
                                          [len(r) for r in rows]))
            order.append({b: i for i, b in enumerate(wanted)})
        return _PerRound(rounds, order)


def _flat_mlp_layers(model: torch.nn.Module, params: dict) -> Optional[list[LinearLayer]]:
    """Where each layer of a :class:`~fedcore.models.linear.FlatMLP` with parameters ``fc1.weight,
    fc1.bias, …`` (in that order) sits in the flat vector; None for any other model."""
    n_layers = len(params) // 2
    names = [f"fc{i}.{k}" for i in range(1, n_layers + 1) for k in ("weight", "bias")]
    if not isinstance(model, FlatMLP) or list(params) != names:
        return None
    where = layer_slices(params)
    return [LinearLayer(where[f"fc{i}.weight"], where[f"fc{i}.bias"], *params[f"fc{i}.weight"].shape)
            for i in range(1, n_layers + 1)]


def layer_errors(params: list[list[np.ndarray]], x: np.ndarray, onehot: np.ndarray) -> tuple[list, list]:
    """Each layer's input ``a_{l-1}`` and back-propagated error ``δ_l = ∂ℓ/∂z_l`` of the cross-entropy
    ``ℓ`` of a ReLU MLP at ``T`` rounds' parameters (``params[t]``: ``W1, b1, W2, b2, …``) on
    candidates ``x [B, pixels, n]`` with labels ``onehot [B, classes, n]``, feature-major: ``[T, B, fan, n]``
    (the first input is ``x`` itself). One forward and one backward pass written out,
    ``δ_L = softmax(z_L) - onehot``."""
    stacked = [np.stack(p) for p in zip(*params)]       # [T, rows, fan_in], [T, rows]
    a, inputs, pre = x, [], []
    for w, b in zip(stacked[0::2], stacked[1::2]):
        a = np.maximum(pre[-1], 0) if pre else a
        inputs.append(a)
        pre.append(w[:, None] @ a + b[:, None, :, None])
    error = np.exp(pre[-1] - pre[-1].max(2, keepdims=True))
    error /= error.sum(2, keepdims=True)
    error -= onehot
    errors = [error]
    for l in range(len(pre) - 1, 0, -1):
        error = (stacked[2 * l].transpose(0, 2, 1)[:, None] @ error) * (pre[l - 1] > 0)
        errors.insert(0, error)
    return inputs, errors


def informed_guess(watch, seen) -> None:
    """Each row's ``matched``: whether the candidate the update aligns with best was used (a client that
    trained on all its images: any guess is one)."""
    asked = [q for q, (t, j) in enumerate(seen.rows) if seen.pending[t]["counted"][j] < watch.counts[seen.clients[q]]]
    picks = dict(zip(asked, seen.candidates.best(seen.host[asked], [seen.at[q] for q in asked],
                                                 [seen.slot[seen.rows[q][0]] for q in asked]) if asked else []))
    for q, row in enumerate(seen.out):
        row["matched"] = q not in picks or bool(seen.mask[q, picks[q]])


register(Attack("informed", "reconstruction", "ĵ = argmax_j ⟨v, u_j⟩ / (‖v‖ ‖u_j‖)", ("raw", "upload", "aggregate"),
                "any", reconstruction_game, informed_guess, "matched"),
         summary="The informed adversary of the cap: which of the client's own images the update came from.",
         paper="Balle, Cherubin & Hayes 2022")
