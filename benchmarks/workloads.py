"""The benchmark workloads W1-W4: one config per case, the same in every system.

Each case is a set of config overrides (dotted names, as ``--set`` takes them) on the
defaults; every system (fedcore batched, the plain per-client loop, Flower) runs the very
same :class:`~fedcore.config.RunConfig`: data, partition, model and its initialisation,
rounds, local epochs or steps, batch size, learning rate and seed.

=====  ==========================================================================
W1     digits, logreg, FedAvg, 10 and 100 IID clients, 20 rounds, 1 epoch, batch 32
W2     MNIST, cnn_uldp, 100 IID clients, 5 rounds, 1 epoch, batch 32; without noise
       (FedAvg) and with ULDP-FED's user-level Gaussian noise (``dp_fedavg``)
W3     ULDP-FED's MNIST experiment: 1000 users with 2 label shards each, Poisson q = 0.1,
       300 rounds, ``dsdp_fedavg``; full length on a GPU only, ``W3-quick`` = 5 rounds
W4     DP-SGD (per-sample clipping, ``dp_sgd``) on MNIST, 100 clients, 20 per round
=====  ==========================================================================
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

SYSTEMS = ("fedcore", "loop", "flower")

_W1 = {"dataset": "digits", "model": "logreg", "partition.kind": "iid", "rounds": 20,
       "local.epochs": 1, "local.batch_size": 32, "local.lr": 0.5, "method": "fedavg"}
_W2 = {"dataset": "mnist", "model": "cnn_uldp", "num_clients": 100, "partition.kind": "iid",
       "rounds": 5, "local.epochs": 1, "local.batch_size": 32, "local.lr": 0.05, "method": "fedavg"}
# dp_fedavg = fixed clip C0 = 2, no recall, the classical Gaussian calibration of each
# round's share of the budget; every client every round (like the no-noise case, so the
# two differ only by the mechanism). eps = 100 over 5 rounds keeps the model learning.
# Fixed sampling needs ULDP's local reading (the central one amplifies by Poisson
# sampling); it is also what Flower's LocalDpMod does.
_W2_NOISE = {**_W2, "method": "dp_fedavg", "sampling": "fixed", "participation": 1.0,
             "privacy.epsilon": [100.0], "privacy.delta": [1e-5], "privacy.mechanism_options.reading": "local"}
_W3 = {"dataset": "mnist", "model": "cnn_uldp", "num_clients": 1000, "partition.kind": "shards",
       "partition.shards_per_client": 2, "rounds": 300, "local.epochs": 1, "local.batch_size": 10,
       "local.lr": 0.05, "method": "dsdp_fedavg", "privacy.epsilon": [10.0], "privacy.delta": [1e-5]}
# KDP-FL's client (B = 32, lambda = 0.05, E = 5 local iterations) with FedAvg on the server
# (Flower has no Kalman filter, and the server step is not what is timed). cnn_uldp rather
# than KDP-FL's 1.6M-parameter CNN keeps the per-sample gradients CPU-sized.
_W4 = {"dataset": "mnist", "model": "cnn_uldp", "num_clients": 100, "participation": 0.2,
       "partition.kind": "iid", "rounds": 10, "local.steps": 5, "local.batch_size": 32,
       "local.lr": 0.05, "privacy.mechanism": "dp_sgd", "privacy.aggregator": "fedavg",
       "privacy.epsilon": [10.0], "privacy.delta": [1e-5]}


@dataclass(frozen=True)
class Case:
    """One row group of the report: a label, its config overrides, where it may run."""

    label: str
    workload: str
    overrides: dict
    summary: str
    gpu_only: bool = False
    systems: tuple[str, ...] = SYSTEMS
    note: str = ""

    def set_args(self, device: str = "auto", extra: dict | None = None) -> list[str]:
        """``--set`` arguments for ``python -m fedcore run`` (the documented command);
        ``extra`` overrides (e.g. fewer rounds) come last and win."""
        items = {**self.overrides, "device": device, **(extra or {})}
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in items.items()]

    def config(self, device: str = "auto", extra: dict | None = None):
        """The validated :class:`RunConfig` of this case, exactly as the CLI builds it."""
        from fedcore.layering import build_config

        return build_config(None, None, self.set_args(device, extra))


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    cases: tuple[Case, ...] = field(default_factory=tuple)


WORKLOADS = {
    "W1": Workload("W1", "digits / logreg / FedAvg", (
        Case("W1/10", "W1", {**_W1, "num_clients": 10}, "10 clients, 20 rounds"),
        Case("W1/100", "W1", {**_W1, "num_clients": 100}, "100 clients, 20 rounds"),
    )),
    "W2": Workload("W2", "MNIST / cnn_uldp / 100 IID clients", (
        Case("W2/plain", "W2", _W2, "FedAvg, 5 rounds"),
        Case("W2/uldp", "W2", _W2_NOISE, "dp_fedavg (uldp_gaussian, fixed clip), 5 rounds"),
    )),
    "W3": Workload("W3", "ULDP-FED MNIST (1000 users, q = 0.1, dsdp_fedavg)", (
        Case("W3", "W3", _W3, "300 rounds", gpu_only=True, systems=("fedcore",),
             note="the loop and Flower take hours here; W3-quick gives their per-round ratio"),
        Case("W3-quick", "W3", {**_W3, "rounds": 5}, "--quick: 5 of the 300 rounds"),
    )),
    "W4": Workload("W4", "DP-SGD (per-sample clipping) on MNIST", (
        Case("W4", "W4", _W4, "100 clients, 20 per round, 5 local steps, 10 rounds", systems=("fedcore",),
             note="the loop and Flower add DP-SGD's noise once per round, not at every step (KDP-FL's "
                  "default since the per-step reading): their earlier W4 rows timed another mechanism"),
    )),
}


def select_cases(names: list[str], device_type: str, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The cases of workloads ``names`` (``all`` = every one) runnable on ``device_type``.

    GPU-only cases are skipped on CPU (with a message); ``quick`` keeps only the short
    variant of a workload that has one. Returns ``(cases, skip messages)``.
    """
    chosen = list(WORKLOADS) if "all" in names else names
    cases, skipped = [], []
    for name in chosen:
        if name not in WORKLOADS:
            raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}, all")
        for case in WORKLOADS[name].cases:
            short = any(c.label == case.label + "-quick" for c in WORKLOADS[name].cases)
            if case.gpu_only and device_type != "cuda":
                skipped.append(f"{case.label}: GPU only (on CPU use {case.label}-quick, which runs too)")
            elif quick and short:
                skipped.append(f"{case.label}: --quick runs {case.label}-quick instead")
            else:
                cases.append(case)
    return cases, skipped
