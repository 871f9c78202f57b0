"""The same federated run in Flower's simulation engine (flwr + Ray), for the benchmark.

Flower is the reference point a practitioner would reach for: a ``ClientApp`` of
``NumPyClient`` s, a ``ServerApp`` with the ``FedAvg`` strategy, run by
``flwr.simulation.run_simulation`` (Ray actors, one CPU each). Everything that
determines the result is taken from the same :class:`~fedcore.config.RunConfig`:

- data, partition, model initialisation: :func:`fedcore.engine.setup.prepare` (each Ray
  actor builds it once and keeps it, as Flower's tutorials cache their partitions);
- local training: the plain per-client PyTorch loop of
  :func:`fedcore.engine.reference.train_clients_loop` (``torch.optim.SGD``, the same
  epochs or steps, batch size, learning rate, per-sample clipping for DP-SGD);
- resources: ``cpus`` cores (default ``$OMP_NUM_THREADS``, which the benchmark sets to
  its ``--threads`` for every system, else all cores): Ray runs that many client actors
  at once, one thread each;
- the server: Flower's ``FedAvg`` (weights = client sample counts, like fedcore's
  ``fedavg`` and ``uldp`` aggregators), a fraction ``participation`` of the clients per
  round, centralised evaluation on the same test set after every round;
- privacy: ``dp_fedavg`` (user-level Gaussian, fixed clip C_0, no recall) is Flower's own
  ``LocalDpMod`` (clip the update to C_0, add N(0, (C_0 sqrt(2 ln(1.25/delta)) /
  eps_round)^2), eps_round = eps / min(T, r), as fedcore's allocated calibration);
  ``dp_sgd`` adds the mechanism's calibrated noise to each client's update.

Not reproduced: Poisson sampling (Flower samples a fixed ``q N`` clients) and ULDP-FED's
decaying clip and update recall; for those configs the run is the nearest structural
equivalent and :func:`flower_note` says so. Per-round time is the time between the
server's evaluations of consecutive rounds (so it includes dispatch to the actors, local
training, aggregation and evaluation, like fedcore's ``RoundEvent.seconds``).

Needs ``pip install -r requirements-bench.txt`` (``flwr[simulation]``); imported lazily.
"""
from __future__ import annotations

import os
import time
from typing import Optional

import numpy as np
import torch

from .measure import Measurement, model_flops, samples_per_round


class FlowerUnavailable(RuntimeError):
    """Flower is not installed, or the config has no Flower counterpart."""


def flower_note(cfg) -> str:
    """How the Flower run of ``cfg`` differs from fedcore's, or ``""`` when it does not."""
    notes = []
    if cfg.sampling == "poisson":
        notes.append(f"fixed {max(1, round(cfg.participation * cfg.num_clients))} clients/round "
                     "instead of Poisson sampling")
    opts = cfg.privacy.mechanism_options
    if cfg.privacy.mechanism == "uldp_gaussian" and (opts.get("decay", True) or opts.get("recall", "sign") != "none"):
        notes.append("LocalDpMod fixed clip, no decaying clip or recall")
    return "; ".join(notes)


def _check_supported(cfg) -> None:
    pc = cfg.privacy
    if pc.mechanism not in ("none", "uldp_gaussian", "dp_sgd"):
        raise FlowerUnavailable(f"no Flower counterpart for mechanism {pc.mechanism!r} in this benchmark")
    if pc.aggregator not in ("fedavg", "uldp"):
        raise FlowerUnavailable(f"no Flower counterpart for aggregator {pc.aggregator!r} in this benchmark")
    if pc.server_lr != 1.0:
        raise FlowerUnavailable("Flower's FedAvg has no server learning rate")
    if pc.mechanism == "uldp_gaussian" and pc.mechanism_options.get("noise", "allocated") != "allocated":
        raise FlowerUnavailable("LocalDpMod only matches uldp_gaussian's 'allocated' noise")


_SETUPS: dict = {}


def _setup(cfg):
    """fedcore's data, partition and initial model for ``cfg``, built once per process."""
    from fedcore.engine.setup import prepare

    key = cfg.config_hash()
    if key not in _SETUPS:
        _SETUPS[key] = prepare(cfg)
    return _SETUPS[key]


def _client_seed(cfg, rnd: int, cid: int) -> int:
    return (cfg.seed * 1_000_003 + rnd * 10_007 + cid) % 2**63


def run_flower(cfg, cpus: Optional[int] = None, client_gpus: Optional[float] = None) -> Measurement:
    """Run ``cfg`` in Flower's simulation engine on ``cpus`` cores; per-round times, accuracy."""
    try:
        import flwr  # noqa: F401
        from flwr.client import ClientApp, NumPyClient
        from flwr.client.mod import LocalDpMod
        from flwr.common import Context, ndarrays_to_parameters
        from flwr.server import ServerApp, ServerAppComponents, ServerConfig
        from flwr.server.strategy import FedAvg
        from flwr.simulation import run_simulation
    except ImportError as exc:
        raise FlowerUnavailable(f"flwr is not installed ({exc.name}); "
                                "pip install -r requirements-bench.txt") from None
    _check_supported(cfg)

    from fedcore.engine.evaluate import evaluate
    from fedcore.engine.plan import make_plan
    from fedcore.engine.reference import train_clients_loop

    t0 = time.perf_counter()
    server = _setup(cfg)
    names = list(server.params)
    n, pc = cfg.num_clients, cfg.privacy
    per_round = max(1, int(round(cfg.participation * n)))

    class BenchClient(NumPyClient):
        def __init__(self, cid: int):
            self.cid = cid

        def fit(self, parameters, config):
            s = _setup(cfg)
            rnd = int(config["round"])
            start = {k: torch.as_tensor(v, device=s.device) for k, v in zip(names, parameters)}
            gen = torch.Generator(device=s.device).manual_seed(_client_seed(cfg, rnd, self.cid))
            c = slice(self.cid, self.cid + 1)
            plan = make_plan(s.padded[c], s.counts[c], cfg.local, gen)
            trained = train_clients_loop(s.model, start, s.x_train, s.y_train, plan, cfg.local,
                                         clip=s.mechanism.per_sample_clip)
            if pc.mechanism == "dp_sgd":  # KDP-FL's noise on the round's update
                std = s.mechanism.noise_scale()[self.cid]
                for k in names:
                    noise = torch.randn(trained[k].shape, generator=gen, device=s.device)
                    trained[k] = trained[k] + std * noise
            return [trained[k][0].cpu().numpy() for k in names], int(s.counts[self.cid]), {}

    def client_fn(context: Context):
        return BenchClient(int(context.node_config["partition-id"])).to_client()

    mods = []
    if pc.mechanism == "uldp_gaussian":
        clip = float(pc.mechanism_options.get("clip0", 2.0))
        r = int(pc.mechanism_options.get("max_participations", 50))
        eps_round = pc.epsilons(n)[0] / min(cfg.rounds, r)
        mods.append(LocalDpMod(clipping_norm=clip, sensitivity=clip, epsilon=eps_round,
                               delta=pc.deltas(n)[0]))

    stamps: list[float] = []
    accuracy: list[float] = []

    def central_evaluate(server_round, parameters, config):
        params = {k: torch.as_tensor(v, device=server.device) for k, v in zip(names, parameters)}
        acc, loss = evaluate(server.model, params, server.x_test, server.y_test)
        stamps.append(time.perf_counter())
        accuracy.append(acc)
        return loss, {"accuracy": acc}

    def server_fn(context: Context):
        initial = [v.detach().cpu().numpy() for v in server.params.values()]
        strategy = FedAvg(fraction_fit=per_round / n, min_fit_clients=per_round, min_available_clients=n,
                          fraction_evaluate=0.0, min_evaluate_clients=0, evaluate_fn=central_evaluate,
                          on_fit_config_fn=lambda rnd: {"round": rnd},
                          initial_parameters=ndarrays_to_parameters(initial))
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=cfg.rounds))

    gpus = client_gpus if client_gpus is not None else (0.1 if server.device.type == "cuda" else 0.0)
    cpus = cpus or int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count() or 1
    omp = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"  # each actor (which inherits it) is one client on one core
    try:
        run_simulation(server_app=ServerApp(server_fn=server_fn), client_app=ClientApp(client_fn, mods=mods),
                       num_supernodes=n, backend_config={
                           "client_resources": {"num_cpus": 1, "num_gpus": gpus},
                           "init_args": {"num_cpus": cpus, "include_dashboard": False, "log_to_driver": False}})
    finally:
        if omp is None:
            os.environ.pop("OMP_NUM_THREADS")
        else:
            os.environ["OMP_NUM_THREADS"] = omp
    if len(stamps) != cfg.rounds + 1:
        raise RuntimeError(f"Flower finished {len(stamps) - 1} of {cfg.rounds} rounds (see its log above)")
    sizes = server.counts.cpu().numpy()
    m = Measurement("flower", round_seconds=list(np.diff(stamps)), accuracy=accuracy[-1],
                    samples=[samples_per_round(sizes, range(per_round), cfg.local)] * cfg.rounds,
                    setup_seconds=stamps[0] - t0, run_seconds=time.perf_counter() - t0,
                    device=str(server.device), threads=cpus, note=flower_note(cfg))
    m.flops_per_sample = model_flops(cfg.model, tuple(server.x_train.shape[1:]), server.ctx.num_classes)
    return m
