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

import torch
from torch.func import functional_call, vmap

from ..engine.flat import layer_slices
from ..models.linear import FlatMLP
from .inversion import LinearLayer


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
    """The candidates of several clients in one batch, block ``b`` (``sizes[b]`` rows) holding
    client b's: the guess ``ĵ = argmax_j ⟨v, u_j⟩ / ‖u_j‖`` of each received ``v`` among its
    client's block (:meth:`best`)."""

    def __init__(self, sizes: list[int]):
        self.sizes = list(sizes)
        self.starts = [sum(self.sizes[:b]) for b in range(len(self.sizes))]

    def best(self, vectors: torch.Tensor, blocks: list[int]) -> list[int]:
        """For each received ``vectors[i] [d]``, the index within block ``blocks[i]`` of its guess."""
        raise NotImplementedError


class DenseCandidates(Candidates):
    """Every ``u_j`` written out (:func:`candidate_updates`): any model."""

    def __init__(self, updates: torch.Tensor, sizes: list[int]):
        super().__init__(sizes)
        self.updates = updates

    def best(self, vectors: torch.Tensor, blocks: list[int]) -> list[int]:
        return [match_candidates(v, self.updates[self.starts[b]:self.starts[b] + self.sizes[b]])
                for v, b in zip(vectors, blocks)]


class LayerCandidates(Candidates):
    """The ``u_j`` of a :class:`~fedcore.models.linear.FlatMLP`, kept as each layer's input
    ``a_{l-1} [n, fan_in]`` and error ``δ_l = ∂ℓ_j/∂z_l [n, fan_out]``: layer l's part of
    ``-u_j`` is ``(δ_l a_{l-1}ᵀ, δ_l)`` (weight, bias), so

        ⟨v, u_j⟩ = -Σ_l (δ_l · (V_l a_{l-1}) + δ_l · b_l),   ‖u_j‖² = Σ_l ‖δ_l‖² (‖a_{l-1}‖² + 1)

    with ``V_l``, ``b_l`` layer l's slices of ``v`` (``layers``: where each sits in the flattened
    parameters). All the received vectors of a round are scored in one product per layer."""

    def __init__(self, layers: list[LinearLayer], inputs: list[torch.Tensor],
                 errors: list[torch.Tensor], sizes: list[int]):
        super().__init__(sizes)
        self.layers, self.inputs, self.errors = layers, inputs, errors
        norm2 = sum(d.square().sum(1) * (a.square().sum(1) + 1) for a, d in zip(inputs, errors))
        self.norms = norm2.sqrt().clamp(min=1e-30)

    def best(self, vectors: torch.Tensor, blocks: list[int]) -> list[int]:
        if not blocks:
            return []
        k, longest = len(blocks), max(self.sizes[b] for b in blocks)
        at = {"device": self.norms.device}
        rows = torch.cat([torch.arange(self.starts[b], self.starts[b] + self.sizes[b], **at) for b in blocks])
        owner = torch.cat([torch.full((self.sizes[b],), i, **at) for i, b in enumerate(blocks)])
        place = torch.cat([torch.arange(self.sizes[b], **at) for b in blocks])
        v = vectors.to(self.inputs[0].dtype)
        dot = 0
        for layer, a, d in zip(self.layers, self.inputs, self.errors):
            a, d = a[rows], d[rows]
            weights = v[:, layer.weight].reshape(k * layer.rows, layer.inputs)      # every V_l, stacked
            mixed = (a @ weights.T).view(len(rows), k, layer.rows)[torch.arange(len(rows), **at), owner]  # V_own a
            dot = dot + (mixed * d).sum(1) + (d * v[:, layer.bias][owner]).sum(1)
        score = torch.full((k, longest), -torch.inf, dtype=v.dtype, **at)
        score[owner, place] = -dot / self.norms[rows]
        return score.argmax(1).tolist()


def layer_candidates(model: torch.nn.Module, params: dict, x: torch.Tensor, y: torch.Tensor,
                     sizes: Optional[list[int]] = None) -> Optional[LayerCandidates]:
    """:class:`LayerCandidates` of ``model`` at ``params`` for candidates ``(x, y)`` in blocks of
    ``sizes`` (default: one block); None when the model is not a
    :class:`~fedcore.models.linear.FlatMLP` with parameters ``fc1.weight, fc1.bias, …`` in that
    order (then :func:`candidate_updates` applies)."""
    n_layers = len(params) // 2
    names = [f"fc{i}.{k}" for i in range(1, n_layers + 1) for k in ("weight", "bias")]
    if not isinstance(model, FlatMLP) or list(params) != names:
        return None
    where = layer_slices(params)
    layers = [LinearLayer(where[f"fc{i}.weight"], where[f"fc{i}.bias"], *params[f"fc{i}.weight"].shape)
              for i in range(1, n_layers + 1)]
    with torch.no_grad():
        a, inputs, pre = x.reshape(len(x), -1).to(params["fc1.weight"].dtype), [], []
        for i in range(1, n_layers + 1):
            inputs.append(a)
            z = a @ params[f"fc{i}.weight"].T + params[f"fc{i}.bias"]
            pre.append(z)
            a = torch.relu(z)
        error = (pre[-1] - pre[-1].amax(1, keepdim=True)).exp()   # softmax, written out: torch.softmax
        error /= error.sum(1, keepdim=True)                        # over 10 classes is 5x slower on a CPU
        error[torch.arange(len(y)), y] -= 1            # ∂ cross-entropy / ∂ logits = p - onehot(y)
        errors = [error]
        for i in range(n_layers, 1, -1):
            error = (error @ params[f"fc{i}.weight"]) * (pre[i - 2] > 0)
            errors.insert(0, error)
    return LayerCandidates(layers, inputs, errors, [len(x)] if sizes is None else sizes)


def candidates(model: torch.nn.Module, params: dict, x: torch.Tensor, y: torch.Tensor,
               sizes: list[int]) -> Candidates:
    """The candidates of consecutive blocks of ``sizes`` rows of ``(x, y)`` (one block per
    client), in closed form where the model allows it."""
    layered = layer_candidates(model, params, x, y, sizes)
    return layered if layered is not None else DenseCandidates(candidate_updates(model, params, x, y), sizes)
