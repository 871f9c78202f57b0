"""fedcore against pfl-research 0.6.0 on one synthetic FedAvg task (issue 55 §5).

    python -m benchmarks.pfl_compare [--clients 1000] [--samples 50] [--cohort 100] [--epochs 1]
        [--batch 10] [--lr 0.1] [--model mlp|logreg] [--rounds 20] [--features 784] [--classes 10]
        [--test 10000] [--separation 3.0] [--seed 0] [--eval-every 0] [--device cpu|cuda] [--threads 1]
        [--systems fedcore,pfl] [--pfl-path /tmp/pflsite] [--repeats 1] [--timeout S] [--out FILE]

**The task, defined once** (:class:`Task`, :func:`make_data`) and given to both systems: ``clients``
clients of ``samples`` examples each, drawn from Gaussian clusters (one mean per class, ``N(0, I)``
scaled to norm ``separation``, unit noise; ``features`` dimensions, ``classes`` classes, labels
uniform; a fixed seed); client ``i`` holds training rows ``i*samples .. (i+1)*samples - 1`` in both
systems (the same shards); ``test`` held-out examples from the same clusters. Each round a cohort of
``cohort`` clients drawn without replacement (fedcore's ``sampling=fixed``; pfl gets the same rule as
its user sampler), ``epochs`` local epochs of plain SGD (``lr``, batch ``batch``, the last batch partial,
the client's examples shuffled), FedAvg weighted by examples (fedcore's ``fedavg`` aggregator, pfl's
``WeightByDatapoints`` and a central SGD at learning rate 1), ``rounds`` rounds, central evaluation on
the test set after the last round (``--eval-every K``: also every K rounds, in both). The model is
fedcore's ``mlp`` (flatten, 200 ReLU units, linear: 784-200-10) or ``logreg``: pfl trains the same
``FlatMLP`` class, built after ``torch.manual_seed(seed)`` as fedcore builds it, so both start from the
same weights. No privacy: plain FedAvg.

**fedcore** runs through its public API (:func:`fedcore.run`): the data is a dataset registered the
plugin way (``DATASETS.register``, :mod:`fedcore.plugins`), the shards a registered partitioner, in a
process of its own (so the registry entries never reach another process). It trains the cohort as one
batch (``torch.func.vmap``).
**pfl** runs as its PyTorch simulation is documented: ``PyTorchTensorDataset`` users (tensors on the
device, shuffled when sampled) in a ``FederatedDataset``, ``PyTorchModel`` (local ``torch.optim.SGD``,
central ``SGD(lr=1)``), ``FederatedAveraging`` with ``NNAlgorithmParams`` / ``NNTrainHyperParams``, a
``SimulatedBackend`` with ``WeightByDatapoints``, one process (no ``torchrun`` workers), users one after
another; its round metrics are not printed (``send_metrics_to_platform=False``). Its setup includes
torch's first ``torch.optim`` optimizer, which imports ``torch._dynamo`` (2-5 s on a busy CPU).

**Measured**, per system, each in a fresh process started by this one: the training loop's wall seconds
(fedcore: ``RunStarted`` to ``RunFinished``; pfl: ``FederatedAveraging.run``), client updates in it
(counted: fedcore's ``RoundEvent.selected``, pfl's users made), **client updates per second**
(updates / loop seconds) and per CPU-second, the loop's process CPU-seconds (all threads), the rounds
after the first alone (CUDA start-up, graph capture and allocator warm-up fall in round 1), setup
(data, model, system objects) and imports apart, the whole process's CPU-seconds, the final test
accuracy, torch's threads and the device, and the 1-minute load average before and after each
process. The comparison counts only when the two accuracies agree within ±1 point (``equal_accuracy``).

**Not compared**: privacy (no DP-FedAvg: the two calibrate and sample differently, and matching their
noise is a task of its own), multi-process or multi-GPU pfl (``torchrun``; fedcore has no counterpart
on one GPU), pfl's per-user metrics (pfl evaluates each user before and after local training in its
first round, as ``NNAlgorithmParams.evaluation_frequency`` cannot skip round 1; the rest are off),
non-IID data, and pfl's reshuffle per epoch (pfl slices a user's examples in one order for every epoch:
with ``epochs=1``, the default, the two orders are alike).

**Installing pfl**: ``pfl==0.6.0`` requires ``dp-accounting<0.6`` and ``packaging<26``, which the
project pins higher (``dp-accounting==0.6.0``), so it is kept out of the project's environment and out
of ``requirements-bench.txt``: install it beside, without its dependencies, and name the folder::

    python -m pip install --target /tmp/pflsite --no-deps pfl==0.6.0 "multiprocess>=0.70.15,<0.71" \\
        "dill>=0.4.1" "prv-accountant>=0.2,<0.3"
    python -m benchmarks.pfl_compare --pfl-path /tmp/pflsite

(FedAvg without privacy runs with the project's dp-accounting 0.6.0; only pfl's child process gets the
folder on its ``PYTHONPATH``.) ``scripts/device_check.sh`` step ``pfl`` does the same from wheels
downloaded by ``--prepare``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
MARK = "PFL_COMPARE_RESULT "
"""The child's last stdout line: this mark, then its measurement as JSON."""
NO_PFL = 3
"""The pfl child's exit status when pfl cannot be imported."""
DATASET, PARTITIONER = "pfl_compare_synthetic", "pfl_compare_blocks"


@dataclass(frozen=True)
class Task:
    """The synthetic FedAvg task both systems train (module doc)."""

    clients: int = 1000
    samples: int = 50
    cohort: int = 100
    epochs: int = 1
    batch: int = 10
    lr: float = 0.1
    model: str = "mlp"
    rounds: int = 20
    features: int = 784
    classes: int = 10
    test: int = 10_000
    separation: float = 3.0
    seed: int = 0
    eval_every: int = 0

    def __post_init__(self):
        if not 1 <= self.cohort <= self.clients:
            raise ValueError(f"cohort {self.cohort} must be in 1..clients ({self.clients})")
        if self.model not in ("mlp", "logreg"):
            raise ValueError(f"model {self.model!r}: mlp or logreg")
        if min(self.samples, self.epochs, self.batch, self.rounds, self.features, self.test) < 1 or self.classes < 2:
            raise ValueError("samples, epochs, batch, rounds, features, test must be >= 1 and classes >= 2")

    @property
    def participation(self) -> float:
        return self.cohort / self.clients

    def evaluated(self, rnd: int) -> bool:
        """Whether round ``rnd`` (1-based) ends with a central evaluation (fedcore's ``eval_every`` rule)."""
        every = self.eval_every or self.rounds
        return rnd % every == 0 or rnd == self.rounds

    def summary(self) -> str:
        width = f"{self.features}-200-{self.classes}" if self.model == "mlp" else f"{self.features}-{self.classes}"
        return (f"{self.clients} clients x {self.samples} examples, cohort {self.cohort}, {self.rounds} rounds, "
                f"E = {self.epochs}, B = {self.batch}, lr = {self.lr}, {self.model} ({width}), "
                f"{self.test} test examples, separation {self.separation}, seed {self.seed}")


def make_data(task: Task):
    """``(x_train, y_train, x_test, y_test)`` as numpy float32 / int64: Gaussian clusters, client ``i``
    owning training rows ``i*samples .. (i+1)*samples - 1``."""
    import numpy as np

    rng = np.random.default_rng(task.seed)
    means = rng.standard_normal((task.classes, task.features), dtype=np.float32)
    means *= task.separation / np.linalg.norm(means, axis=1, keepdims=True)

    def draw(n):
        y = rng.integers(0, task.classes, size=n, dtype=np.int64)
        x = rng.standard_normal((n, task.features), dtype=np.float32)
        x += means[y]
        return x, y

    x_train, y_train = draw(task.clients * task.samples)
    x_test, y_test = draw(task.test)
    return x_train, y_train, x_test, y_test


def set_threads(threads: int) -> int:
    import torch

    if threads > 0:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def process_cpu() -> float:
    """CPU-seconds of this process and its finished children so far."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


# --- fedcore ---------------------------------------------------------------------------------


def register_task(task: Task) -> None:
    """Register the task's data and shards with fedcore, the plugin way (call in a process of its own)."""
    import torch

    from fedcore.data import DATASETS, Dataset, DatasetFacts
    from fedcore.partition.base import Partition
    from fedcore.partition.registry import register_partitioner

    facts = DatasetFacts(task.clients * task.samples, (task.features,), task.classes, task.test)

    @DATASETS.register(DATASET, summary="benchmarks.pfl_compare's Gaussian clusters", facts=facts)
    def load(root=None, download=False):
        xtr, ytr, xte, yte = (torch.from_numpy(a) for a in make_data(task))
        return Dataset(DATASET, xtr, ytr, xte, yte, num_classes=task.classes, input_shape=(task.features,))

    @register_partitioner(PARTITIONER, summary="client i holds rows i*n .. (i+1)*n - 1 (benchmarks.pfl_compare)")
    def blocks(labels, num_clients, num_classes, rng):
        import numpy as np

        n = len(labels) // num_clients
        return Partition.from_indices([np.arange(i * n, (i + 1) * n) for i in range(num_clients)],
                                      np.asarray(labels), num_classes)


def fedcore_config(task: Task, device: str) -> dict:
    return {"dataset": DATASET, "model": task.model, "num_clients": task.clients, "rounds": task.rounds,
            "participation": task.participation, "sampling": "fixed", "partition": {"kind": PARTITIONER},
            "local": {"epochs": task.epochs, "batch_size": task.batch, "lr": task.lr},
            "privacy": {"mechanism": "none", "aggregator": "fedavg"},
            "eval_every": task.eval_every or task.rounds, "seed": task.seed, "device": device}


def run_fedcore(task: Task, device: str, threads: int, t_import: float) -> dict:
    """The task through :func:`fedcore.run` in this process; the measurement as a dict (``t_import``:
    when the imports began)."""
    import torch

    import fedcore
    from fedcore.events import RoundEvent, RunFinished, RunStarted

    set_threads(threads)
    t_setup = time.perf_counter()
    register_task(task)
    marks: dict = {}
    rounds: list = []

    def on_event(event):
        if isinstance(event, RunStarted):
            marks["start"], marks["cpu0"], marks["sizes"] = time.perf_counter(), time.process_time(), event.client_sizes
        elif isinstance(event, RoundEvent):
            rounds.append(event)
        elif isinstance(event, RunFinished):
            sync(device)
            marks["end"], marks["cpu1"] = time.perf_counter(), time.process_time()

    result = fedcore.run(fedcore_config(task, device), on_event=on_event)
    if result.status != "finished":
        raise RuntimeError(f"fedcore's run ended {result.status}")
    if set(marks["sizes"]) != {task.samples}:
        raise RuntimeError(f"fedcore's shards are not {task.samples} examples each")
    loop = marks["end"] - marks["start"]
    later = sum(r.seconds for r in rounds[1:])
    return {"system": "fedcore", "version": getattr(fedcore, "__version__", ""), "device": device,
            "threads": torch.get_num_threads(), "updates": sum(len(r.selected) for r in rounds),
            "rounds": len(rounds), "loop_s": loop, "loop_cpu_s": marks["cpu1"] - marks["cpu0"],
            "later_rounds_s": later, "later_updates": sum(len(r.selected) for r in rounds[1:]),
            "setup_s": marks["start"] - t_setup, "import_s": t_setup - t_import,
            "accuracy": result.final_accuracy,
            "accuracy_rounds": [a for r, a in zip(result.rounds, result.accuracy) if task.evaluated(r)]}


# --- pfl -------------------------------------------------------------------------------------


class CohortSampler:
    """pfl's user sampler (``callable() -> user id``) drawing each round's ``cohort`` users without
    replacement, as fedcore's ``sampling=fixed`` does: a fresh draw every ``cohort`` calls."""

    def __init__(self, clients: int, cohort: int, seed: int):
        import numpy as np

        self.clients, self.cohort = clients, cohort
        self.rng = np.random.default_rng(seed)
        self.pending: list = []

    def __call__(self) -> int:
        if not self.pending:
            self.pending = list(self.rng.choice(self.clients, size=self.cohort, replace=False)[::-1])
        return int(self.pending.pop())


def pfl_model_class():
    """fedcore's ``FlatMLP`` with the ``loss`` and ``metrics`` methods ``pfl.model.pytorch.PyTorchModel``
    asks of a module (mean cross-entropy; summed loss and correct predictions, weighted by examples)."""
    import torch
    from torch.nn import functional as F

    from fedcore.models.linear import FlatMLP
    from pfl.metrics import Weighted

    class PflFlatMLP(FlatMLP):
        def loss(self, x, y, eval=False):
            self.eval() if eval else self.train()
            return F.cross_entropy(self(x), y)

        @torch.no_grad()
        def metrics(self, x, y, eval=True):
            self.eval() if eval else self.train()
            logits = self(x)
            n = len(y)
            return {"loss": Weighted(F.cross_entropy(logits, y, reduction="sum").item(), n),
                    "accuracy": Weighted((logits.argmax(1) == y).sum().item(), n)}

    return PflFlatMLP


def run_pfl(task: Task, device: str, threads: int, t_import: float) -> dict:
    """The task through pfl's PyTorch simulation in this process; the measurement as a dict."""
    os.environ["PFL_PYTORCH_DEVICE"] = device
    import numpy as np
    import torch
    try:
        from pfl.aggregate.simulate import SimulatedBackend
        from pfl.aggregate.weighting import WeightByDatapoints
        from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
        from pfl.callback.base import TrainingProcessCallback
        from pfl.data.federated_dataset import FederatedDataset
        from pfl.data.pytorch import PyTorchTensorDataset
        from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
        from pfl.metrics import Metrics
        from pfl.model.pytorch import PyTorchModel
    except ImportError as exc:
        print(f"pfl cannot be imported ({exc}); install it with --target and pass --pfl-path (module doc)",
              file=sys.stderr)
        sys.exit(NO_PFL)

    set_threads(threads)
    t_setup = time.perf_counter()
    dev = torch.device(device)
    x_train, y_train, x_test, y_test = (torch.from_numpy(a).to(dev) for a in make_data(task))
    np.random.seed(task.seed)
    shuffle = torch.Generator().manual_seed(task.seed)
    made = [0]

    def make_user(user_id: int):
        made[0] += 1
        rows = user_id * task.samples + torch.randperm(task.samples, generator=shuffle)
        rows = rows.to(dev)
        return PyTorchTensorDataset((x_train[rows], y_train[rows]), user_id=user_id)

    federated = FederatedDataset(make_user, CohortSampler(task.clients, task.cohort, task.seed))
    central = PyTorchTensorDataset((x_test, y_test))
    torch.manual_seed(task.seed)   # as fedcore's prepare(), right before the model
    hidden = (200,) if task.model == "mlp" else ()
    module = pfl_model_class()((task.features,), task.classes, hidden=hidden)
    model = PyTorchModel(model=module, local_optimizer_create=torch.optim.SGD,
                         central_optimizer=torch.optim.SGD(module.parameters(), lr=1.0))
    backend = SimulatedBackend(training_data=federated, val_data=federated, postprocessors=[WeightByDatapoints()])
    eval_params = NNEvalHyperParams(local_batch_size=None)
    stamps: list = []
    accuracy: list = []

    class Evaluate(TrainingProcessCallback):
        """Central evaluation after the rounds fedcore evaluates (``Task.evaluated``), and a stamp a round."""

        def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
            rnd = central_iteration + 1
            metrics = Metrics()
            if task.evaluated(rnd):
                metrics = model.evaluate(central, lambda n: f"Central test | {n}", eval_params)
                accuracy.append(next(v.overall_value for k, v in metrics if str(k).endswith("accuracy")))
            sync(device)
            stamps.append(time.perf_counter())
            return False, metrics

    params = NNAlgorithmParams(central_num_iterations=task.rounds, evaluation_frequency=task.rounds,
                               train_cohort_size=task.cohort, val_cohort_size=None)
    train = NNTrainHyperParams(local_learning_rate=task.lr, local_num_epochs=task.epochs,
                               local_batch_size=task.batch)
    algorithm = FederatedAveraging()
    sync(device)
    start, cpu0 = time.perf_counter(), time.process_time()
    algorithm.run(algorithm_params=params, backend=backend, model=model, model_train_params=train,
                  model_eval_params=eval_params, callbacks=[Evaluate()], send_metrics_to_platform=False)
    sync(device)
    end, cpu1 = time.perf_counter(), time.process_time()
    if len(stamps) != task.rounds:
        raise RuntimeError(f"pfl ran {len(stamps)} of {task.rounds} rounds")
    per_round = made[0] / task.rounds
    from pfl.version import __version__ as pfl_version

    return {"system": "pfl", "version": pfl_version, "device": device,
            "threads": torch.get_num_threads(), "updates": made[0], "rounds": len(stamps),
            "loop_s": end - start, "loop_cpu_s": cpu1 - cpu0, "later_rounds_s": stamps[-1] - stamps[0],
            "later_updates": round(per_round * (task.rounds - 1)), "setup_s": start - t_setup,
            "import_s": t_setup - t_import, "accuracy": accuracy[-1], "accuracy_rounds": accuracy}


def child_main(system: str, task: Task, device: str, threads: int) -> None:
    t_import = time.perf_counter()   # torch and the system not imported yet
    m = (run_fedcore if system == "fedcore" else run_pfl)(task, device, threads, t_import)
    m["process_cpu_s"] = process_cpu()
    print(MARK + json.dumps(m), flush=True)


# --- the parent ------------------------------------------------------------------------------


def loadavg() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def child_env(system: str, threads: int, pfl_path: Optional[str]) -> dict:
    env = dict(os.environ)
    if threads > 0:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "FEDCORE_THREADS"):
            env[name] = str(threads)
    else:
        env["FEDCORE_THREADS"] = "0"   # torch's default, as pfl gets
    paths = [str(ROOT)] + ([pfl_path] if system == "pfl" and pfl_path else [])
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH", "")] if p])
    return env


def measure(system: str, task: Task, device: str, threads: int, pfl_path: Optional[str] = None,
            timeout: Optional[float] = None) -> dict:
    """Run one system on ``task`` in a fresh process; its measurement (or ``error``) with the load
    average before and after and the derived rates."""
    cmd = [sys.executable, "-m", "benchmarks.pfl_compare", "--child", system, "--task", json.dumps(dataclasses.asdict(task)),
           "--device", device, "--threads", str(threads)]
    before = loadavg()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=child_env(system, threads, pfl_path), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"system": system, "device": device, "error": f"over {timeout:g} s", "load_before": before,
                "load_after": loadavg()}
    after = loadavg()
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if done.returncode or not lines:
        why = ("pfl is not importable (install it with --target, pass --pfl-path)" if done.returncode == NO_PFL
               else f"exit {done.returncode}: " + " | ".join(done.stderr.strip().splitlines()[-3:]))
        return {"system": system, "device": device, "error": why, "load_before": before, "load_after": after}
    m = json.loads(lines[-1][len(MARK):])
    m["updates_per_s"] = m["updates"] / m["loop_s"]
    m["updates_per_cpu_s"] = m["updates"] / m["loop_cpu_s"] if m["loop_cpu_s"] > 0 else math.inf
    m["later_updates_per_s"] = m["later_updates"] / m["later_rounds_s"] if m["later_rounds_s"] > 0 else None
    m["load_before"], m["load_after"] = before, after
    return m


def compare(rows: list) -> dict:
    """Medians per system over the repeats, the ratios fedcore / pfl and whether the accuracies agree."""
    by: dict = {}
    for r in rows:
        if "error" not in r:
            by.setdefault(r["system"], []).append(r)
    med = {s: {k: statistics.median(r[k] for r in rs) for k in ("updates_per_s", "updates_per_cpu_s", "accuracy")}
           for s, rs in by.items()}
    out: dict = {"medians": med}
    if "fedcore" in med and "pfl" in med:
        f, p = med["fedcore"], med["pfl"]
        out["speedup_updates_per_s"] = f["updates_per_s"] / p["updates_per_s"]
        out["speedup_updates_per_cpu_s"] = f["updates_per_cpu_s"] / p["updates_per_cpu_s"]
        out["accuracy_gap_points"] = 100 * (f["accuracy"] - p["accuracy"])
        out["equal_accuracy"] = abs(out["accuracy_gap_points"]) <= 1.0
    return out


HEADER = ("| system | device | torch threads | updates | loop s | updates/s | rounds 2-R updates/s | loop CPU-s | "
          "updates/CPU-s | setup s (imports) | process CPU-s | test accuracy | load before -> after |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def table_row(m: dict) -> str:
    load = f"{m['load_before'][0]:.2f} -> {m['load_after'][0]:.2f}"
    if "error" in m:
        return f"| {m['system']} | {m['device']} | | | | not run: {m['error']} | | | | | | | {load} |"
    later = f"{m['later_updates_per_s']:.1f}" if m.get("later_updates_per_s") else "-"
    name = f"{m['system']} {m.get('version', '')}".strip()
    return (f"| {name} | {m['device']} | {m['threads']} | {m['updates']} | {m['loop_s']:.2f} | "
            f"**{m['updates_per_s']:.1f}** | {later} | {m['loop_cpu_s']:.2f} | {m['updates_per_cpu_s']:.1f} | "
            f"{m['setup_s']:.2f} ({m['import_s']:.2f}) | {m['process_cpu_s']:.2f} | {m['accuracy']:.4f} | {load} |")


def verdict(c: dict) -> str:
    if "equal_accuracy" not in c:
        return "Only one system ran: no comparison."
    holds = "holds" if c["equal_accuracy"] else "does **not** hold: the speeds are not comparable"
    return (f"fedcore / pfl: **{c['speedup_updates_per_s']:.2f}x** client updates per second, "
            f"{c['speedup_updates_per_cpu_s']:.2f}x per CPU-second; accuracy gap "
            f"{c['accuracy_gap_points']:+.2f} points (equal accuracy within 1 point {holds}).")


def markdown(task: Task, rows: list, c: dict, device: str) -> str:
    lines = [f"### fedcore against pfl-research 0.6.0 (`python -m benchmarks.pfl_compare`, {device})", "",
             f"Task: {task.summary()}; no privacy.", "", HEADER, *map(table_row, rows), "", verdict(c), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.pfl_compare", description=__doc__.split("\n\n")[0])
    d = Task()
    for name in ("clients", "samples", "cohort", "epochs", "batch", "rounds", "features", "classes", "test", "seed"):
        p.add_argument(f"--{name}", type=int, default=getattr(d, name))
    p.add_argument("--eval-every", type=int, default=0, help="also evaluate every K rounds (0: the last round only)")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--separation", type=float, default=d.separation)
    p.add_argument("--model", choices=("mlp", "logreg"), default=d.model)
    p.add_argument("--device", default="cpu", help="cpu or cuda (both systems)")
    p.add_argument("--threads", type=int, default=1, help="torch threads of each process (0: torch's default)")
    p.add_argument("--systems", default="fedcore,pfl")
    p.add_argument("--pfl-path", default=os.environ.get("PFL_PATH"),
                   help="a folder holding pfl 0.6.0 and its missing dependencies (pip install --target)")
    p.add_argument("--repeats", type=int, default=1, help="pairs, the first of a pair alternating")
    p.add_argument("--timeout", type=float, default=None, help="seconds per process")
    p.add_argument("--out", help="append the section to this Markdown file")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--task", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child_main(a.child, Task(**json.loads(a.task)), a.device, a.threads)
        return 0
    task = Task(**{f.name: getattr(a, f.name) for f in dataclasses.fields(Task)})
    systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    if not set(systems) <= {"fedcore", "pfl"}:
        p.error(f"--systems {a.systems}: fedcore and/or pfl")
    rows = []
    for rep in range(a.repeats):
        for system in (systems if rep % 2 == 0 else systems[::-1]):
            m = measure(system, task, a.device, a.threads, a.pfl_path, a.timeout)
            rows.append(m)
            print(json.dumps({"task": dataclasses.asdict(task), **m}), flush=True)
    c = compare(rows)
    print(json.dumps({"summary": c}), flush=True)
    text = markdown(task, rows, c, a.device)
    print(text)
    if a.out:
        with open(a.out, "a", encoding="utf-8") as f:
            f.write("\n" + text)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
