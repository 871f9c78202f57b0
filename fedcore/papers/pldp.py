"""PLDP-FL (seed 000; METHODS section 1): personalized LDP with weighted / probabilistic aggregation.

The paper's headline experiments as named presets ``pldp_<dataset>_<iid|noniid>[_<budgets>]_<row>``,
e.g. ``pldp_mnist_iid_c``, ``pldp_fmnist_iid_llh_b``: per dataset and setting one table per
personalized budget set (the first, without a budget slug, is the paper's headline setting), with
the paper's rules A / B / C, the noise-free baseline (first table only) and the rows C′, B-IVW
and C-max that are not part of the claim.
"""
from __future__ import annotations

from .spec import Claim, Paper, Row, Table, register_paper

PRIVACY_CLAIM = (
    "each client's ε_i (e.g. {1, 5, 10}) over R rounds, from its closed-form σ_i; the rigorous RDP "
    "figure for the clipped update (L2 sensitivity 2c√d) is far larger (see the headline column).")
"""Privacy as the paper states it (shown beside our headline ε, labelled)."""


BUDGET_SETS = {"lmh": "L/M/H", "llh": "L/L/H", "lhh": "L/H/H", "lh": "L/H"}
"""Slugs of the paper's personalized budget sets (low / middle / high)."""


def _budget(values) -> str:
    return "{" + ", ".join(f"{v:g}" for v in values) + "}"


PLDP_LR = 10.0
PLDP_NOTES = (
    "Unspecified by the paper, chosen here: local SGD with a fixed learning rate 10 (the paper uses "
    "scikit-learn's 'optimal' schedule, whose initial rate for the default alpha = 1e-4 is 10), "
    "batch-mean gradients, 1 local epoch per round. The extra row C′ (not part of the claim) uses the "
    "aggregator's other reading, sampling m = ceil(N/3) clients without replacement with probabilities "
    "P_i: under the literal rule C (one omega per round, select P_i > omega) many rounds select nobody "
    "and keep the model. Ablations (not part of the claim): B-IVW weights uploads by 1/σ_i² (the "
    "inverse-variance optimum for independent unbiased noisy uploads) and C-max uses P_i = ρ_i / max_j ρ_j, "
    "so the least noisy client is selected every round (the paper's one-ω rule selects on average one "
    "client and nobody in 1 − max_i P_i of the rounds). ")
PLDP_RULES = (("a", "A: arithmetic mean", "mean", "pldp_a"),
              ("b", "B: weighted by 1/σ_i", "weighted", "pldp_b"),
              ("c", "C: probability-based selection", "probabilistic", "pldp_c"))
PLDP_CLAIM_IID = Claim("order", ("c", "b", "a"))
PLDP_CLAIM_NONIID = Claim("order", ("c", "a"))   # non-IID: the paper reports C's gain over A only


def _pldp_tables(ds: str, name: str, *, iid: bool, clients: int, rounds: int, batch: int, train: int,
                 test: int, budgets: dict, nonoise: float | None, gains: tuple = (None, None),
                 q: float = 0.8, clip: float = 2.0, l2: float = 4.0, notes: str = "",
                 quick: dict | None = None, quick_notes: str = "", claims: bool = True) -> list[Table]:
    """One table per budget set (the first is the paper's headline setting)."""
    setting = "iid" if iid else "noniid"
    base = {"dataset": ds, "model": "logreg", "num_clients": clients, "rounds": rounds,
            "partition.kind": "iid" if iid else "dirichlet", "local.epochs": 1,
            "local.batch_size": batch, "local.lr": PLDP_LR, "train_size": train, "test_size": test}
    if not iid:
        base.update({"partition.alpha": PLDP_ALPHA, "privacy.server_lr": PLDP_SERVER_LR})
    per_client = round(train / clients) if train else None
    delta = [1.0 / per_client] if (iid and per_client) else [1e-5]
    tables = []
    for i, (set_name, eps) in enumerate(budgets.items()):
        key = f"{name}_{setting}" + ("" if i == 0 else f"_{set_name}")
        rows = []
        if i == 0:   # the noise-free baseline does not depend on the budgets
            if iid:
                over = {**base, "privacy.mechanism": "none", "privacy.aggregator": "fedavg", "method": "fedavg"}
                label = "No noise (FedAvg)"
            else:
                over = {**base, "privacy.mechanism": "ldp_sign", "privacy.aggregator": "mean",
                        "privacy.mechanism_options": {"clip": clip, "l2_sensitivity": l2, "deterministic": True}}
                label = "No privacy: sign(Δ_i), mean"
            rows.append(Row("nonoise", label, f"pldp_{key}_nonoise", over, paper=nonoise))
        rule_over = {}
        for (rkey, label, aggregator, method), gain in zip(PLDP_RULES, (None,) + tuple(gains)):
            if iid:
                mech = {"privacy.mechanism": "gaussian",
                        "privacy.mechanism_options": {"clip": clip, "sample_rate": q, "delta_from_size": True},
                        "method": method}
            else:
                mech = {"privacy.mechanism": "ldp_sign",
                        "privacy.mechanism_options": {"clip": clip, "l2_sensitivity": l2}}
            over = {**base, **mech, "privacy.aggregator": aggregator, "privacy.epsilon": list(eps),
                    "privacy.delta": delta}
            rule_over[rkey] = over
            rows.append(Row(rkey, label, f"pldp_{key}_{rkey}", over, paper_gain=gain if i == 0 else None,
                            short=rkey.upper()))
        m = -(-clients // 3)
        rows.append(Row("c_m", f"C′: sample m = {m} with P_i (option)", f"pldp_{key}_c_m",
                        {**over, "privacy.aggregator": "probabilistic",
                         "privacy.aggregator_options": {"mode": "sample_m", "m": m}}))
        rows.append(Row("b_ivw", "B-IVW: weights ∝ 1/σ_i² (ablation)", f"pldp_{key}_b_ivw",
                        {**rule_over["b"], "privacy.aggregator_options": {"weights": "inverse_variance"}},
                        short="B-IVW"))
        rows.append(Row("c_max", "C-max: P_i = ρ_i / max ρ (ablation)", f"pldp_{key}_c_max",
                        {**rule_over["c"], "privacy.aggregator_options": {"normalize": "max"}}, short="C-max"))
        title = (f"{PLDP_DATASETS[ds]}, {'IID' if iid else 'non-IID (Dirichlet)'}, "
                 f"personalized ε = {_budget(eps)} ({BUDGET_SETS[set_name]})")
        tables.append(Table(key, title, tuple(rows), claims=((PLDP_CLAIM_IID if iid else PLDP_CLAIM_NONIID),) if claims else (),
                            notes=PLDP_NOTES + notes, quick=dict(quick or {}), quick_notes=quick_notes,
                            in_quick=(i == 0 and ds in ("digits", "mnist", "fashion_mnist", "covertype")),
                            reference="a"))
    return tables


PLDP_DATASETS = {"digits": "digits", "mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "covertype": "Covertype"}
PLDP_ALPHA = 0.5
PLDP_SERVER_LR = 0.01
PLDP_NONIID_NOTES = (
    f"Non-IID: Dirichlet label split with alpha = {PLDP_ALPHA} (the paper gives no alpha), minimum "
    f"partition size 10; the server step of the sign update eta_s = {PLDP_SERVER_LR} (not given); "
    "delta = 1e-5 as stated. ")
PLDP_TRAIN_NOTE = ("Training set size: the paper gives only the test size; we use 5x the test size "
                   "({train} samples), the ratio its IID settings imply (delta_i = 1/|D_i|). ")

PLDP_THREE = {"lmh": (1, 5, 10), "llh": (1, 1, 10), "lhh": (1, 10, 10)}
PLDP_TABLES = [
    *_pldp_tables("digits", "digits", iid=True, clients=3, rounds=10, batch=50, train=0, test=0,
                  budgets={"lmh": (1, 5, 10)}, nonoise=None, q=0.8, clip=200.0,
                  notes="The paper mentions scikit-learn's digits but reports no numbers for it; we apply "
                        "its MNIST settings (N = 3, R = 10, batch 50, q = 0.8, c = 200, delta_i = 1/|D_i|) to "
                        "the bundled 80/20 split (1437 / 360 images)."),
    *_pldp_tables("mnist", "mnist", iid=True, clients=3, rounds=10, batch=50, train=1500, test=300,
                  budgets=PLDP_THREE, nonoise=0.887, gains=(0.0557, 0.1128), q=0.8, clip=200.0,
                  notes="Training set: 3 x 500 images (delta_i = 1/500 = 1/|D_i| fixes |D_i| = 500). The paper "
                        "reports B and C as gains over A without saying for which budget set; we compare "
                        "them with the {1, 5, 10} table."),
    *_pldp_tables("fashion_mnist", "fmnist", iid=True, clients=3, rounds=20, batch=50, train=3000, test=600,
                  budgets={"lmh": (0.05, 0.5, 1), "llh": (0.05, 0.05, 1), "lhh": (0.05, 1, 1)},
                  nonoise=0.731, gains=(0.0304, 0.0393), q=0.9, clip=2.0,
                  notes="Training set: 3 x 1000 images (delta_i = 1/1000 = 1/|D_i|)."),
    *_pldp_tables("covertype", "covertype", iid=True, clients=10, rounds=50, batch=1000, train=500_000,
                  test=30_000, budgets={"lmh": (1, 1, 1, 5, 5, 5, 5, 10, 10, 10), "lh": (1,) * 5 + (10,) * 5},
                  nonoise=0.49, gains=(0.0407, 0.1090), q=0.8, clip=2.0,
                  notes="500,000 training rows split evenly (delta_i = 1/50,000), 30,000 test rows, features "
                        "standardised with the training mean and std.",
                  quick={"train_size": 50_000, "test_size": 5_000, "privacy.delta": [1e-4]},
                  quick_notes="50,000 training rows (delta_i = 1/5,000), 5,000 test rows."),
    *_pldp_tables("mnist", "mnist", iid=False, clients=10, rounds=10, batch=400, train=12_000, test=2400,
                  budgets={"lmh": (5, 5, 5, 10, 10, 10, 10, 15, 15, 15), "lh": (5,) * 5 + (15,) * 5},
                  nonoise=0.652, gains=(None, 0.0697), clip=4.0, l2=8.0,
                  notes=PLDP_NONIID_NOTES + PLDP_TRAIN_NOTE.format(train=12_000)),
    *_pldp_tables("fashion_mnist", "fmnist", iid=False, clients=10, rounds=10, batch=200, train=6000, test=1200,
                  budgets={"lmh": (5, 5, 5, 10, 10, 10, 10, 15, 15, 15), "lh": (5,) * 5 + (15,) * 5},
                  nonoise=0.498, gains=(None, 0.1985), clip=4.0, l2=8.0,
                  notes=PLDP_NONIID_NOTES + PLDP_TRAIN_NOTE.format(train=6000)),
    *_pldp_tables("covertype", "covertype", iid=False, clients=10, rounds=20, batch=2500, train=500_000,
                  test=30_000, budgets={"lmh": (1, 1, 1, 5, 5, 5, 5, 10, 10, 10), "lh": (1,) * 5 + (10,) * 5},
                  nonoise=0.626, clip=2.0, l2=4.0, claims=False,
                  notes=PLDP_NONIID_NOTES + "The paper reports no gain of B or C over A here, so no ordering "
                        "is claimed.",
                  quick={"train_size": 50_000, "test_size": 5_000},
                  quick_notes="50,000 training rows, 5,000 test rows."),
]

register_paper(Paper(
    "pldp", "PLDP-FL", "PLDP-FL (seed 000)",
    "With personalized budgets, weighting clients by 1/σ_i (B) or selecting them with probability "
    "∝ 1/σ_i (C) beats the arithmetic mean (A): C ≥ B ≥ A (MNIST IID: B +5.57, C +11.28 points).",
    tuple(PLDP_TABLES), seeds=5, quick_seeds=3), privacy_claim=PRIVACY_CLAIM)
