"""Metrics a person can read, each beside its chance level (``shared/ATTACKS.md`` §2).

- **re-identified**: the nearest neighbour (L2, same preprocessing) of the reconstruction
  among the n images of the client is one of the k images its update was computed from;
  chance ``k / n``;
- **label recovered**: chance ``1 / classes``;
- **PSNR** ``= 10 log10(peak² / MSE)`` against the used image closest to the reconstruction
  (for one example, the example itself).

>>> import torch
>>> images = torch.eye(4)
>>> guess = nearest(torch.tensor([[0.9, 0.1, 0.0, 0.0]]), images)
>>> guess.tolist(), round(psnr(torch.tensor([0.5, 0.5]), torch.tensor([0.5, 0.6]), peak=1.0), 2)
([0], 23.01)
"""
from __future__ import annotations

import math
from binascii import b2a_base64
from typing import Optional

import numpy as np
import torch


def nearest(recon: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """``[k]`` index of each reconstruction's nearest candidate (``recon [k, p]``, ``candidates [n, p]``)."""
    return torch.cdist(recon.double(), candidates.double()).argmin(1)


def psnr(recon: torch.Tensor, truth: torch.Tensor, peak: float) -> float:
    """Peak signal-to-noise ratio in dB (capped at 100 dB for an exact copy)."""
    return psnr_from_mse(float(((recon.double() - truth.double()) ** 2).mean()), peak)


def psnr_from_mse(mse: float, peak: float) -> float:
    """``10 log10(peak² / mse)`` dB, capped at 100 dB for an exact copy."""
    return 100.0 if mse <= peak * peak * 1e-10 else 10.0 * math.log10(peak * peak / mse)


def standard_error(successes: float, trials: int) -> float:
    """Binomial standard error of a success rate over ``trials``."""
    if trials <= 0:
        return math.nan
    p = successes / trials
    return math.sqrt(max(p * (1.0 - p), 1.0 / trials) / trials)


GATHER_BYTES = 2 ** 20
"""Up to this many bytes of blocks, :func:`by_block` gathers them (a small model's rows: a loop costs more)."""


def by_block(left: np.ndarray, blocks_right: np.ndarray, blocks, widths=None) -> np.ndarray:
    """``left[i] @ blocks_right[blocks[i]]`` for every row ``i``, one product per block (no gather of a
    block's array per row; the rows sharing a block as one matrix, so the block is read once). ``widths``:
    only block ``b``'s first ``widths[b]`` columns are computed: the rest are padding, zeros in
    ``blocks_right`` (:class:`~.informed.CandidatePool`'s), so they come out 0 either way. Blocks of at most
    :data:`GATHER_BYTES` in all are gathered and multiplied at once instead (one product, no loop)."""
    blocks = np.asarray(blocks)
    if len(blocks) * blocks_right[0].nbytes <= GATHER_BYTES:
        return left @ blocks_right[blocks]
    rows: dict = {}
    for i, b in enumerate(blocks.tolist()):
        rows.setdefault(b, []).append(i)
    out = np.zeros((*left.shape[:-1], blocks_right.shape[-1]), dtype=np.result_type(left, blocks_right))
    for b, mine in rows.items():
        width = blocks_right.shape[-1] if widths is None else widths[b]
        product = left[mine].reshape(-1, left.shape[-1]) @ blocks_right[b][..., :width]
        out[mine, ..., :width] = product.reshape(*out[mine].shape[:-1], width)
    return out


def encode_images(values, box: Optional[tuple] = None) -> list[str]:
    """Each row of ``values [k, pixels]`` (a tensor or an array) as base64 8-bit grey levels over
    ``box`` (default: the row's own min and max).

    >>> [decode_image(s).tolist() for s in encode_images(torch.tensor([[0.0, 0.5, 1.0], [2.0, 2.0, 4.0]]))]
    [[0, 128, 255], [0, 0, 255]]
    """
    if isinstance(values, torch.Tensor):
        values = values.detach().float().cpu().numpy()
    v = np.asarray(values, dtype=np.float32).reshape(len(values), -1)
    if box is None:
        lo, hi = v.min(1, keepdims=True), v.max(1, keepdims=True)
    else:
        lo, hi = np.float32(box[0]), np.float32(box[1])
    span = np.where(hi > lo, hi - lo, np.float32(1.0))
    scaled = np.rint(np.clip((v - lo) / span, 0, 1) * 255).astype(np.uint8)
    return [b2a_base64(row.tobytes(), newline=False).decode("ascii") for row in scaled]


def decode_image(text: str, shape: Optional[list] = None):
    """The uint8 numpy array of one of :func:`encode_images`' texts (reshaped to ``shape``'s last two axes)."""
    import base64

    pixels = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    if shape and len(shape) >= 2 and pixels.size == int(np.prod(shape)):
        channels = int(np.prod(shape[:-2]))
        pixels = pixels.reshape(channels, shape[-2], shape[-1])
        pixels = pixels[0] if channels == 1 else pixels.transpose(1, 2, 0)
    return pixels
