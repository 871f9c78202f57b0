"""KDP-FL (seed 003; METHODS section 4): DP-SGD clients, Kalman-filtered server.

The paper's headline experiments as named presets ``kdp_fl_<dataset>_<iid|noniid>[_eps<ε>][_<row>]``,
e.g. ``kdp_fl_fmnist_noniid_eps1`` (KDP-FL itself), ``kdp_fl_fmnist_noniid_eps1_dpfedavg``; the
no-privacy and clip-only rows (``kdp_fl_fmnist_noniid_fedavg``) carry no ε and serve ε = 1 and 5.
Fashion-MNIST and CIFAR-10, IID and non-IID, at the paper's λ and at the project's (``KDP_LR``).
"""
from __future__ import annotations

from .spec import Claim, Paper, Row, Table, register_paper

PRIVACY_CLAIM = (
    "ε ∈ {1, 5}, δ = 1e-5 from the moments accountant with q = C·B·E/|D| (eq. 4), with the noise added "
    "once per round (Eq. 3), whose true sensitivity is 2·E·M, not M.")
"""Privacy as the paper states it (shown beside our headline ε, labelled)."""


KDP_PAPER_LR = 0.05
KDP_LR = 0.5
"""The project's reading of KDP-FL's local learning rate (the paper's: ``KDP_PAPER_LR``). With
per-sample clipping at M = 1 and 5 local steps, the paper's λ leaves clip-only training far below
no privacy; λ = 0.5 closes most of that gap (the table's decomposition rows), aiming at clip only
within 2 points of no privacy, which the stored tables do not yet reach."""
KDP_ROUNDS = "participation"
"""``dp_sgd``'s ``rounds`` option in the reproduction's DP rows: the noise is calibrated for the
rounds a client takes part in (the mechanism's default, ``all``, calibrates for every round)."""
KDP_T = 50
"""KDP-FL's rounds T in the stored tables' presets (the paper leaves T open); the plateau rule's T
is ``KDP_T_PLATEAU``, and the report lists every row not at it (``Table.rule_rounds``)."""
KDP_T_PROBE = "assets/curves/kdp_fl_fedavg_T600.json"
"""Every round's test accuracy of the no-privacy row (``kdp_fl_fmnist_noniid_fedavg``, 600 rounds,
on an H200; a path in the repository): the curves the plateau rule reads (seed 0 only so far)."""
KDP_T_PLATEAU = 150
"""The plateau rule's T on ``KDP_T_PROBE`` (``tests/test_reproduce_plateau.py`` recomputes it)."""
KDP_T_RULE = (
    "T: the paper leaves it open. The plateau rule (fedcore.reproduce.stats.plateau_round): on the test "
    "accuracy of the table's no-privacy row, evaluated at every round and averaged over its seeds, T is the "
    "first round at which no trailing 10-round mean of the next 50 rounds is 0.5 points or more above the "
    "trailing 10-round mean at T. Why these choices: T belongs to the training problem, not to a budget (a DP "
    "row's noise is calibrated for T, so its own curve cannot pick T); a mean at every round, not every 25, "
    "keeps T off a grid; 10 rounds average out the client sampling (one round moves by several points with "
    "two classes per client); 50 rounds ahead wait out a dip; the mean over seeds because one seed is one "
    "draw of that sampling. "
    f"On the one seed trained to 600 rounds so far (seed 0 on an H200, every round in {KDP_T_PROBE}): "
    f"T = {KDP_T_PLATEAU}, 10-round mean 78.5 % there; the row then keeps creeping up: 10-round means "
    "66.8 % at T = 50, 80.7 % at 300, 82.5 % at 500, 85.0 % at 600. The rule over the mean of three seeds "
    "needs two more 600-round curves; until then T rests on one seed. ")
KDP_NOTES = (
    "Unspecified by the paper, chosen here: E = 5 local DP-SGD steps (Table 3's 'local "
    "training round E = 5' read as iterations), per-sample clip norm M = 1, DP-SGD noise at every step "
    "(METHODS' revised reading), Kalman Q = 10 R with R the upload's real noise variance. Project's reading "
    f"(rows without 'paper λ'): local learning rate λ = {KDP_LR:g} instead of the paper's {KDP_PAPER_LR:g}, "
    "aiming at clip only within 2 points of no privacy, and the noise calibrated over the rounds a client "
    "takes part in (dp_sgd rounds=participation: the 1 - 1/N quantile of Binomial(T, C/N)) instead of all "
    "T rounds. The 'paper λ' rows keep λ = 0.05 and the calibration over all T rounds. DP-FedAvg = the same "
    "DP-SGD clients averaged without the filter. Non-IID: 2 classes per client, lognormal sizes with CV "
    "0.55 (mean 600, std 328 in the paper). " + KDP_T_RULE)


def _kdp_table(ds: str, name: str, setting: str, eps: float, paper: tuple, *, model: str, in_quick: bool) -> Table:
    iid = setting == "iid"
    base = {"dataset": ds, "model": model, "num_clients": 100, "rounds": KDP_T, "participation": 0.2,
            "partition.kind": "iid" if iid else "kclass",
            "partition.options": {} if iid else {"classes_per_client": 2, "size_cv": 0.55}, "local.steps": 5,
            "local.batch_size": 32, "local.lr": KDP_PAPER_LR,
            "privacy.delta": [1e-5], "privacy.epsilon": [eps]}
    ours = {**base, "local.lr": KDP_LR}
    dp_paper = {"privacy.mechanism": "dp_sgd", "privacy.mechanism_options": {"clip_norm": 1.0}}
    dp = {"privacy.mechanism": "dp_sgd", "privacy.mechanism_options": {"clip_norm": 1.0, "rounds": KDP_ROUNDS}}
    clip = {"privacy.mechanism": "dp_sgd", "privacy.mechanism_options": {"clip_norm": 1.0, "noise_multiplier": 0.0},
            "privacy.aggregator": "mean"}
    key = f"kdp_fl_{name}_{setting}"
    tag = f"eps{eps:g}"
    rows = (
        Row("fedavg", f"No privacy: FedAvg (paper λ = {KDP_PAPER_LR:g})", f"{key}_fedavg",
            {**{k: v for k, v in base.items() if k != "privacy.epsilon"},   # the same run beside eps 1 and 5
             "privacy.mechanism": "none", "privacy.aggregator": "mean", "method": "fedavg"},
            paper=paper[0]),
        Row("clip_paper_lr", f"Clip only, M = 1 (paper λ = {KDP_PAPER_LR:g})", f"{key}_clip_paper_lr",
            {**{k: v for k, v in base.items() if k != "privacy.epsilon"}, **clip}),
        Row("dpfedavg_paper_lr", f"DP-FedAvg ε = {eps:g} (paper λ, noise over all T rounds)",
            f"{key}_{tag}_dpfedavg_paper_lr", {**base, **dp_paper, "privacy.aggregator": "mean"}),
        Row("clip", f"Clip only, M = 1 (λ = {KDP_LR:g})", f"{key}_clip",
            {**{k: v for k, v in ours.items() if k != "privacy.epsilon"}, **clip}),
        Row("dpfedavg", f"DP-FedAvg ε = {eps:g}", f"{key}_{tag}_dpfedavg", {**ours, **dp, "privacy.aggregator": "mean"},
            paper=paper[1]),
        Row("kdpfl", f"KDP-FL ε = {eps:g}", f"{key}_{tag}",
            {**ours, **dp, "privacy.aggregator": "kalman", "method": "kdp_fl"}, paper=paper[2]),
    )
    dsname = {"fashion_mnist": "Fashion-MNIST", "mnist": "MNIST", "cifar10": "CIFAR-10"}[ds]
    title = f"{dsname}, {'IID' if iid else 'non-IID (2 classes per client)'}, ε = {eps:g}"
    cpu_model = {} if model == "cnn_uldp" else {"model": "cnn_uldp"}
    return Table(f"{name}_{setting}_{tag}", title, rows,
                 claims=(Claim("order", ("kdpfl", "dpfedavg"),
                               text="KDP-FL ≥ DP-FedAvg (paper: +0.3 to +4.5 points)"),),
                 notes=KDP_NOTES + ("ResNet-18 (GroupNorm) stands in for the paper's ResNet-50."
                                    if ds == "cifar10" else "CNN: conv5x5(32)-pool-conv5x5(64)-pool-fc512-fc (cnn_kdp)."),
                 quick={"test_size": 1000, "rounds": 15, **cpu_model},
                 quick_notes="All 60,000 training images (a round's cost does not depend on it: 20 clients x "
                             "5 steps x 32 samples), 1,000 test images, 15 rounds, and the small ULDP-FED CNN "
                             "(cnn_uldp, 21k parameters) instead of cnn_kdp (1.7M), whose per-sample clipping "
                             "costs minutes per round on this shared CPU.",
                 in_quick=in_quick, reference="dpfedavg", rule_rounds=KDP_T_PLATEAU)


register_paper(Paper(
    "kdp_fl", "KDP-FL", "KDP-FL (seed 003)",
    "A per-coordinate Kalman filter on the server lifts DP-SGD federated learning 0.3 to 4.5 points "
    "above DP-FedAvg (F-MNIST non-IID ε = 1: 86.12 % vs 83.17 %).",
    (
        _kdp_table("fashion_mnist", "fmnist", "noniid", 1.0, (0.8662, 0.8317, 0.8612), model="cnn_kdp", in_quick=True),
        _kdp_table("fashion_mnist", "fmnist", "noniid", 5.0, (0.8662, 0.8494, 0.8623), model="cnn_kdp", in_quick=False),
        _kdp_table("fashion_mnist", "fmnist", "iid", 1.0, (0.8956, 0.8659, 0.8893), model="cnn_kdp", in_quick=False),
        _kdp_table("fashion_mnist", "fmnist", "iid", 5.0, (0.8956, 0.8802, 0.8901), model="cnn_kdp", in_quick=False),
        _kdp_table("cifar10", "cifar10", "noniid", 1.0, (0.8321, 0.7726, 0.8276), model="resnet18", in_quick=False),
        _kdp_table("cifar10", "cifar10", "noniid", 5.0, (0.8321, 0.7944, 0.8288), model="resnet18", in_quick=False),
        _kdp_table("cifar10", "cifar10", "iid", 1.0, (0.8634, 0.8123, 0.8593), model="resnet18", in_quick=False),
        _kdp_table("cifar10", "cifar10", "iid", 5.0, (0.8634, 0.8355, 0.8603), model="resnet18", in_quick=False),
    ), seeds=3, quick_seeds=2), privacy_claim=PRIVACY_CLAIM)
