"""HW-DPFL (seed 002; METHODS section 3): Hellinger-weighted aggregation for non-IID data.

The paper's headline experiments as named presets ``hw_dpfl_mnist_<noniid|iid>[_<row>]``, e.g.
``hw_dpfl_mnist_noniid`` (HW-DPFL itself), ``hw_dpfl_mnist_noniid_dpfedavg``: per setting HW-DPFL,
DP-FedAvg, DP-FL, clipping only and two no-privacy FedAvg rows.
"""
from __future__ import annotations

from .spec import Claim, Paper, Row, Table, register_paper

PRIVACY_CLAIM = (
    "Theorem 2's moments-accountant total ε·sqrt(T ln(1/δ) / (2 ln(1.25γ/δ))); the experiments set σ "
    "directly and report no ε.")
"""Privacy as the paper states it (shown beside our headline ε, labelled)."""


HW_SIGMA = 1.0
HW_LR = 0.5
HW_FEDAVG_LR = 0.1
"""Learning rate of the extra no-privacy row: without clipping, FedAvg at ``HW_LR`` diverges on the
non-IID split (its loss becomes NaN and it predicts one class), so that row is no baseline."""
HW_NOTES = (
    "Unspecified by the paper, chosen here: CNN = conv5x5(10)-pool-conv5x5(20)-pool-fc50-fc10 "
    "(cnn_uldp; the paper only says 'CNN'), client fraction F = 0.1 (M = 10 per round), b = 50, E = 1 "
    f"local epoch, lr {HW_LR}, 50 rounds, per-sample gradient norm bound G = 1, delta = 1e-5. Noise: the "
    f"experiments' σ read as a DP-SGD noise multiplier added at every local step (σ = {HW_SIGMA:g}: "
    "N(0, σ²G²) on each step's sum of clipped per-sample gradients; record-level DP, accounted over every "
    "step at q = b/n_k). The learning rate is chosen so that the noise-free baseline with the same clipping "
    "is near the paper's: the earlier lr 0.05 reached only 78.8 % without any noise (the gap to the paper "
    "came from clipping at G = 1, not from σ), lr 0.2 89.7 %. The earlier reading (σ once per round on the "
    "upload, Thm 1) is the mechanism's placement=round. DP-FedAvg = the same noisy clients averaged with "
    "FedAvg's n_k weights; DP-FL [19] (Byrd & Polychroniadou, a secure-MPC protocol the paper does not "
    "describe) read as the same noisy uploads with a plain mean, which coincides with DP-FedAvg when every "
    "client holds 600 images. The 'clipping only' row is DP-FedAvg with σ = 1e-9: the noise-free baseline "
    "of the clipped training (its ε is astronomically large, as it should be). FedAvg without clipping "
    f"at lr {HW_LR} can diverge (its loss becomes NaN and it predicts one class, as on the non-IID split); "
    f"the 'lr {HW_FEDAVG_LR:g}' row is the no-privacy baseline that trains. ")


def _hw_table(setting: str, paper: tuple) -> Table:
    iid = setting == "iid"
    base = {"dataset": "mnist", "model": "cnn_uldp", "num_clients": 100, "rounds": 50, "participation": 0.1,
            "partition.kind": "iid" if iid else "mixed",
            "partition.options": {} if iid else {"iid_fraction": 0.8, "classes_per_client": 2},
            "local.epochs": 1, "local.batch_size": 50, "local.lr": HW_LR,
            "privacy.delta": [1e-5], "privacy.epsilon": [1.0], "eval_every": 10}
    noise = {"privacy.mechanism": "hw_gaussian",
             "privacy.mechanism_options": {"placement": "step", "noise": "level", "sigma": HW_SIGMA,
                                           "grad_bound": 1.0}}
    clip_only = {"privacy.mechanism": "hw_gaussian",
                 "privacy.mechanism_options": {"placement": "step", "noise": "level", "sigma": 1e-9,
                                               "grad_bound": 1.0}}
    name = f"hw_dpfl_mnist_{setting}"
    rows = (
        Row("fedavg", "FedAvg (no noise)", f"{name}_fedavg",
            {**base, "privacy.mechanism": "none", "privacy.aggregator": "fedavg", "method": "fedavg"}),
        Row("fedavg_lr", f"FedAvg (no noise, lr {HW_FEDAVG_LR:g})", f"{name}_fedavg_lr",
            {**base, "local.lr": HW_FEDAVG_LR, "privacy.mechanism": "none", "privacy.aggregator": "fedavg",
             "method": "fedavg"}),
        Row("clip", "Clipping only (DP-FedAvg, σ = 1e-9)", f"{name}_clip",
            {**base, **clip_only, "privacy.aggregator": "fedavg"}),
        Row("dpfedavg", "DP-FedAvg", f"{name}_dpfedavg", {**base, **noise, "privacy.aggregator": "fedavg"},
            paper=paper[0]),
        Row("dpfl", "DP-FL", f"{name}_dpfl", {**base, **noise, "privacy.aggregator": "mean"}, paper=paper[1]),
        Row("hwdpfl", "HW-DPFL", name, {**base, **noise, "privacy.aggregator": "hellinger", "method": "hw_dpfl"},
            paper=paper[2]),
    )
    title = "MNIST, 100 clients x 600 images, " + ("IID" if iid else "80 % IID clients, 20 % two-class clients")
    return Table(setting, title, rows,
                 claims=(Claim("order", ("hwdpfl", "dpfedavg")), Claim("order", ("hwdpfl", "dpfl"))),
                 notes=HW_NOTES + ("" if iid else "Non-IID clients hold 2 classes each (mixed partition)."),
                 quick={"train_size": 12_000, "test_size": 1000, "rounds": 20, "eval_every": 1},
                 quick_notes="12,000 training images (120 per client), 1,000 test images, 20 rounds; only the "
                             "clipping-only, DP-FedAvg and HW-DPFL rows (DP-FL is identical to DP-FedAvg with "
                             "equal client sizes; FedAvg is context only).",
                 in_quick=not iid, reference="dpfedavg", quick_rows=("clip", "dpfedavg", "hwdpfl"))

register_paper(Paper(
    "hw_dpfl", "HW-DPFL", "HW-DPFL (seed 002)",
    "Weighting clients by the Hellinger similarity of their label histogram to uniform beats DP-FedAvg "
    "and DP-FL, most on non-IID data (95.21 % vs 90.03 % / 93.90 %).",
    (_hw_table("noniid", (0.9003, 0.9390, 0.9521)), _hw_table("iid", (0.9641, 0.9420, 0.9667))),
    seeds=3, quick_seeds=2), privacy_claim=PRIVACY_CLAIM)
