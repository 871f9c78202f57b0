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
a run where few users take part holds little. Which row holds what (each user's slot, its
uploads so far, each stored update's ordinal, round and noise std) is host-side bookkeeping
in numpy arrays: the device only gathers and scatters whole rows. Memory is ``users x length x d x bytes``;
for the paper's MNIST setting (1000 users, r = 50, CNN d = 21,840) that is 4.37 GB in
float32 and 2.18 GB in bfloat16 (:func:`history_nbytes`). bfloat16 is the default: it
keeps every sign exactly (same exponent range as float32, so nothing underflows to 0)
and a relative error <= 2^-9 on reused values, far below the Gaussian noise they carry.
The store may live on the run's device or in (pinned, when CUDA is present) CPU memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from ..accounting.uldp_budget import host_array
from .uldp_gaussian_spec import HISTORY_DTYPES

STORAGE_DTYPES = {name: getattr(torch, name) for name in HISTORY_DTYPES}
_CHUNK_ELEMENTS = 1 << 24   # bound on one search block (users x length x d)


def sign_similarity(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Eq. (11): fraction of coordinates where ``sign(x) == sign(g)``; ``x [..., d]``, ``g [d]``.

    >>> sign_similarity(torch.tensor([[1., -2., 0., 3.]]), torch.tensor([2., 1., 0., -1.]))
    tensor([0.5000])
    """
    return (torch.sign(x) == torch.sign(g).to(x.dtype)).sum(-1, dtype=torch.float32) / x.shape[-1]


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


def rows_index(rows: np.ndarray, device: torch.device | str) -> torch.Tensor:
    """Host row numbers ``rows`` as an index tensor on ``device`` (for ``index_select`` / ``index_copy_``)."""
    return torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(device)


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
    index: np.ndarray          # [m] k*: ordinal of the reused upload among the user's uploads
    round: np.ndarray          # [m] round in which the reused update was uploaded
    noise_std: np.ndarray      # [m] float32 noise std the reused update carries
    similarity: np.ndarray     # [m] float32 its similarity to the target


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
        self.slot = np.full(num_users, -1, dtype=np.int64)
        self.written = np.zeros(num_users, dtype=np.int64)
        self.users_stored = 0
        self._alloc(0)

    # --- storage --------------------------------------------------------------------
    def _alloc(self, capacity: int) -> None:
        old = getattr(self, "values", None)
        values = torch.empty((capacity, self.length, self.dim), dtype=self.dtype, device=self.store_device,
                             pin_memory=self.pin)
        meta = np.zeros((capacity, self.length, 3))
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

    def count(self, users) -> np.ndarray:
        """``[m]`` updates currently stored for ``users`` (ids: an array, a list or a CPU tensor)."""
        return np.minimum(self.written[np.asarray(users, dtype=np.int64)], self.length)

    def _rows(self, slots: np.ndarray, pos: np.ndarray) -> torch.Tensor:
        """Rows of ``values`` viewed as ``[capacity * length, d]``, as an index on the store's device."""
        return rows_index(slots * self.length + pos, self.store_device)

    def append(self, users, updates: torch.Tensor, round: int, noise_std) -> None:
        """Store one noisy upload ``updates [m, d]`` for each of the distinct ``users``
        (``noise_std [m]``: a host array or a tensor)."""
        users = np.asarray(users, dtype=np.int64)
        if users.size == 0:
            return
        new = users[self.slot[users] < 0]
        if new.size:
            need = self.users_stored + new.size
            if need > self.capacity:
                self._alloc(min(self.num_users, max(need, 2 * self.capacity)))
            self.slot[new] = np.arange(self.users_stored, need)
            self.users_stored = need
        slots = self.slot[users]
        pos = self.written[users] % self.length
        self.values.view(-1, self.dim).index_copy_(0, self._rows(slots, pos),
                                                   updates.to(device=self.store_device, dtype=self.dtype))
        self.meta[slots, pos] = np.stack([self.written[users], np.full(users.size, round),
                                          host_array(noise_std, np.float64)], axis=1)
        self.written[users] += 1

    # --- search ---------------------------------------------------------------------
    def best_match(self, users, target: torch.Tensor, similarity: str) -> Recalled:
        """For each of ``users`` (each with >= 1 stored update), its stored update most similar to ``target``.

        Vectorised over users (in blocks of at most ~16M elements): one sign comparison or
        one batched matrix-vector product per block on the device; the choice among each user's
        scores (ties go to the most recent update) is made on the host.
        """
        users = np.asarray(users, dtype=np.int64)
        count = self.count(users)
        if (count == 0).any():
            raise ValueError("best_match needs at least one stored update per user")
        sim = similarity_fn(similarity)
        slots = self.slot[users]
        block = max(1, _CHUNK_ELEMENTS // (self.length * self.dim))
        scores = torch.empty((len(users), self.length), device=self.device)
        for start in range(0, len(users), block):
            rows = self.values.index_select(0, rows_index(slots[start:start + block], self.store_device))
            scores[start:start + block] = sim(rows.to(self.device, non_blocking=True), target)
        scores = np.where(np.arange(self.length) < count[:, None], host_array(scores), -np.inf)
        # most recent wins ties: rank positions by recency, newest first
        recency = (self.written[users][:, None] - 1 - np.arange(self.length)) % self.length
        order = np.argsort(recency, axis=1)                                     # newest position first
        best_in_order = np.take_along_axis(scores, order, 1).argmax(axis=1)    # first max = newest among ties
        pos = np.take_along_axis(order, best_in_order[:, None], 1)[:, 0]
        meta = self.meta[slots, pos]
        values = self.values.view(-1, self.dim).index_select(0, self._rows(slots, pos)).to(self.device, torch.float32)
        return Recalled(values=values, index=meta[:, 0].astype(np.int64), round=meta[:, 1].astype(np.int64),
                        noise_std=meta[:, 2].astype(np.float32),
                        similarity=scores[np.arange(len(users)), pos].astype(np.float32))
