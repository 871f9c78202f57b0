"""Analytic inversion of a first linear layer (Phong et al. 2017; Geiping et al. 2020, §4).

For ``z = W x + b`` and any loss ℓ, ``∂ℓ/∂W = (∂ℓ/∂z) xᵀ`` and ``∂ℓ/∂b = ∂ℓ/∂z``, so every row
``i`` with ``∂ℓ/∂b_i ≠ 0`` gives ``x = (∂ℓ/∂W)_i / (∂ℓ/∂b)_i``. An SGD update ``Δ = -η g``
has the same ratio. For noisy or averaged updates the least-squares estimate over the rows
(``shared/ATTACKS.md`` §2) is

    x̂ = Σ_i Δb_i · ΔW_i / Σ_i Δb_i²

exact for one example and one step, a mixture of the batch's inputs (weighted by their
``p - y``) otherwise, and noisier linearly in the noise's scale. The label is read from the
*last* layer's bias (iDLG, Zhao et al. 2020): one example's ``∂ℓ/∂b = p - y`` is negative only
at the label, so the update's bias is largest there.

>>> import torch
>>> x, W = torch.rand(5), torch.randn(3, 5)
>>> g_z = torch.tensor([0.2, -0.7, 0.5])                  # p - y for label 1
>>> update = torch.cat([(-0.1 * torch.outer(g_z, x)).reshape(-1), -0.1 * g_z])[None]
>>> layer = first_linear({"fc.weight": W, "fc.bias": torch.zeros(3)})
>>> torch.allclose(invert_linear(update, layer), x[None], atol=1e-6), recover_label(update, slice(15, 18)).item()
(True, 1)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from .registry import Attack, reconstruction_game, register


@dataclass(frozen=True)
class LinearLayer:
    """Where a first linear layer ``W [rows, inputs]``, ``b [rows]`` sits in the flat vector."""

    weight: slice
    bias: slice
    rows: int
    inputs: int


def first_linear(params: dict) -> Optional[LinearLayer]:
    """The model's first layer when it is linear (its first two parameters a 2-D weight and its
    bias: logreg, MLP), else None (a convolution comes first: use :mod:`.matching`)."""
    names = list(params)
    if len(names) < 2:
        return None
    w, b = params[names[0]], params[names[1]]
    if w.dim() != 2 or b.dim() != 1 or b.shape[0] != w.shape[0]:
        return None
    return LinearLayer(slice(0, w.numel()), slice(w.numel(), w.numel() + b.numel()), w.shape[0], w.shape[1])


def last_bias(params: dict) -> slice:
    """The flat slice of the last parameter (the output layer's bias in every registered model)."""
    total = sum(v.numel() for v in params.values())
    last = list(params.values())[-1]
    return slice(total - last.numel(), total)


def invert_linear(updates, layer: LinearLayer):
    """``[k, inputs]`` least-squares inputs of ``updates [k, d]`` (zeros where the bias did not move).

    Computed in float64 numpy on the host (a few small arrays per round); a tensor comes back as a
    float32 tensor on its device, an array as a float32 array."""
    tensor = isinstance(updates, torch.Tensor)
    u = updates.detach().double().cpu().numpy() if tensor else np.asarray(updates, dtype=np.float64)
    w = u[:, layer.weight].reshape(-1, layer.rows, layer.inputs)
    b = u[:, layer.bias]
    norm = (b * b).sum(1, keepdims=True)
    x = np.where(norm > 0, (b[:, None, :] @ w)[:, 0] / np.maximum(norm, 1e-300), 0.0).astype(np.float32)
    return torch.from_numpy(x).to(updates.device) if tensor else x


def recover_label(updates, bias: slice):
    """``[k]`` labels read off the output bias of ``updates [k, d]`` (its largest entry; a tensor
    or an array)."""
    return updates[:, bias].argmax(1)


def reidentify(watch, seen) -> None:
    """Each row's ``reidentified`` (the inversion is nearer a used image than any other of the client's),
    ``psnr`` and, for the clients shown, ``image`` and ``truth`` (:func:`.metrics.encode_images`)."""
    from .metrics import by_block, encode_images, psnr_from_mse

    recon, at, mask, images = invert_linear(seen.host, watch.layer), seen.at, seen.mask, watch.pool.images
    # squared L2 from each image less ‖x̂‖², the same for all of them: ‖x‖² - 2 x·x̂ (the images feature-major)
    dist = watch.pool.square[at] - 2 * by_block(recon[:, None, :], images, at, watch.pool.counts)[:, 0]   # [k, n_max]
    closest = np.where(mask, dist, np.inf).argmin(1)
    everything = all(row["used"] == row["n"] for row in seen.out)        # then any guess is one they used
    found = [] if everything else mask[np.arange(len(at)), np.where(watch.valid[at], dist, np.inf).argmin(1)].tolist()
    truth = images[at, :, closest]                                      # [k, pixels]
    miss = recon - truth
    mse = (np.einsum("kp,kp->k", miss, miss) / miss.shape[1]).tolist()
    shown = [q for q, c in enumerate(seen.clients) if c in watch.show]
    pictures = dict(zip(shown, zip(encode_images(recon[shown]), watch._truths(seen.clients, closest, truth, shown))))
    for q, row in enumerate(seen.out):
        row.update(reidentified=everything or row["used"] == row["n"] or bool(found[q]),
                   psnr=round(psnr_from_mse(mse[q], watch.peak), 2))
        if q in pictures:  # the reconstruction in its own range (noise shows as noise), the image in the data's
            row["image"], row["truth"] = pictures[q]


register(Attack("inversion", "reconstruction", "x̂ = Σ_i Δb_i · ΔW_i / Σ_i Δb_i²", ("raw", "upload", "aggregate"),
                "linear", reconstruction_game, reidentify, "reidentified"),
         summary="A first linear layer's update inverted analytically; the label from the last bias (iDLG).",
         paper="Phong et al. 2017; Geiping et al. 2020 §4; Zhao et al. 2020")
