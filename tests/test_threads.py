"""The one thread policy (fedcore/threads.py, issue 55 §1): what it chooses, and that every entry
point trains on its choice (torch.get_num_threads() inside the entry point equals it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fedcore import threads
from fedcore.errors import FedcoreError
from fedcore.threads import decide

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_policy(monkeypatch):
    """This process as one that has not chosen yet; its threads and the module's state restored after."""
    before = torch.get_num_threads()
    for var in (threads.ENV, threads.MAX_ENV, "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(threads, "_applied", None)
    monkeypatch.setattr(threads, "_last", None)
    monkeypatch.setattr(threads, "_measured", {})
    monkeypatch.setattr(threads, "ceiling", lambda: 2)
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_a_model_without_convolution_trains_on_one_thread_whatever_the_load():
    for load in (0.0, 9.0):
        assert decide(has_convolution=False, device="cpu", ceiling=4, load=load).threads == 1


def test_a_convolution_with_fewer_than_two_cores_free_takes_one_thread_without_measuring():
    def never(n):
        raise AssertionError("measured on a busy host")

    for ceiling, load in ((2, 1.0), (2, 2.0), (4, 3.0), (8, 6.6)):
        choice = decide(has_convolution=True, device="cpu", ceiling=ceiling, load=load, measure=never)
        assert choice.threads == 1 and "busy host" in choice.reason


def test_a_convolution_is_measured_on_the_cores_left_free():
    asked = []
    choice = decide(has_convolution=True, device="cpu", ceiling=8, load=5.0,
                    measure=lambda n: asked.append(n) or (0.3, 0.1))
    assert asked == [3] and choice.threads == 3


def test_the_run_queue_sees_busy_loops_started_a_moment_ago():
    """Two busy loops are two threads runnable elsewhere at once (the 1-minute load average would
    take a minute to show them)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        import time

        time.sleep(0.3)
        assert threads.runnable_elsewhere() >= 2.0
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()


def test_a_convolution_keeps_every_core_only_when_measured_faster():
    faster = decide(has_convolution=True, device="cpu", ceiling=2, load=0.2, measure=lambda n: (0.129, 0.077))
    assert (faster.threads, faster.wall_1, faster.wall_n) == (2, 0.129, 0.077)
    barely = decide(has_convolution=True, device="cpu", ceiling=2, load=0.2, measure=lambda n: (0.100, 0.090))
    assert barely.threads == 1 and "only 1.11x" in barely.reason


def test_a_measurement_that_fails_leaves_the_run_on_one_thread():
    def broken(n):
        raise RuntimeError("shape mismatch")

    choice = decide(has_convolution=True, device="cpu", ceiling=2, load=0.0, measure=broken)
    assert choice.threads == 1 and "not measurable (RuntimeError)" in choice.reason


def test_a_gpu_run_and_a_single_core_keep_their_defaults():
    assert decide(has_convolution=True, device="cuda", ceiling=8, load=0.0).threads == 0
    assert decide(has_convolution=True, device="cpu", ceiling=1, load=0.0).threads == 1


def test_the_ceiling_is_the_environments_and_a_ray_tasks(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.delenv(threads.MAX_ENV, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.ceiling() == 3
    monkeypatch.setenv(threads.MAX_ENV, "2")
    assert threads.ceiling() == 2


def test_prepare_measures_a_convolution_on_an_idle_host_and_sets_its_choice(fresh_policy, monkeypatch):
    """The engine's prepare (where every entry point first trains) applies the policy to the model it
    built: a CNN with both cores free is measured (here: 2 threads 1.68x faster, the idle figure of issue 55)."""
    from fedcore.engine.setup import prepare
    from fedcore.layering import build_config

    asked = []
    monkeypatch.setattr(threads, "runnable_elsewhere", lambda: 0.0)
    monkeypatch.setattr(threads, "step_timer", lambda model, x, y: lambda n: asked.append(n) or (12.9, 7.7))
    cnn = build_config("demo", None, ["dataset=mnist", "model=cnn_uldp", "num_clients=4"])
    prepare(cnn)
    assert asked == [2] and torch.get_num_threads() == 2 == threads.last_choice().threads
    prepare(cnn)                          # a warm worker's next run: the measurement is kept, the load read
    assert asked == [2] and torch.get_num_threads() == 2
    monkeypatch.setattr(threads, "runnable_elsewhere", lambda: 1.0)   # one busy loop beside it
    prepare(cnn)
    assert asked == [2] and torch.get_num_threads() == 1 == threads.last_choice().threads


def test_the_measurement_leaves_the_runs_model_and_draws_alone(fresh_policy):
    from fedcore.models import build_model

    torch.manual_seed(0)
    model = build_model("cnn_uldp", (1, 28, 28), 10)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = torch.randn(8, 1, 28, 28), torch.zeros(8, dtype=torch.long)
    state = torch.random.get_rng_state()
    threads.step_timer(model, x, y)(2)
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.random.get_rng_state(), state)


def test_a_callers_own_count_and_a_pinned_one_stand(fresh_policy, monkeypatch):
    from fedcore.engine.setup import prepare
    from fedcore.layering import build_config

    cfg = build_config("demo", None, ["rounds=1"])
    prepare(cfg)
    assert torch.get_num_threads() == 1                   # logreg: one thread
    torch.set_num_threads(2)                               # a caller's own choice, after the policy's
    prepare(cfg)
    assert torch.get_num_threads() == 2 and "caller" in threads.last_choice().reason
    monkeypatch.setenv(threads.ENV, "1")
    prepare(cfg)
    assert torch.get_num_threads() == 1 and "pinned" in threads.last_choice().reason
    monkeypatch.setenv(threads.ENV, "many")
    with pytest.raises(FedcoreError, match="FEDCORE_THREADS=many"):
        prepare(cfg)


def test_the_cli_pins_only_when_given_a_count():
    from fedcore.cli import make_parser, pinned_threads

    parse = make_parser().parse_args
    assert pinned_threads(parse(["run", "--preset", "demo"])) is None          # auto: the policy's
    assert pinned_threads(parse(["--threads", "3", "run", "--preset", "demo"])) == 3
    with pytest.raises(FedcoreError, match="--threads many"):
        pinned_threads(parse(["--threads", "many", "run"]))


ENTRY_POINTS = textwrap.dedent('''
    import json, os, sys, tempfile, torch
    from fedcore import threads

    seen = {}

    def fresh():
        """As a process that has not chosen: torch's 2 threads, nothing applied."""
        torch.set_num_threads(2)
        threads._applied = None

    def record(name, during=None):
        seen[name] = {"threads": during if during is not None else torch.get_num_threads(),
                      "choice": threads.last_choice().threads}

    store_dir = tempfile.mkdtemp()

    fresh()                                                    # the CLI
    sys.argv = ["fedcore", "run", "--preset", "demo", "--set", "rounds=1"]
    from fedcore.cli import main
    assert main() == 0
    record("cli")

    fresh()                                                    # the Python API, read while it trains
    import fedcore
    from fedcore.events import RoundEvent
    during = []
    fedcore.run(preset="demo", rounds=1, on_event=lambda e: isinstance(e, RoundEvent) and
                during.append(torch.get_num_threads()))
    record("fedcore.run", during[0])

    fresh()                                                    # a benchmark's in-process attack
    from benchmarks.attacks import one_client
    one_client("logreg", 1)
    record("benchmarks.attacks.one_client")

    from fedcore.runner.store import JobStore
    store = JobStore(store_dir)

    fresh()                                                    # the dashboard's run worker (no host thread limit)
    from fedcore.layering import build_config
    from fedcore.runner.worker import job_main
    cfg = build_config("demo", None, ["rounds=1"])
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash(), grace_s=None)["id"]
    job_main(store_dir, run_id)
    record("page worker")

    fresh()                                                    # the Frontier page's sweep worker
    from fedcore.sweep.job import sweep_fields, sweep_id, sweep_main
    from fedcore.sweep.spec import SweepSpec
    spec = SweepSpec(preset="demo", methods=("dp_fedavg",), epsilons=(10.0,), seeds=1, sets=("rounds=1",),
                     reference=False)
    fields = sweep_fields(spec)
    store.create_job(sweep_id(fields["key"]), "sweep", **fields)
    sweep_main(store_dir, sweep_id(fields["key"]))
    record("sweep worker")

    fresh()                                                    # a reproduction's run
    from fedcore.reproduce.run import train
    train(build_config("demo", None, ["rounds=1"]))
    record("reproduction")

    fresh()                                                    # a Ray task's body (2 CPUs asked for)
    from fedcore.distributed.tasks import point_payload, train_sweep_batch
    from fedcore.sweep.job import checked_points
    train_sweep_batch([point_payload(p) for p in checked_points(spec)], True, 2)
    record("ray task")
    print("SEEN " + json.dumps(seen))
''')


def test_every_entry_point_trains_on_the_policys_choice():
    """CLI, Python API, a benchmark's attack, the page's run worker, the Frontier's sweep worker, a
    reproduction and a Ray task, each started from torch's default of 2 threads: each trains a
    model without convolution on the policy's one thread (the Frontier worker kept 2: 1.21x the CLI's
    CPU-s, issue 55)."""
    env = {k: v for k, v in os.environ.items() if k not in (threads.ENV, threads.MAX_ENV, "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", ENTRY_POINTS], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.split("SEEN ", 1)[1])
    assert list(seen) == ["cli", "fedcore.run", "benchmarks.attacks.one_client", "page worker", "sweep worker",
                          "reproduction", "ray task"]
    for name, got in seen.items():
        assert got == {"threads": 1, "choice": 1}, name


def test_the_frontier_worker_takes_the_hosts_worker_threads_as_its_ceiling(tmp_path, monkeypatch):
    """The page queues a sweep with the host's ``worker_threads`` in its record, and the worker
    applies it as a run worker does (``lower_priority``): the policy then chooses within it."""
    from types import SimpleNamespace

    from fedcore.runner import worker
    from fedcore.runner.limits import HostLimits
    from fedcore.runner.store import JobStore
    from fedcore.sweep import job
    from fedcore.sweep.spec import SweepSpec

    class Manager:
        limits = HostLimits(worker_threads=1)

        def job_record(self, job_id):
            return SimpleNamespace(status="none")

        def submit(self, queued):
            self.queued = queued

    spec = SweepSpec(preset="demo", methods=("dp_fedavg",), epsilons=(10.0,), seeds=1, sets=("rounds=1",),
                     reference=False)
    manager = Manager()
    job.start_sweep(manager, spec)
    assert manager.queued.fields["threads"] == 1
    asked = []
    monkeypatch.setattr(worker, "lower_priority", lambda nice=0, threads=0: asked.append((nice, threads)))
    monkeypatch.setattr(job, "checked_points", lambda spec: [])
    store = JobStore(tmp_path)
    store.create_job(manager.queued.id, "sweep", **manager.queued.fields)
    job.sweep_main(str(tmp_path), manager.queued.id)
    assert asked == [(job.NICE, 1)]


def test_a_reproduction_worker_takes_the_hosts_worker_threads_as_its_ceiling(tmp_path, monkeypatch):
    """A queued reproduction's record holds the host's ``worker_threads`` (as a sweep's does), and its
    worker applies it through ``lower_priority`` before anything trains."""
    from fedcore.reproduce import job
    from fedcore.runner import worker
    from fedcore.runner.store import JobStore

    p = job.plan("kdp_fl")
    fields = job.reproduction_fields(p, "k", threads=1)
    assert fields["threads"] == 1 and job.reproduction_fields(p, "k")["threads"] == 0
    asked = []
    monkeypatch.setattr(worker, "lower_priority", lambda nice=0, threads=0: asked.append((nice, threads)))
    monkeypatch.setattr("fedcore.reproduce.run.reproduce", lambda *a, **k: {"tables": []})
    store = JobStore(tmp_path)
    store.create_job("r1", job.JOB_KIND, **fields)
    job.reproduction_main(str(tmp_path), "r1")
    from fedcore.sweep.job import NICE

    assert asked == [(NICE, 1)]


def test_numpys_blas_trains_on_the_chosen_count_too(fresh_policy):
    """The choice reaches numpy's BLAS as well as torch: the attack view's products run there, and idle
    OpenBLAS threads spin after each call (a page's slow motion woke them every round: 1.60 against 0.47
    CPU-s on pldp_mnist_noniid_lh_a, docs/benchmarks.md)."""
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    np.ones((2, 2)) @ np.ones((2, 2))                           # numpy's BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):          # restored after the test
        threads.set_threads(1)
        blas = [d for d in threadpool_info() if d["user_api"] == "blas"]
        assert blas and all(d["num_threads"] == 1 for d in blas)
