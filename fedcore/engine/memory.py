"""Freed memory kept for reuse on CPU (issue 41, Build 4: page faults at thousands of clients).

Each chunk of clients allocates its gradients afresh at every step (autograd's outputs, the
``[chunk, d]`` rows: 66 MB for 105 clients of the MLP) and frees them at the end of the step.
glibc hands blocks that large to the OS and back (``mmap`` above ``M_MMAP_THRESHOLD``, the heap's
top trimmed above ``M_TRIM_THRESHOLD``), so every chunk paid for its pages again: 1.5 M page faults
(6 GB) a round at 5,000 MLP clients, more CPU than the arithmetic. :func:`keep_freed` raises both
thresholds so that the next chunk reuses the blocks the last one freed.
"""
from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's malloc.h
_kept = 0


def keep_freed(block: int) -> bool:
    """Let ``malloc`` serve blocks of up to ``block`` bytes from its heap and keep up to
    ``2 * block`` freed bytes there (glibc ``mallopt``), for the whole process. Only raises
    the thresholds (a later, smaller call keeps them). False where the C library has no
    ``mallopt`` or refuses (then nothing changed but the cost)."""
    global _kept
    if block <= _kept:
        return True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, block) != 1 or mallopt(_M_TRIM_THRESHOLD, 2 * block) != 1:
        return False
    _kept = block
    return True
