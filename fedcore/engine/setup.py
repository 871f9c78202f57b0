"""Everything a run needs before round 1: data on device, partition, model, components.

Checks that need the data happen here and raise ``ConfigError`` naming the field
(e.g. more clients than training samples).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..aggregators import AGGREGATORS, Aggregator
from ..config import RunConfig
from ..context import RunContext
from ..data import load_dataset
from ..errors import ConfigError
from ..mechanisms import MECHANISMS, Mechanism
from ..models import build_model, has_batch_norm
from ..partition import Partition, make_partition
from .device import resolve_device
from .flat import layer_slices
from .plan import pad_client_indices


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


def _subsample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.permutation(n)[:size]) if 0 < size < n else np.arange(n)


def prepare(cfg: RunConfig) -> RunSetup:
    """Load data onto the device, split it, build the model and the components."""
    device = resolve_device(cfg.device)
    data = load_dataset(cfg.dataset, device=device)
    for name, size, have in (("train_size", cfg.train_size, len(data.y_train)),
                             ("test_size", cfg.test_size, len(data.y_test))):
        if size > have:
            raise ConfigError(name, size, f"must be <= {have}, the number of samples {cfg.dataset} has "
                                          f"(0 = all)")
    rng = np.random.default_rng(cfg.seed)
    tr = torch.as_tensor(_subsample(len(data.y_train), cfg.train_size, rng), device=device)
    te = torch.as_tensor(_subsample(len(data.y_test), cfg.test_size, rng), device=device)
    x_train, y_train = data.x_train[tr], data.y_train[tr]
    if cfg.num_clients > len(y_train):
        raise ConfigError("num_clients", cfg.num_clients,
                          f"must be <= {len(y_train)}, the number of training samples of {cfg.dataset}")
    p = cfg.partition
    partition = make_partition(p.kind, y_train.cpu().numpy(), cfg.num_clients,
                               num_classes=data.num_classes, seed=cfg.seed,
                               alpha=p.alpha, min_size=p.min_size, shards_per_client=p.shards_per_client,
                               classes_per_client=p.classes_per_client, iid_fraction=p.iid_fraction,
                               size_cv=p.size_cv)
    empty = [i for i, ix in enumerate(partition.indices) if len(ix) == 0]
    if empty:
        raise ConfigError("partition.kind", p.kind, f"left client {empty[0]} without data; "
                          "use fewer clients or another partition")
    padded, counts = pad_client_indices(partition.indices, device)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, tuple(data.input_shape), data.num_classes).to(device)
    if has_batch_norm(model) and MECHANISMS.get(cfg.privacy.mechanism).per_sample:
        raise ConfigError("model", cfg.model, "uses batch norm, which mixes samples and breaks "
                          "per-sample clipping (DP-SGD); pick a model without it")
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    n = cfg.num_clients
    ctx = RunContext(
        num_clients=n, client_sizes=counts.to(torch.float32),
        epsilon=torch.tensor(cfg.privacy.epsilons(n), dtype=torch.float32, device=device),
        delta=torch.tensor(cfg.privacy.deltas(n), dtype=torch.float32, device=device),
        rounds=cfg.rounds, participation=cfg.participation,
        num_params=sum(v.numel() for v in params.values()), layer_slices=layer_slices(params),
        label_counts=np.asarray(partition.label_counts), num_classes=data.num_classes,
        local=cfg.local, device=device, server_lr=cfg.privacy.server_lr)
    pc = cfg.privacy
    mech_cls, agg_cls = MECHANISMS.get(pc.mechanism), AGGREGATORS.get(pc.aggregator)
    mechanism = mech_cls(mech_cls.parse_options(pc.mechanism_options, "privacy.mechanism_options"), ctx)
    aggregator = agg_cls(agg_cls.parse_options(pc.aggregator_options, "privacy.aggregator_options"), ctx)
    aggregator.attach_mechanism(mechanism)
    return RunSetup(cfg, device, x_train, y_train, data.x_test[te], data.y_test[te], partition,
                    padded, counts, model, params, ctx, mechanism, aggregator)
