"""Everything a run needs before round 1: data on device, partition, model, components.

Checks that need the data happen here and raise ``ConfigError`` naming the field
(e.g. more clients than training samples).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from ..accounting.curve_workers import start_end_worker
from ..aggregators import AGGREGATORS, Aggregator
from ..config import RunConfig
from ..context import RunContext
from ..data import load_dataset
from ..errors import ConfigError
from ..mechanisms import MECHANISMS, Mechanism
from ..models import build_model, has_batch_norm
from ..partition import Partition
from ..threads import apply_policy
from .device import resolve_device, start_device
from .flat import layer_slices
from .plan import pad_client_indices
from .split import split_data


@dataclass
class RunSetup:
    cfg: RunConfig
    device: torch.device
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    partition: Partition
    padded: torch.Tensor
    counts: torch.Tensor
    model: torch.nn.Module
    params: dict
    ctx: RunContext
    mechanism: Mechanism
    aggregator: Aggregator


def prepare(cfg: RunConfig) -> RunSetup:
    """Load data onto the device, split it, build the model and the components; set this
    process's torch threads for that model (:func:`fedcore.threads.apply_policy`, the one policy)."""
    device = resolve_device(cfg.device)
    starting = start_device(device)   # CUDA starts beside the parse
    if device.type == "cuda" and cfg.privacy.mechanism != "none":
        start_end_worker()   # the run's PLD at its end, composed in a process of its own (dp-accounting there)
    data = load_dataset(cfg.dataset, device=device)
    if starting is not None:
        starting.join()
    split = split_data(cfg, data.y_train.cpu().numpy(), len(data.y_test), data.num_classes)
    tr = torch.as_tensor(split.train_rows, device=device)
    te = torch.as_tensor(split.test_rows, device=device)
    x_train, y_train = data.x_train[tr], data.y_train[tr]
    partition = split.partition
    padded, counts = pad_client_indices(partition.indices, device)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, tuple(data.input_shape), data.num_classes).to(device)
    apply_policy(cfg, model, x_train, y_train, device)   # this process's torch threads (fedcore.threads)
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    base = RunContext(
        num_clients=cfg.num_clients, client_sizes=counts.to(torch.float32), epsilon=None, delta=None,
        rounds=cfg.rounds, participation=cfg.participation,
        num_params=sum(v.numel() for v in params.values()), layer_slices=layer_slices(params),
        label_counts=np.asarray(partition.label_counts), num_classes=data.num_classes,
        local=cfg.local, device=device, server_lr=cfg.privacy.server_lr)
    mechanism, aggregator, ctx = build_components(cfg, base, model)
    return RunSetup(cfg, device, x_train, y_train, data.x_test[te], data.y_test[te], partition,
                    padded, counts, model, params, ctx, mechanism, aggregator)


def build_components(cfg: RunConfig, base: RunContext, model: torch.nn.Module):
    """``(mechanism, aggregator, ctx)`` of ``cfg``'s privacy settings on the data and model of
    ``base`` (a context whose budgets, rounds and local settings are replaced by ``cfg``'s).

    ε and δ stay float64 from the config to the ledger and the caps (0.1 in float32 is
    0.10000000149); a mechanism casts to the update's dtype only where it draws noise."""
    n, pc, device = cfg.num_clients, cfg.privacy, base.device
    ctx = dataclasses.replace(
        base, epsilon=torch.tensor(pc.epsilons(n), dtype=torch.float64, device=device),
        delta=torch.tensor(pc.deltas(n), dtype=torch.float64, device=device), rounds=cfg.rounds,
        participation=cfg.participation, local=cfg.local, server_lr=pc.server_lr)
    mech_cls, agg_cls = MECHANISMS.get(pc.mechanism), AGGREGATORS.get(pc.aggregator)
    mech_options = mech_cls.parse_options(pc.mechanism_options, "privacy.mechanism_options")
    if has_batch_norm(model) and mech_cls.traits_for(mech_options).per_sample:
        raise ConfigError("model", cfg.model, "uses batch norm, which mixes samples and breaks "
                          "per-sample clipping (DP-SGD); pick a model without it")
    mechanism = mech_cls(mech_options, ctx)
    aggregator = agg_cls(agg_cls.parse_options(pc.aggregator_options, "privacy.aggregator_options"), ctx)
    aggregator.attach_mechanism(mechanism)
    return mechanism, aggregator, ctx
