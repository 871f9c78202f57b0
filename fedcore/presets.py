"""Named experiment presets. Each preset is a dict of config overrides from the defaults.

This module only holds the registry; :func:`fedcore.resolve.preset_config` builds a preset's
validated config, and :mod:`fedcore.catalog` also registers the papers' presets
(:mod:`fedcore.papers`).

``demo`` is the dashboard's default: digits (bundled, offline), logistic regression,
10 IID clients, 20 rounds; its own method is FedAvg without noise (>= 0.90 test accuracy), and the
Playground starts it under a private method.
"""
from __future__ import annotations

from .registry import Registry

PRESETS = Registry("preset")


AFTER_METHOD = "after_method"
"""Key of a preset's settings applied after its method's recipe (like ``--set`` after
``--set method=``): a preset that tunes one of the method's own options, e.g. its tau."""


def register_preset(name: str, *, summary: str, paper: str = "", overrides: dict,
                    after_method: dict | None = None) -> None:
    """Register preset ``name``: ``overrides`` of the defaults (``method`` is applied last,
    its recipe winning), then ``after_method`` (which wins over the recipe)."""
    PRESETS.register(name, summary=summary, paper=paper)(
        {**overrides, **({AFTER_METHOD: dict(after_method)} if after_method else {})})


register_preset("demo", summary="Digits, logistic regression, 10 IID clients, 20 rounds; the method below decides "
                                         "the privacy.",
                overrides={"dataset": "digits", "model": "logreg", "num_clients": 10, "rounds": 20,
                           "partition.kind": "iid", "local.epochs": 1, "local.batch_size": 32,
                           "local.lr": 0.5, "method": "fedavg"})
register_preset("mnist_cnn_100", summary="MNIST, ULDP-FED CNN, 100 IID clients, 1 local epoch.",
                paper="ULDP-FED (seed 004) model",
                overrides={"dataset": "mnist", "model": "cnn_uldp", "num_clients": 100, "rounds": 5,
                           "partition.kind": "iid", "local.epochs": 1, "local.batch_size": 32,
                           "local.lr": 0.05, "method": "fedavg"})

register_preset(
    "uldp_recall_digits", paper="ULDP-FED (seed 004)",
    summary="ULDP-FED's recall on digits: DCDP-FedAvg, 20 users, all in every round, ε = 10, recall when a "
            "user's noisy update points away from the last global update (cosine < τ = 0).",
    overrides={"dataset": "digits", "model": "logreg", "num_clients": 20, "rounds": 30, "partition.kind": "iid",
               "local.epochs": 1, "local.batch_size": 32, "local.lr": 0.5, "privacy.epsilon": [10.0],
               "method": "dcdp_fedavg"},
    after_method={"participation": 1.0, "privacy.mechanism_options.tau": 0.0})

# Why tau = 0 (docs/reproduction.md, ULDP-FED): at digits scale the noise dominates each upload, so
# the similarity of an update to the last global update hovers around 0; the automatic tau (2 sd
# below chance) then fires at its false-alarm rate (~1.5 % of participations, no visible pattern),
# while tau = 0 fires for every update that points away, about half of them: the recall-check
# chart shows the similarity sitting on the tau line, and accuracy pays for the stale updates
# (seed 0: 0.536 with tau = 0 against 0.775 with the automatic tau). Every user takes part in
# every round (q = 1): a subsampled accountant at q = 0.5 costs seconds per round.

register_preset(
    "attack_digits",
    summary="What ε buys: 6 clients at ε = 1, 10, 100, 1,000, 10,000 and 100,000, each round one image and one "
            "step (FedSGD), Gaussian noise on each upload (local DP): the attacker recovers the digits of the "
            "clients with the larger ε.",
    overrides={"dataset": "digits", "model": "logreg", "num_clients": 6, "rounds": 20, "partition.kind": "iid",
               "local.steps": 1, "local.batch_size": 1, "local.lr": 0.5,
               "privacy.epsilon": [1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0], "method": "dp_fedavg"},
    after_method={"participation": 1.0, "privacy.mechanism_options.reading": "local",
                  "privacy.mechanism_options.noise": "accountant"})
# Per-client ε with a visible consequence: one image per update (the attack's best case, Phong et al.
# 2017) and local Gaussian uploads, so each client's own ε decides whether its digit comes back.

register_preset(
    "attack_lesson",
    summary="Both sides of ε at once: the six clients you watch hold ε = 1, 10, 100, 1,000, 10,000 and 100,000, "
            "beside 20 classmates at ε = 100,000; each round one image and one step (FedSGD), Gaussian noise on "
            "each upload (local DP), and the server weights each upload by its inverse noise variance, so the "
            "model learns from the clear uploads while the attacker finds the digits of the clients with the "
            "larger ε.",
    overrides={"dataset": "digits", "model": "logreg", "num_clients": 26, "rounds": 100, "partition.kind": "iid",
               "local.steps": 1, "local.batch_size": 1, "local.lr": 1.0,
               "privacy.epsilon": [1.0, 10.0, 100.0, 1000.0, 10000.0] + [100000.0] * 21, "method": "pldp_b_ivw"},
    after_method={"privacy.mechanism": "hw_gaussian"})
# Why not attack_digits: its six uploads are averaged alike (dp_fedavg's uldp aggregator, n_i-weighted), so the
# ε = 1 client's noise swamps the model (accuracy ~0.1). Here noise-aware weights (PLDP-FL's B-IVW, 1/sigma_i^2)
# give the noisy uploads almost no say, and 20 clear classmates carry the model (FedSGD of one image per client
# learns slowly alone: 0.74 with the six only, 200 rounds); HW-DPFL's per-round Gaussian (Thm 1) is the upload.
# Spend exactly ε, 100 rounds: accuracy 0.886 / 0.881 / 0.897 on seeds 0 / 1 / 2 (50 rounds: 0.69 to 0.80).

register_preset(
    "attack_membership",
    summary="Membership a class can see: 2 clients share only 100 digits and train on them 100 times over "
            "(10 rounds of 10 epochs), no privacy; the model memorises them, so an attacker with shadow models "
            "tells members from non-members at 10x chance or more. Real deployments differ: thousands of records "
            "per model and a few passes over them leave far less to find, so a real attack usually sits near "
            "chance, which proves nothing either way; only the cap its ε proves bounds it.",
    overrides={"dataset": "digits", "model": "logreg", "num_clients": 2, "rounds": 10, "partition.kind": "iid",
               "train_size": 100, "local.epochs": 10, "local.batch_size": 8, "local.lr": 0.5, "method": "fedavg"})
# Few records per model, many passes (Carlini et al. 2022, §5: memorised outliers carry LiRA's low-FPR power):
# 64 shadow runs of this recipe take ~5 s; TPR at 0.1 % FPR ~2-4 % without noise (docs/benchmarks.md).

# Demo-scale settings per method: what a preset changes when a method is picked on it
# (Playground one-click, ``python -m fedcore sweep``). Only run-scale settings (clients,
# rounds, learning rate, local steps, participation); the papers' method definitions (mechanism,
# aggregator and their options) stay as they are. Chosen on digits so that the frontier
# teaches: near chance at eps = 0.1, within a few points of no privacy at eps = 100
# (docs/benchmarks.md, "Frontier"; measured with ``python -m fedcore sweep --preset demo``).
# - PLDP-FL: sigma_i is an absolute per-coordinate std that grows with sqrt(R), so few rounds
#   of long local training (large updates) carry the signal: 3 rounds x 10 epochs, lr 2.
# - HW-DPFL: Theorem 1's sigma ~ gamma * 2 eta E G with gamma = E b / n_k, i.e. it grows with
#   E^2 b while the signal grows with E: one step of a batch of 8 per round, 80 rounds.
# - KDP-FL: per-sample clipping to M = 1 shrinks the steps; lr 2 makes up for it.
# - ULDP-FED (central reading): the sum's noise z C is shared by the sampled users; with 10
#   clients, q = 0.1 samples one user per round, so every user takes part (q = 1).
_PLDP_DEMO = {"rounds": 3, "local.epochs": 10, "local.lr": 2.0}
_ULDP_DEMO = {"participation": 1.0}
_HW_DEMO = {"rounds": 80, "local.steps": 1, "local.batch_size": 8, "local.lr": 1.5}
METHOD_SETTINGS: dict[str, dict[str, dict]] = {"demo": {
    **{m: _PLDP_DEMO for m in ("pldp_a", "pldp_b", "pldp_c", "pldp_b_ivw", "pldp_c_max")},
    **{m: _HW_DEMO for m in ("hw_dpfl", "hw_fedavg")},
    "kdp_fl": {"local.lr": 2.0},
    **{m: _ULDP_DEMO for m in ("dp_fedavg", "ddp_fedavg", "sdp_fedavg", "cdp_fedavg", "dsdp_fedavg",
                               "dcdp_fedavg")},
}}


def preset_method_settings(preset: str, method: str) -> dict:
    """Overrides that preset ``preset`` adds when method ``method`` is applied on it."""
    return dict(METHOD_SETTINGS.get(preset, {}).get(method, {}))


