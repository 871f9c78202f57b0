"""ULDP-FED's per-user budget allocation with recall savings (seed 004, eqs 14-15).

User i holds a total budget eps_i and takes part in at most r rounds of a T-round run.
At each of its participations, with m participations left (counting this one) and
T - t + 1 rounds left (counting round t), it may use at most

    m_eff = min(m, T - t + 1)

more rounds, so the round's allocation is ``B / m_eff`` of its remaining budget B
(paper Sec. 2.2, cases 1-2: eps/r on a first participation with r <= T - t + 1,
eps / (T - t + 1) otherwise; eq. 15: eps' - eps'/(r - j) afterwards). A participation
that *uploads* spends its allocation; a *recall* (the user sends the index of one of its
stored noisy updates, eq. 14) spends nothing, so the saving is spread over its later
participations. Both decrement m. Because every allocation is a fraction <= 1 of what is
left, the total spent never exceeds eps_i (basic composition, paper Sec. 3.1 1)).

Paper's worked example (Fig. 3(b)): T = 8, r = 4, the user takes part in rounds 1-4 and
recalls in round 3::

    >>> ledger = UldpBudget([1.0], max_participations=4, rounds=8)
    >>> [float(ledger.commit([0], t, [t == 3])[0]) for t in (1, 2, 3, 4)]
    [0.25, 0.25, 0.0, 0.5]

The pure rule is :func:`round_allocation`; :class:`UldpBudget` only records what happened
(remaining budget and participations left, per user). Its arrays are host-side bookkeeping
(numpy): a round's few hundred users cost no device kernels and no synchronisation.
"""
from __future__ import annotations

import numpy as np


def host_array(x, dtype=None) -> np.ndarray:
    """``x`` (a tensor on any device, an array, a list) as a numpy array of ``dtype``.

    >>> host_array([1, 2], np.float64)
    array([1., 2.])
    """
    if hasattr(x, "detach"):
        x = x.numpy(force=True)
    return np.asarray(x, dtype=dtype)


def host_mean(x: np.ndarray) -> float:
    """The mean of a host array exactly as torch's CPU ``mean`` gives it: torch's sum, then one
    division in the array's dtype (numpy sums in another order, so its last bits may differ).

    >>> host_mean(np.array([1.0, 2.0, 4.0], dtype=np.float32))
    2.3333332538604736
    """
    import torch

    kind = x.dtype.type
    return float(kind(torch.from_numpy(np.ascontiguousarray(x)).sum().item()) / kind(x.size))


def round_allocation(remaining, participations_left, rounds_left):
    """Budget allocated to one participation: ``remaining / min(participations_left, rounds_left)``.

    Works elementwise on numbers or arrays. ``participations_left`` counts the current
    participation, ``rounds_left = T - t + 1`` counts the current round; both must be >= 1.

    >>> round_allocation(1.0, 4, 8), round_allocation(0.5, 1, 5), round_allocation(1.0, 4, 3)
    (0.25, 0.5, 0.3333333333333333)
    """
    if isinstance(participations_left, np.ndarray):
        m_eff = np.minimum(participations_left, rounds_left)
    else:
        m_eff = min(participations_left, rounds_left)
    return remaining / m_eff


class UldpBudget:
    """Remaining budget and participations of every user (eqs 14-15), vectorised.

    Parameters
    ----------
    epsilon : ``[N]`` total budget eps_i of each user (a tensor or an array).
    max_participations : r, the most rounds any user takes part in.
    rounds : T, the run's number of rounds.

    Attributes
    ----------
    remaining_ : ``[N]`` float64 numpy array, budget not yet spent.
    left_ : ``[N]`` float64 numpy array, participations still allowed.

    ``users`` and ``recalled`` may be numpy arrays, lists or CPU tensors; results are numpy arrays.
    """

    def __init__(self, epsilon, max_participations: int, rounds: int):
        if max_participations < 1:
            raise ValueError(f"max_participations must be >= 1, got {max_participations}")
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        self.epsilon = host_array(epsilon, np.float64)
        self.max_participations = int(max_participations)
        self.rounds = int(rounds)
        self.remaining_ = self.epsilon.copy()
        self.left_ = np.full_like(self.epsilon, float(max_participations))

    @property
    def spent_(self) -> np.ndarray:
        """``[N]`` budget spent so far (basic composition)."""
        return self.epsilon - self.remaining_

    def allocate(self, users, round: int) -> np.ndarray:
        """``[m]`` allocation of round ``round`` (1-based) for ``users``; changes nothing."""
        if not 1 <= round <= self.rounds:
            raise ValueError(f"round must be in 1..{self.rounds}, got {round}")
        users = np.asarray(users, dtype=np.int64)
        left = self.left_[users]
        if (left < 1).any():
            worn = users[left < 1].tolist()
            raise ValueError(f"users {worn} already took part in max_participations={self.max_participations} "
                             "rounds; the 'uldp' aggregator's select() must drop them")
        return round_allocation(self.remaining_[users], left, float(self.rounds - round + 1))

    def commit(self, users, round: int, recalled) -> np.ndarray:
        """Record one participation of each of ``users``; return the ``[m]`` budget spent.

        ``recalled[j]`` True: user j reused a stored update and spends nothing (eq. 14);
        otherwise it spends its allocation (eq. 15). Users must be distinct.
        """
        users = np.asarray(users, dtype=np.int64)
        alloc = self.allocate(users, round)
        spent = np.where(np.asarray(recalled, dtype=bool), 0.0, alloc)
        self.remaining_[users] -= spent
        self.left_[users] -= 1
        return spent
