"""ULDP-FED's update recall: similarity measures and the store of past noisy updates.

Seed 004, Sec. 2.1 (CheckSimilarity, eqs 11-13). A user compares its fresh noisy update
with the previous global noisy update Delta~^(t-1); if they are less similar than tau it
searches *its own* past noisy uploads for the one most similar to Delta~^(t-1) and sends
only that index k*; the server reuses the stored update.

Similarities (both invariant to positive scaling of either argument):

- ``sign``, eq. (11): fraction of coordinates whose signs agree, sign in {-, 0, +} (so two
  zeros agree);
- ``cosine``, eq. (13): <a, b> / (||a|| ||b||), 0 when either vector is zero.

:class:`NoisyUpdateHistory` keeps the past uploads in one preallocated tensor
``[users seen, length, d]``, grown (by doubling) only for users that actually upload, so
a run where few users take part holds little. Memory is ``users x length x d x bytes``;
for the paper's MNIST setting (1000 users, r = 50, CNN d = 21,840) that is 4.37 GB in
float32 and 2.18 GB in bfloat16 (:func:`history_nbytes`). bfloat16 is the default: it
keeps every sign exactly (same exponent range as float32, so nothing underflows to 0)
and a relative error <= 2^-9 on reused values, far below the Gaussian noise they carry.
The store may live on the run's device or in (pinned, when CUDA is present) CPU memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .uldp_gaussian_spec import HISTORY_DTYPES

STORAGE_DTYPES = {name: getattr(torch, name) for name in HISTORY_DTYPES}
_CHUNK_ELEMENTS = 1 << 24   # bound on one search block (users x length x d)


def sign_similarity(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Eq. (11): fraction of coordinates where ``sign(x) == sign(g)``; ``x [..., d]``, ``g [d]``.

    >>> sign_similarity(torch.tensor([[1., -2., 0., 3.]]), torch.tensor([2., 1., 0., -1.]))
    tensor([0.5000])
    """
    return (torch.sign(x) == torch.sign(g).to(x.dtype)).sum(-1).to(torch.float32) / x.shape[-1]


def cosine_similarity(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Eq. (13): cosine of ``x [..., d]`` with ``g [d]`` (0 where either is zero).

    >>> cosine_similarity(torch.tensor([[1., 0.], [0., 0.]]), torch.tensor([1., 1.]))
    tensor([0.7071, 0.0000])
    """
    x = x.to(torch.float32)
    g = g.to(torch.float32)
    dots = x @ g
    norms = x.norm(dim=-1) * g.norm()
    return torch.where(norms > 0, dots / norms.clamp_min(torch.finfo(torch.float32).tiny), torch.zeros_like(dots))


def similarity_fn(name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The similarity named ``sign`` or ``cosine``."""
    return {"sign": sign_similarity, "cosine": cosine_similarity}[name]


def history_nbytes(users: int, length: int, dim: int, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of the update store for ``users`` x ``length`` updates of ``dim`` parameters.

    >>> history_nbytes(1000, 50, 21840) / 1e9, history_nbytes(1000, 50, 21840, torch.bfloat16) / 1e9
    (4.368, 2.184)
    """
    return users * length * dim * torch.empty((), dtype=dtype).element_size()


@dataclass
class Recalled:
    """Result of a history search for ``m`` users (aligned with the users searched)."""

    values: torch.Tensor       # [m, d] the stored updates reused (float32, run device)
    index: torch.Tensor        # [m] k*: ordinal of the reused upload among the user's uploads
    round: torch.Tensor        # [m] round in which the reused update was uploaded
    noise_std: torch.Tensor    # [m] noise std the reused update carries
    similarity: torch.Tensor   # [m] its similarity to the target


class NoisyUpdateHistory:
    """The last ``length`` noisy uploads of every user that uploaded (a ring per user).

    Parameters
    ----------
    num_users : N, users that may ever upload.
    length : updates kept per user (ULDP-FED needs at most r, the participation cap).
    dim : d, parameters per update.
    dtype : storage dtype (float32, float16 or bfloat16).
    device : where the searches run (the run's device).
    on_cpu : keep the store in CPU memory (pinned when CUDA is present) rather than on
        ``device``; each search then copies the searched users' rows to ``device``.
    """

    def __init__(self, num_users: int, length: int, dim: int, dtype: torch.dtype = torch.bfloat16,
                 device: torch.device | str = "cpu", on_cpu: bool = False):
        if length < 1:
            raise ValueError(f"history length must be >= 1, got {length}")
        self.num_users, self.length, self.dim, self.dtype = num_users, length, dim, dtype
        self.device = torch.device(device)
        self.store_device = torch.device("cpu") if on_cpu else self.device
        self.pin = on_cpu and torch.cuda.is_available()
        self.slot = torch.full((num_users,), -1, dtype=torch.long, device=self.device)
        self.written = torch.zeros(num_users, dtype=torch.long, device=self.device)
        self.users_stored = 0
        self._alloc(0)

    # --- storage --------------------------------------------------------------------
    def _alloc(self, capacity: int) -> None:
        old = getattr(self, "values", None)
        values = torch.empty((capacity, self.length, self.dim), dtype=self.dtype, device=self.store_device,
                             pin_memory=self.pin)
        meta = torch.zeros((capacity, self.length, 3), dtype=torch.float64, device=self.device)
        if old is not None and self.users_stored:
            values[: self.users_stored] = old[: self.users_stored]
            meta[: self.users_stored] = self.meta[: self.users_stored]
        self.values, self.meta = values, meta   # meta[..., :] = (ordinal, round, noise std)

    @property
    def capacity(self) -> int:
        return self.values.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes held by the update tensor (the allocated capacity)."""
        return self.values.numel() * self.values.element_size()

    def count(self, users: torch.Tensor) -> torch.Tensor:
        """``[m]`` updates currently stored for ``users``."""
        return self.written[users].clamp(max=self.length)

    def append(self, users: torch.Tensor, updates: torch.Tensor, round: int, noise_std: torch.Tensor) -> None:
        """Store one noisy upload ``updates [m, d]`` for each of the distinct ``users``."""
        if users.numel() == 0:
            return
        new = users[self.slot[users] < 0]
        if new.numel():
            need = self.users_stored + new.numel()
            if need > self.capacity:
                self._alloc(min(self.num_users, max(need, 2 * self.capacity)))
            self.slot[new] = torch.arange(self.users_stored, need, device=self.device)
            self.users_stored = need
        slots = self.slot[users]
        pos = self.written[users] % self.length
        self.values[slots.to(self.store_device), pos.to(self.store_device)] = \
            updates.to(device=self.store_device, dtype=self.dtype)
        self.meta[slots, pos] = torch.stack(
            [self.written[users].to(torch.float64), torch.full_like(pos, round, dtype=torch.float64),
             noise_std.to(torch.float64)], dim=1)
        self.written[users] += 1

    # --- search ---------------------------------------------------------------------
    def best_match(self, users: torch.Tensor, target: torch.Tensor, similarity: str) -> Recalled:
        """For each of ``users`` (each with >= 1 stored update), its stored update most similar to ``target``.

        Vectorised over users (in blocks of at most ~16M elements): one sign comparison or
        one batched matrix-vector product per block; ties go to the most recent update.
        """
        if bool((self.count(users) == 0).any()):
            raise ValueError("best_match needs at least one stored update per user")
        sim = similarity_fn(similarity)
        slots, valid = self.slot[users], torch.arange(self.length, device=self.device) < self.count(users)[:, None]
        block = max(1, _CHUNK_ELEMENTS // (self.length * self.dim))
        scores = torch.empty((len(users), self.length), device=self.device)
        for start in range(0, len(users), block):
            rows = self.values[slots[start:start + block].to(self.store_device)].to(self.device, non_blocking=True)
            scores[start:start + block] = sim(rows, target)
        scores = scores.masked_fill(~valid, float("-inf"))
        # most recent wins ties: rank positions by recency, newest first
        recency = (self.written[users][:, None] - 1 - torch.arange(self.length, device=self.device)) % self.length
        order = torch.argsort(recency, dim=1)                       # newest position first
        best_in_order = scores.gather(1, order).argmax(dim=1)       # first max = newest among ties
        pos = order.gather(1, best_in_order[:, None]).squeeze(1)
        meta = self.meta[slots, pos]
        values = self.values[slots.to(self.store_device), pos.to(self.store_device)].to(self.device, torch.float32)
        return Recalled(values=values, index=meta[:, 0].long(), round=meta[:, 1].long(),
                        noise_std=meta[:, 2].to(torch.float32),
                        similarity=scores.gather(1, pos[:, None]).squeeze(1))
