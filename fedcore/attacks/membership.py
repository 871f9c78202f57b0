"""Membership inference on the trained model: LiRA and RMIA over the same shadow runs.

The experiment (``shared/ATTACKS.md`` §4): K + 1 runs of the *same* recipe (the config as
given: method, budgets, rounds, local training), each on a random half of the dataset's
training images (``train_size = N / 2``, its own seed; or, where the config sets a smaller
``train_size`` m, m images drawn from all N: few records per model, which the model can
memorise), trained together as one lockstep batch
(:func:`fedcore.engine.lockstep.run_lockstep`). Each run in turn is the target and the other K
its shadows (leave one out). Two scoring functions read the same runs (:func:`attacks`):

- **LiRA** (Carlini et al. 2022, Alg. 1, online): for every image, the logit-scaled confidence
  ``φ = log(p_y / (1 - p_y))`` of the shadows that trained on it and of those that did not is fit
  by two Gaussians; the target's score is ``log N(φ; μ_in, σ_in²) - log N(φ; μ_out, σ_out²)``.
- **RMIA** (Zarifzadeh et al. 2024, Eq. 3-4): the target's likelihood ratio of an image x against
  the population, ``LR(x, z) = (p(x|θ) / p(x)) / (p(z|θ) / p(z))`` with ``p(x)`` the mean of
  ``p(x|θ')`` over the K shadows (reference models on random subsets, members or not) and z the
  test images (never trained on); the score is ``Pr_z[LR(x, z) ≥ γ]`` at γ = 1 (ties broken by
  ``p(x|θ)/p(x)`` itself, so a low-FPR threshold can fall between them).

Reported: the ROC over all (target, image) pairs (scikit-learn ``roc_curve``, ``auc``), TPR at
0.1 % and 1 % FPR with one-sided Clopper-Pearson intervals (:data:`ALPHA` over all checks), and the region allowed by what
the runs prove for LiRA's game (:func:`.registry.run_game`: in and out halves of a fixed size differ
by a *replacement*, the attacker sees the final model, the sampling stays secret), the largest
over the K + 1 runs (:func:`fedcore.accounting.games.worst`; the pooled ROC averages the runs'
ROCs, each under its own cap, so the cap holds for the pool): the exact trade-off curve where
the runs are μ-GDP, else the smallest over their privacy profile. A point whose TPR's lower bound exceeds the cap at its FPR's upper bound is ``above_cap``:
a bug, flagged like a failed audit. The pairs share images and shadows, so the intervals
(which assume independent pairs) are indicative. ``cap_curve`` is that region's edge over an FPR
grid (:data:`CURVE_FPR`), for a log-log ROC drawn inside it.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..errors import ConfigError
from ..accounting.games import Bound, worst
from .registry import ATTACKS, Attack, register, run_game

LEVELS = (0.001, 0.01, 0.1)
"""FPRs at which the TPR is reported and checked against the cap."""
ALPHA = 0.01
"""The chance that a correct mechanism is flagged by one ROC's checks (all levels together, Bonferroni):
with an exact curve an honest Gaussian lies *on* its cap, so every check's interval must carry this."""
MIN_SHADOWS, MAX_SHADOWS = 4, 512
CURVE_FPR = tuple(float(f) for f in np.logspace(-4, 0, 41))
"""The FPRs at which ``cap_curve`` gives the region's edge (log-spaced, 1e-4 to 1)."""
LOG_POINTS = 120
"""Points of ``roc_log``: the ROC's corners nearest to log-spaced FPRs, so a log-log plot keeps its low-FPR end
(``roc``, evenly spaced over the thresholds, holds few points below 1 % FPR)."""
GAMMA = 1.0
"""RMIA's threshold on the pairwise likelihood ratio (Zarifzadeh et al. 2024, Eq. 4)."""


@dataclass
class Membership:
    auc: float
    tpr_at_0_1pct_fpr: float
    tpr_at_1pct_fpr: float
    dp_cap_tpr_at_0_1pct_fpr: float
    dp_cap_tpr_at_1pct_fpr: float
    above_cap: bool
    epsilon: float | None            # the largest headline of the runs (None = ∞)
    shadows: int
    pairs: int
    accuracy: float | None           # the runs' mean test accuracy (None: no model was trained)
    seconds: float
    checks: list = field(default_factory=list)   # per level: fpr, tpr, tpr_low, fpr_high, cap
    roc: dict = field(default_factory=dict)      # {"fpr": [...], "tpr": [...]} (at most 200 points)
    cap_game: str = ""               # the game the caps are proven for (Game.key) and in words
    cap_game_words: str = ""
    cap_epsilon: float | None = None     # its ε at cap_delta (None = ∞), the accountant and μ (μ-GDP)
    cap_delta: float = 0.0
    cap_basis: str = ""
    cap_mu: float | None = None
    run_cap_tpr_at_1pct_fpr: float | None = None   # the worst case's: the whole run's cap, beside one upload's
    cap_curve: dict = field(default_factory=dict)  # {"fpr": CURVE_FPR, "tpr": the cap at each}: the region's edge
    attack: str = "LiRA"                           # the scoring function: LiRA, RMIA, the worst case's test
    roc_log: dict = field(default_factory=dict)    # the ROC at log-spaced FPRs (LOG_POINTS, from 1 / negatives): a log-log plot's

    def to_dict(self) -> dict:
        return asdict(self)


def check_shadows(value) -> int:
    """``value`` as a number of shadow runs in [4, 512]; else ConfigError naming ``shadows``."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SHADOWS <= value <= MAX_SHADOWS:
        raise ConfigError("shadows", value, f"must be a whole number of shadow runs in [{MIN_SHADOWS}, {MAX_SHADOWS}]")
    return value


def attacks(cfg, shadows: int = 64, scorers: tuple = ("lira", "rmia")) -> dict[str, Membership]:
    """``{"lira": ..., "rmia": ...}``: the experiment of the module doc on ``cfg``'s recipe with
    ``shadows`` shadow runs, its signals computed once and each of ``scorers`` (registered membership
    attacks, by name) reading them, each checked against the same proof."""
    from ..audit.run import threat_model_of
    from ..data import dataset_facts, load_dataset
    from ..engine.device import resolve_device
    from ..engine.lockstep import run_lockstep
    from ..engine.split import split_data
    from ..models import build_model

    check_shadows(shadows)
    t0 = time.perf_counter()
    facts = dataset_facts(cfg.dataset)
    half = facts.train_size // 2
    if 0 < cfg.train_size < half:
        half = cfg.train_size   # few records per model: m of all N, each image a member of ~m/N of the runs
    if cfg.num_clients > half:
        raise ConfigError("num_clients", cfg.num_clients, f"must be <= {half} for membership inference: "
                          "each shadow run trains on half of the training images")
    configs = [cfg.with_overrides({"train_size": half, "seed": cfg.seed + 7919 * k}) for k in range(shadows + 1)]
    game = ATTACKS.get(scorers[0]).game(threat_model_of(cfg))   # the scorers play one game on the same runs
    results = run_lockstep(configs, game=game)
    device = resolve_device(cfg.device)  # the pool the halves come from: every training image
    data = load_dataset(cfg.dataset, device=device)
    data_x, data_y = data.x_train, data.y_train
    model = build_model(cfg.model, tuple(data.input_shape), data.num_classes).to(device)  # params come from the runs
    members = np.zeros((len(configs), len(data_y)), dtype=bool)
    labels = data_y.cpu().numpy()
    for k, c in enumerate(configs):
        members[k, split_data(c, labels, facts.test_size, facts.num_classes).train_rows] = True
    phi = np.stack([_confidence(model, r.params, data_x, data_y) for r in results])
    population = np.stack([_confidence(model, r.params, data.x_test, data.y_test) for r in results])
    signals = {"phi": phi, "population": population, "members": members}
    headline = max(r.headline for r in results)
    proof = worst(r.bound for r in results)
    accuracy = [r.final_accuracy or 0.0 for r in results]
    seconds = time.perf_counter() - t0     # the shadow runs are shared: each attack's time is the whole
    return {name: report(*ATTACKS.get(name).score(signals), proof, shadows, accuracy, seconds, headline=headline,
                         attack=ATTACKS.entry(name).summary.partition(":")[0]) for name in scorers}


@torch.no_grad()
def _confidence(model, params: dict, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """``φ = log p_y - log(1 - p_y)`` of every image, computed from the logits (stable)."""
    logits = torch.func.functional_call(model, params, (x,)).double()
    true = logits.gather(1, y[:, None]).squeeze(1)
    others = logits.scatter(1, y[:, None], -math.inf).logsumexp(1)
    return (true - others).cpu().numpy()


def _online_scores(phi: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Leave-one-out likelihood-ratio scores and membership of every (target, image) pair with at
    least two shadows in and two out, and per target the mask of the images kept."""
    inside = members.astype(float)
    outside = 1.0 - inside
    sums = [(w.sum(0), (w * phi).sum(0), (w * phi * phi).sum(0)) for w in (inside, outside)]
    scores, truth, kept = [], [], []
    for t in range(len(phi)):
        stats = []
        for (count, s1, s2), w in zip(sums, (inside, outside)):
            c = count - w[t]
            mu = (s1 - w[t] * phi[t]) / np.maximum(c, 1)
            var = (s2 - w[t] * phi[t] ** 2) / np.maximum(c, 1) - mu ** 2
            stats.append((c, mu, np.maximum(var, 1e-6)))
        (c_in, mu_in, v_in), (c_out, mu_out, v_out) = stats
        ok = (c_in >= 2) & (c_out >= 2)
        ll = (-0.5 * (phi[t] - mu_in) ** 2 / v_in - 0.5 * np.log(v_in)
              + 0.5 * (phi[t] - mu_out) ** 2 / v_out + 0.5 * np.log(v_out))
        scores.append(ll[ok])
        truth.append(members[t][ok])
        kept.append(ok)
    return np.concatenate(scores), np.concatenate(truth), kept


def _rmia_scores(phi: np.ndarray, population: np.ndarray, members: np.ndarray, gamma: float = GAMMA) -> tuple:
    """RMIA's score (module doc) of every kept (target, image) pair, in :func:`_online_scores`' order.

    ``phi``: each run's φ on the training images, ``population``: on the test images (the z). With
    ``p = sigmoid(φ)`` and ``p̄`` its mean over the other runs, ``LR(x, z) ≥ γ`` iff
    ``log p(x|θ)/p̄(x) - log γ ≥ log p(z|θ)/p̄(z)``, so the score is the share of the z whose ratio is
    at most x's, plus x's own log ratio / 1e6 to break ties between equal shares."""
    def log_ratio(values: np.ndarray) -> np.ndarray:
        p = np.exp(-np.logaddexp(0.0, -values))
        others = (p.sum(0, keepdims=True) - p) / (len(p) - 1)       # p̄ leave-one-out
        return -np.logaddexp(0.0, -values) - np.log(np.maximum(others, 1e-300))

    _, truth, kept = _online_scores(phi, members)
    rx, rz = log_ratio(phi), np.sort(log_ratio(population), axis=1)
    out = []
    for t, ok in enumerate(kept):
        x = rx[t][ok] - math.log(gamma)
        share = np.searchsorted(rz[t], x, side="right") / rz.shape[1]
        out.append(share + np.tanh(x) * 1e-6)
    return np.concatenate(out), truth


def _tpr_at(fpr, tpr, level: float) -> float:
    """The ROC's TPR at the largest FPR not above ``level``."""
    return float(tpr[int(np.searchsorted(fpr, level, side="right") - 1)])


def _clopper_pearson(k: int, n: int, upper: bool, alpha: float = 0.05) -> float:
    from scipy.stats import beta

    if n == 0:
        return 1.0 if upper else 0.0
    if upper:
        return 1.0 if k >= n else float(beta.ppf(1 - alpha, k + 1, n - k))
    return 0.0 if k <= 0 else float(beta.ppf(alpha, k, n - k + 1))


def report(scores, truth, proof: Bound, shadows: int, accuracy: list, seconds: float,
           headline: float = math.inf, levels: tuple = LEVELS, attack: str = "LiRA") -> Membership:
    """The ROC of membership ``scores`` (``truth``: which guesses are members), its TPR at ``levels``
    and their check against the region ``proof`` allows (what the runs prove for the game played,
    :class:`~fedcore.accounting.games.Bound`), whose edge is ``cap_curve``; ``accuracy``: the runs';
    ``headline``: their largest headline ε, shown beside; ``attack``: the scoring function's name."""
    from sklearn.metrics import auc, roc_curve

    fpr, tpr, _ = roc_curve(truth, scores)
    positives, negatives = int(truth.sum()), int((~truth).sum())
    checks = []
    for level in levels:
        i = int(np.searchsorted(fpr, level, side="right") - 1)
        f, t = float(fpr[i]), _tpr_at(fpr, tpr, level)
        alpha = ALPHA / (2 * len(levels))      # two bounds per level
        f_high = _clopper_pearson(round(f * negatives), negatives, upper=True, alpha=alpha)
        t_low = _clopper_pearson(round(t * positives), positives, upper=False, alpha=alpha)
        cap = proof.tpr_cap(f_high)
        checks.append({"fpr": level, "tpr": t, "tpr_low": t_low, "fpr_high": f_high, "cap": cap,
                       "above_cap": t_low > cap})
    keep = np.unique(np.linspace(0, len(fpr) - 1, min(200, len(fpr))).astype(int))
    logs = _log_spaced(fpr, negatives)
    return Membership(
        auc=float(auc(fpr, tpr)), tpr_at_0_1pct_fpr=_tpr_at(fpr, tpr, LEVELS[0]), tpr_at_1pct_fpr=_tpr_at(fpr, tpr, LEVELS[1]),
        dp_cap_tpr_at_0_1pct_fpr=proof.tpr_cap(LEVELS[0]), dp_cap_tpr_at_1pct_fpr=proof.tpr_cap(LEVELS[1]),
        above_cap=any(c["above_cap"] for c in checks), epsilon=headline if math.isfinite(headline) else None,
        shadows=shadows, pairs=len(truth), accuracy=float(np.mean(accuracy)) if accuracy else None, seconds=round(seconds, 3),
        checks=checks, roc={"fpr": [round(float(v), 6) for v in fpr[keep]],
                            "tpr": [round(float(v), 6) for v in tpr[keep]]},
        cap_curve={"fpr": list(CURVE_FPR), "tpr": [round(proof.tpr_cap(f), 6) for f in CURVE_FPR]},
        attack=attack, roc_log={"fpr": [round(float(v), 8) for v in fpr[logs]], "tpr": [round(float(v), 8) for v in tpr[logs]]},
        **proof.to_dict())


def _log_spaced(fpr: np.ndarray, negatives: int, points: int = LOG_POINTS) -> np.ndarray:
    """Indices of the ROC's corners at :data:`LOG_POINTS` log-spaced FPRs from ``1 / negatives`` to 1 and at
    :data:`LEVELS`: for each FPR the last corner not above it and the first above it (so the TPRs reported at
    the levels lie on the kept curve)."""
    grid = np.concatenate([np.logspace(math.log10(1.0 / max(negatives, 1)), 0.0, points), LEVELS])
    right = np.clip(np.searchsorted(fpr, grid, side="right"), 1, len(fpr) - 1)
    return np.unique(np.concatenate([[0, len(fpr) - 1], right - 1, right]))


register(Attack("lira", "membership", "Λ = N(φ; μ_in, σ²_in) / N(φ; μ_out, σ²_out),  φ = log p/(1-p)", ("model",), "any",
                run_game, lambda s: _online_scores(s["phi"], s["members"])[:2]),
         summary="LiRA: the online likelihood ratio of shadow runs in and out", paper="Carlini et al. 2022")
register(Attack("rmia", "membership", "LR(x, z) = p(x|θ)/p̄(x) · p̄(z)/p(z|θ) ≥ γ", ("model",), "any", run_game,
                lambda s: _rmia_scores(s["phi"], s["population"], s["members"])),
         summary="RMIA: the share of population records z that x dominates", paper="Zarifzadeh et al. 2024")
