"""ULDP-FED: user-level LDP Gaussian updates with decaying clipping and update recall.

Zhang, Zhang & Zhang, "Federated Learning Method Under User-Level Local Differential
Privacy", J. Computer Research and Development 62(2), 2025 (seed 004; METHODS section 5).

Two readings of who adds how much noise (option ``reading``; METHODS section 5, revised):

- ``"central"`` (default; threat model *central, user-level*): the paper's Theorem 2
  proof (eqs 16-17) gives each sampled user noise of variance ``z^2 C_k^2 / |U^t|``, so
  the *sum* over the round's users carries ``z C_k`` (DP-FedSAM's public code does the
  same). Only a trusted aggregator or secure aggregation, which reveals the sum alone,
  makes this private. ``noise="auto"`` then takes ``z`` from dp-accounting: the smallest
  multiplier for which ``T`` rounds of the Poisson(``q``)-subsampled Gaussian are
  ``(eps_i, delta_i)``-DP at user level (:func:`fedcore.accounting.calibrate.calibrate_noise_multiplier`).
  The ledger charges, every round, every user that could have been sampled (fewer than
  r participations so far) the subsampled Gaussian with multiplier
  ``sigma_sum / C_i``: ``sigma_sum = sqrt(sum_{j in U^t} z_j^2 C_j^2 / |U^t|)`` is the std
  of the sum's noise, ``C_i`` the clip user i would use (rounded down to a 1 % grid, so the
  figure errs on the safe side and dp-accounting's curves are reused; ``z`` is calibrated on
  that grid, rounded up, so with equal clips a run spends at most its target; with the
  decaying clip a user whose clip exceeds the round's RMS clip is charged more, and its
  figure can pass the target). This assumes the sum is released
  with equal weights (the paper's MNIST users all hold 600 images; the ``uldp``
  aggregator's n_i weights then coincide). Needs ``sampling: poisson``.
- ``"local"`` (the literal per-user reading; threat model *local*): every upload carries
  ``N(0, sigma_k^2 I)``, ``sigma_k = z_k C_k``, with the modes below
  (``noise="auto"`` = ``"allocated"``). Theorem 3's sigma (0.96 at eps 10, r 50, q 0.1,
  C 2) applied this way is ~10x what training tolerates: every variant ends at chance.

Per participating user i, at its k-th participation (k = 1, 2, ..., r, recalls included;
Algorithm 1 lines 16-20):

1. clip threshold  C_k = C_0 exp(-beta k)  (``decay``; otherwise C_k = C_0), Fig. 4;
2. clip            Delta_bar = Delta / max(1, ||Delta||_2 / C_k)  (eq. 9);
3. perturb         Delta~ = Delta_bar + N(0, sigma_k^2 I),  sigma_k = z_k C_k  (eq. 10), with
   ``noise="allocated"`` (default): z_k = sqrt(2 ln(1.25/delta_i)) / eps_round, the
   classical Gaussian calibration of the round's allocation (eqs 14-15,
   :mod:`fedcore.accounting.uldp_budget`); ``"paper_thm3"``: Theorem 3,
   sigma_k = 2 q C_k sqrt(r_eff ln(1/delta_i)) / eps_i, r_eff = r if T - t >= r else T - t
   (we use max(T - t, 1) so the last round is not noise-free); ``"fixed"``: z_k =
   ``noise_multiplier`` (the paper's sigma-sweep experiments, Fig. 7);
   Central reading: the user adds ``N(0, sigma_k^2 / |U^t| I)`` instead, and
   ``noise="accountant"`` (the central default) calibrates z as described above;
4. recall (``recall`` = ``sign`` eq. 11 or ``cosine`` eq. 13, CheckSimilarity): with
   s = similarity(Delta~, Delta~^(t-1)), if s < tau and the user has stored uploads, it
   sends only the index k* of its stored noisy update most similar to Delta~^(t-1);
   the server reuses that update and the user spends no budget this round. Otherwise it
   uploads Delta~, which joins its history (:mod:`fedcore.mechanisms.uldp_recall`).

Decisions where the paper is silent:

- Delta~^(t-1) is the previous *global noisy update before the global learning rate*
  (Algorithm 1 line 5); :meth:`after_round` receives ``eta_g Delta~`` and divides by
  ``server_lr``. Both similarities are invariant to positive scaling, so this only keeps
  the stored vector exact. A round without uploads keeps the last global update. No
  recall happens before a first global update exists or for a user without uploads.
- Only uploads are stored (a recall creates no new update); at most ``history`` (default
  r) per user, oldest overwritten first.
- Accounting. ``Upload.spent`` is the paper's ledger: the round's allocation for an
  upload, 0 for a recall. The recall decision, however, is computed from the fresh
  noisy update, so it is post-processing of a Gaussian release at the same noise: the
  RDP record (``GaussianRecord``, multiplier sigma_k / (2 C_k), no amplification by
  sampling, because under LDP the server sees who takes part) charges every
  participation, and the claim ``"basic, recall charged"`` adds the allocation of recall
  rounds too. The paper's figure and the rigorous ones are shown side by side.
- Sensitivity. The paper calibrates sigma_k = z C_k, i.e. to sensitivity C_k (adding or
  removing one user's clipped update, the central DP-FedAvg view). Under *local* DP two
  inputs of the same user may be 2 C_k apart, so the rigorous RDP record uses the
  multiplier sigma_k / (2 C_k). Option ``sensitivity="ldp"`` calibrates the noise to
  2 C_k instead (sigma doubles) so that the allocated epsilon holds under LDP.
- The participation cap r and the optional r/T dropout are applied by the ``uldp``
  aggregator's ``select()``; this mechanism needs that aggregator (checked at config
  time, with the same ``max_participations``).

Recall threshold ``tau`` (``None`` = automatic): a user recalls when its noisy update
points *against* the last global update by more than chance explains: ``s`` below
what a direction independent of it gives, by two standard deviations
(sign: ``0.5 - 1/sqrt(d)``; cosine: ``-2/sqrt(d)``), the same rule under both readings.
What fires (measured, docs/reproduction.md): under the local reading the noise dominates
every upload, s sits at chance (sign 0.500) and recall fires at about the false-alarm
rate; under the central reading the per-user noise is ``sqrt(|U^t|)`` times smaller, s
carries the update's direction, and recall fires for users whose update opposes the
global one (non-IID users holding other digits). The paper's values (0.25 sign, 0.006
cosine at eps 10) can be set explicitly: 0.25 never fires (s is about 0.5 under either
reading) and 0.006 fires for every update within noise of orthogonal.
Under the central reading the recall decision and the reused update are charged as a
participation at the round's multiplier, which is exact without recall and an
approximation with it (swapping one stored update for another is not bounded by C_k).

Signals per round: ``clip_threshold`` (mean C_k), ``eps_round`` (mean allocation),
``similarity`` (mean s, when recall is on), ``similarity_min`` (the lowest s of the
round: a recall fires exactly when it is below ``tau`` for a user with a stored update),
``tau`` (the threshold in use), ``recall_rate``, ``noise_multiplier`` (mean z).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from ..accounting.ledger import GaussianRecord
from ..accounting.uldp_budget import UldpBudget, host_array, host_mean
from ..events import MethodEvent
from .base import Upload
from .scalar import (VARIANCE, EpsilonReading, Knob, Release, ScalarDemo, ScalarLaw, approximate_meaning,
                     exact_delta_check, g)
from .uldp_gaussian_spec import UldpGaussianSpec
from .uldp_recall import STORAGE_DTYPES, NoisyUpdateHistory, rows_index, similarity_fn


def auto_tau(similarity: str, d: int) -> float:
    """Two standard deviations below chance for a direction independent of the target.

    >>> auto_tau("sign", 10_000), auto_tau("cosine", 10_000)
    (0.49, -0.02)
    """
    return 0.5 - 1.0 / d ** 0.5 if similarity == "sign" else -2.0 / d ** 0.5
RECALL_CHARGED = "basic, recall charged"
THM3_CLAIM = "paper (ULDP-FED Thm 3)"


def decayed_clip(clip0: float, beta: float, k: torch.Tensor) -> torch.Tensor:
    """C_k = C_0 exp(-beta k) for participation numbers ``k`` (Fig. 4).

    >>> decayed_clip(2.0, 0.06, torch.tensor([1, 2]))
    tensor([1.8835, 1.7738])
    """
    return clip0 * torch.exp(-beta * k.to(torch.float32))


def gaussian_delta_term(delta: torch.Tensor) -> torch.Tensor:
    """sqrt(2 ln(1.25/delta)) in float64: the classical Gaussian multiplier at eps = 1."""
    return torch.sqrt(2 * torch.log(1.25 / delta.to(torch.float64)))


def gaussian_multiplier(eps: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """Classical Gaussian calibration z = sqrt(2 ln(1.25/delta)) / eps (Dwork & Roth Thm A.1)."""
    return gaussian_delta_term(delta) / eps.to(torch.float64)


def thm3_log_term(delta: torch.Tensor) -> torch.Tensor:
    """ln(1/delta) in float64, the per-user factor of Theorem 3's multiplier."""
    return torch.log(1 / delta.to(torch.float64))


def thm3_multiplier(eps: np.ndarray, log_term: np.ndarray, q: float, r: int, rounds: int,
                    round: int) -> np.ndarray:
    """Theorem 3: z = sigma_k / C_k = 2 q sqrt(r_eff ln(1/delta)) / eps, r_eff = min(r, max(T - t, 1)),
    from float64 host arrays ``eps`` and ``log_term`` = :func:`thm3_log_term` (delta)."""
    r_eff = r if rounds - round >= r else max(rounds - round, 1)
    return 2 * q * np.sqrt(r_eff * log_term) / eps


class UldpGaussian(UldpGaussianSpec):
    """ULDP-FED's UserUpdate + CheckSimilarity for the whole round's users at once.

    Per-user bookkeeping (participation counts, budgets, the calibration's per-user terms, the
    recall store's index) lives in host (numpy) arrays: it is a few small vectors per round, which
    as device tensors would cost one tiny kernel and often a synchronisation per line. The
    device only sees the ``[m, d]`` work: clipping, noise, similarities, the store's rows. The
    per-user terms that involve ``exp`` or ``log`` are computed once, on the run's device, with
    the same operations as the formulas above, so the numbers are those of a per-round evaluation.
    """

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        o = options
        dev = ctx.device
        self.central = o.reading == "central"
        self.participations = np.zeros(ctx.num_clients, dtype=np.int64)
        self.budget = UldpBudget(ctx.epsilon, o.max_participations, ctx.rounds)
        self.clips = host_array(self._clip_curve(torch.arange(o.max_participations + 2, device=dev)))
        """``[r + 2]`` float32: C_k for k = 0..r+1 (index by participation number)."""
        self.previous: Optional[torch.Tensor] = None    # Delta~^(t-1), before eta_g
        self.history: Optional[NoisyUpdateHistory] = None
        self.threshold = (auto_tau(o.recall, ctx.num_params) if o.tau is None else float(o.tau)) \
            if o.recall != "none" else 0.0
        if o.recall != "none":
            length = min(o.history or o.max_participations, o.max_participations, ctx.rounds)
            self.history = NoisyUpdateHistory(ctx.num_clients, length, ctx.num_params,
                                              STORAGE_DTYPES[o.history_dtype], dev, o.history_on_cpu)
        self.accountant_z: Optional[np.ndarray] = None
        self.delta_term: Optional[np.ndarray] = None
        if o.noise_mode == "accountant":          # z per user, calibrated once
            from ..accounting.calibrate import calibrate_noise_multiplier

            eps = ctx.epsilon.double().cpu().numpy()
            delta = ctx.delta.double().cpu().numpy()
            keys, member = np.unique(np.stack([eps, delta]), axis=1, return_inverse=True)
            rate = ctx.participation if self.central else 1.0
            z = calibrate_noise_multiplier(keys[0], keys[1], np.full(keys.shape[1], rate),
                                           np.full(keys.shape[1], ctx.rounds), grid=self._by_rdp())
            self.accountant_z = z[member.ravel()]                  # float64: cast only where noise is drawn
        elif o.noise_mode in ("allocated", "paper_thm3"):   # z's per-user factor of delta_i
            term = gaussian_delta_term if o.noise_mode == "allocated" else thm3_log_term
            self.delta_term = host_array(term(ctx.delta))

    def _by_rdp(self) -> bool:
        """Whether the ledger composes this mechanism's records by RDP (``GaussianRecord.grid``): the
        central reading with a decaying clip gives every user its own multiplier each round (hundreds of
        distinct noise histories, too many to compose a PLD each round); without decay every covered user
        has the same multiplier and the exact (PLD) accountant composes them (DP-FedAvg)."""
        return self.central and self.options.decay

    def _clip_curve(self, k: torch.Tensor) -> torch.Tensor:
        o = self.options
        return decayed_clip(o.clip0, o.beta, k) if o.decay else torch.full_like(k, o.clip0, dtype=torch.float32)

    def clip_for(self, k: np.ndarray) -> np.ndarray:
        """C_k at participation numbers ``k`` (C_0 without decay), float32."""
        return self.clips[k]

    def noise_multiplier(self, eps_round: np.ndarray, users: np.ndarray, round: int) -> np.ndarray:
        """``[m]`` float64 z_k = sigma_k / C_k of this round's ``users`` under the chosen ``noise`` mode."""
        o, ctx = self.options, self.ctx
        mode = o.noise_mode
        if mode == "accountant":
            return self.accountant_z[users]
        with np.errstate(divide="ignore"):   # a user with nothing left: z = inf, as in float division
            if mode == "allocated":
                z = self.delta_term[users] / eps_round                      # gaussian_multiplier
            elif mode == "paper_thm3":
                z = thm3_multiplier(self.budget.epsilon[users], self.delta_term[users], ctx.participation,
                                    o.max_participations, ctx.rounds, round)
            else:
                z = np.full(len(users), o.noise_multiplier)
        return np.asarray(z, np.float64)

    def privatize(self, updates, clients, round, gen) -> Upload:
        o = self.options
        users = host_array(clients, np.int64)
        k = self.participations[users] + 1
        eps_round = self.budget.allocate(users, round)
        z = self.noise_multiplier(eps_round, users, round)
        if o.sensitivity == "ldp":
            z = 2.0 * z
        clip = self.clip_for(k)
        sigma = z * clip                                        # the noise the sum (central) / upload carries
        on_device = torch.from_numpy(np.stack([clip, sigma]).astype(np.float32)).to(updates.device)   # noise drawn
        values, per_user = self._clip_and_perturb(updates, on_device[0], on_device[1], gen)
        recalled = np.zeros(len(users), dtype=bool)
        events, noise_std, signals = [], per_user, {}
        if self.history is not None:
            values, noise_std, recalled, events, signals = self._recall_or_upload(values, users, per_user, k, round)
        gaussian = self._gaussian_record(on_device[1], z)       # reads the participations before this round
        spent = self.budget.commit(users, round, recalled).astype(np.float64)
        self.participations[users] = k
        signals.update(clip_threshold=host_mean(clip), eps_round=host_mean(eps_round),
                       recall_rate=float(np.float32(recalled.sum()) / np.float32(len(users))),   # an exact count
                       noise_multiplier=host_mean(z))
        claims = {RECALL_CHARGED: np.asarray(eps_round, np.float64)}
        if o.noise_mode == "paper_thm3":
            claims[THM3_CLAIM] = np.where(k == 1, self.budget.epsilon[users], 0.0).astype(np.float64)
        return Upload(values=values, clients=clients, noise_std=noise_std, spent=spent,
                      gaussian=gaussian, claims=claims, events=events, signals=signals)

    def _clip_and_perturb(self, updates, clip, sigma, gen):
        """Eqs 9-10 on the device: clip each row to its ``clip`` C_k, add N(0, sigma^2 I) (central
        reading: sigma^2 / |U^t| per user); returns the noisy rows and the per-user noise std."""
        per_user = sigma / math.sqrt(len(clip)) if self.central else sigma
        scale = torch.clamp(updates.norm(dim=1) / clip, min=1.0).reciprocal()      # 1 / max(1, ||Delta|| / C_k)
        noise = torch.randn(updates.shape, generator=gen, device=updates.device, dtype=updates.dtype)
        return updates * scale[:, None] + noise * per_user[:, None].to(updates.dtype), per_user

    def _gaussian_record(self, sigma: torch.Tensor, z: np.ndarray) -> GaussianRecord:
        """What the RDP ledger composes this round (module doc, "two readings"). Central: every user that
        could have been sampled (fewer than r participations before this round) is charged the
        Poisson-subsampled Gaussian with multiplier sigma_sum / C_i at the clip it would use; sigma_sum
        is reduced on the device that holds ``sigma``, as every round's figure has been."""
        o = self.options
        if not self.central:
            return GaussianRecord(noise_multiplier=z / 2.0, sample_rate=1.0, steps=1)
        users = np.flatnonzero(self.participations < o.max_participations)
        sigma_sum = float(torch.sqrt((sigma.double() ** 2).mean()))
        multiplier = sigma_sum / self.clip_for(self.participations[users] + 1).astype(np.float64)
        if o.sensitivity == "ldp":
            multiplier = multiplier / 2.0
        return GaussianRecord(noise_multiplier=multiplier, sample_rate=self.ctx.participation, clients=users,
                              grid=self._by_rdp())

    def empty_round(self, round: int) -> Optional[GaussianRecord]:
        """Central reading, noise calibrated by the accountant (DP-FedAvg): a round that sampled nobody is
        charged as every other, each user who could have been sampled at its own multiplier, since the
        accountant's (ε, δ) is that of T subsampled rounds whoever they sample. (The engine skips such a
        round, the model unchanged, where DP-FedAvg would release noise alone.) Other readings: None."""
        if not self.central or self.accountant_z is None:
            return None
        users = np.flatnonzero(self.participations < self.options.max_participations)
        z = self.accountant_z[users] / (2.0 if self.options.sensitivity == "ldp" else 1.0)
        return GaussianRecord(noise_multiplier=z, sample_rate=self.ctx.participation, clients=users,
                              grid=self._by_rdp())

    def _recall_or_upload(self, noisy, users, per_user, k, round):
        """CheckSimilarity for every user of the round; stores the uploads, reuses the recalls.

        Returns the values the server receives (``noisy``, recalled rows replaced in place), their
        noise std, the recall mask, the recall events and the similarity signals.
        """
        o = self.options
        signals: dict = {}
        recalled = np.zeros(len(users), dtype=bool)
        noise_std, events = per_user, []
        if self.previous is None:
            sigma = host_array(per_user)
        else:
            s, sigma = host_array(torch.stack([similarity_fn(o.recall)(noisy, self.previous), per_user]))
            signals.update(similarity=host_mean(s), similarity_min=float(s.min()), tau=float(self.threshold))
            recalled = (s < np.float32(self.threshold)) & (self.history.count(users) > 0)
        up = np.flatnonzero(~recalled)
        uploads = noisy if len(up) == len(users) else noisy.index_select(0, rows_index(up, noisy.device))
        self.history.append(users[up], uploads, round, sigma[up])
        if recalled.any():
            idx = np.flatnonzero(recalled)
            match = self.history.best_match(users[idx], self.previous, o.recall)
            noisy.index_copy_(0, rows_index(idx, noisy.device), match.values.to(noisy.dtype))
            sigma[idx] = match.noise_std
            noise_std = torch.from_numpy(sigma).to(per_user.device)
            events = [MethodEvent("recall", c, {"round": round, "index": i, "from_round": r,
                                                "similarity": sim, "recalled_similarity": best,
                                                "participation": kk, "similarity_kind": o.recall})
                      for c, i, r, sim, best, kk in zip(users[idx].tolist(), match.index.tolist(),
                                                        match.round.tolist(), s[idx].tolist(),
                                                        match.similarity.tolist(), k[idx].tolist())]
        return noisy, noise_std, recalled, events, signals

    def after_round(self, global_update, round) -> None:
        if global_update is not None:
            previous = global_update / self.ctx.server_lr
            self.previous = previous if previous.dtype == torch.float32 else previous.float()


# --- one number (the Mechanisms page) ---------------------------------------------------------
class UldpScalar(ScalarLaw):
    """One user's first upload under the literal (local) reading, with its whole budget
    (``r = T = 1``, no recall): ``sigma_1 = z C_1``, ``C_1 = C_0 e^-beta``."""

    demo = ScalarDemo("uldp_gaussian", "approximate", VARIANCE, (
        Knob("clip0", "initial clip C_0", 0.1, 10.0, 2.0, 0.1, "ULDP-FED: C_0 = 2"),
        Knob("beta", "clip decay beta", 0.0, 0.2, 0.06, 0.01, "first participation: C_1 = C_0 exp(-beta)")),
        fixed={"recall": "none", "max_participations": 1, "reading": "local"})

    def clip_range(self, options):
        c1 = float(decayed_clip(options["clip0"], options["beta"], torch.tensor(1)))
        return -c1, c1

    def scale(self, epsilon, delta, options, rounds):
        eps = torch.as_tensor(np.asarray(epsilon, dtype=np.float64))
        return (gaussian_multiplier(eps, torch.full_like(eps, float(delta))) * self.clip_range(options)[1]).numpy()

    def reading(self, r: Release) -> EpsilonReading:
        exact_line, warning = exact_delta_check(r)
        c1 = r.hi
        return EpsilonReading(
            f"**(ε, δ)-LDP** per release (ULDP-FED, eq. 10 with the classical calibration, local reading): "
            f"ε = {g(r.epsilon)}, δ = {r.delta:.0e}; a user's budget is split over its r participations (here r = 1).",
            approximate_meaning(r),
            (f"Clip C₁ = C₀·e^(−β) = {g(c1)}; σ = z·C₁ with z = √(2 ln(1.25/δ))/ε = "
             f"{g(r.law.scale / c1)}, so σ = **{g(r.law.scale)}**.", exact_line),
            warning + (" ULDP-FED calibrates σ = z·C_k, i.e. to sensitivity C_k; two users' clipped updates can "
                       "be 2·C_k apart." if warning else ""))


UldpGaussian.scalar = UldpScalar()
