"""Sweeps and reproductions on Ray (fedcore.distributed): a local Ray instance with 2 CPUs.

Same accuracies as the local sweep for the same seeds; a worker killed mid-task is retried
and nothing is lost; a task that always dies is reported naming its runs while the other
points are kept; a rerun skips the finished points; cancel stops the cluster's tasks.
"""
from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

from fedcore.cli import main  # noqa: E402
from fedcore.distributed import RaySweep, SweepHandle, configured_address  # noqa: E402
from fedcore.distributed.cluster import check_address, connect  # noqa: E402
from fedcore.distributed.tasks import sweep_batches, train_sweep_batch  # noqa: E402
from fedcore.errors import FedcoreError  # noqa: E402
from fedcore.sweep import SweepSpec, read_frontier  # noqa: E402
from fedcore.sweep.runner import run_sweep  # noqa: E402

TINY = ("rounds=2", "num_clients=4")
SWEEP = ["sweep", "--preset", "demo", "--methods", "pldp_b,ldp_fl", "--epsilons", "1,10", "--seeds", "2",
         "--set", "rounds=2", "--set", "num_clients=4"]


@pytest.fixture(scope="module")
def local_ray():
    connect("local", num_cpus=2)
    yield ray
    ray.shutdown()


def _cli(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _small_points(**kw):
    return SweepSpec(preset="demo", methods="ldp_fl", epsilons="1,10", seeds=1, sets=TINY, **kw).points()


@pytest.fixture(scope="module")
def ray_frontier(local_ray, tmp_path_factory):
    out = tmp_path_factory.mktemp("ray") / "frontier.json"
    code, stdout, stderr = _cli(SWEEP + ["--out", str(out), "--ray"])
    return code, stdout, stderr, out


def test_sweep_on_ray_gives_the_local_accuracies(ray_frontier):
    code, stdout, _, out = ray_frontier
    assert code == 0
    rows = read_frontier(out)
    # 2 methods x (2 eps + no privacy + clip only) x 2 seeds, in the local sweep's order
    assert len(rows) == 16
    points = SweepSpec(preset="demo", methods="pldp_b,ldp_fl", epsilons="1,10", seeds=2, sets=TINY,
                       match="headline").points()  # the CLI's default, as the page's
    local = list(run_sweep(points, batched=True))
    assert [r["config_hash"] for r in rows] == [r["config_hash"] for r in local]
    for mine, theirs in zip(rows, local):   # every field but the time and how it was trained
        drop = ("seconds", "batched")
        assert {k: v for k, v in mine.items() if k not in drop} == {k: v for k, v in theirs.items() if k not in drop}
    # one task per lockstep batch; one line per finished point
    assert f"16 point(s) in {len(sweep_batches(points))} task(s) on 2 CPU(s)" in stdout
    lines = [ln for ln in stdout.splitlines() if ln.startswith("[")]
    assert len(lines) == 16 and lines[-1].startswith("[16/16]")


def test_ray_address_in_the_environment_joins_that_cluster(tmp_path):
    """Ray Jobs, Slurm and Kubernetes recipes set RAY_ADDRESS: ``--ray`` joins that head (it used to
    fail with "object_store_memory must not be provided"). The head runs in its own session and temp
    folder and only it is ended (``ray stop`` would end this module's Ray too, and the test process
    with it)."""
    import signal
    import subprocess
    import sys

    from dashboard_server import wait_until   # scripts/ (tests/conftest.py puts it on the path)

    import shutil
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    port = 6391
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")     # short: Ray's socket paths must fit 107 bytes
    head = subprocess.Popen(["ray", "start", "--head", "--block", "--num-cpus", "1", "--port", str(port),
                             "--include-dashboard", "false", "--temp-dir", temp],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_until(lambda: _answers(port), 120, "the Ray head did not open its port")
        out = tmp_path / "f.json"
        done = subprocess.run([sys.executable, "-m", "fedcore", *SWEEP[:7], "--seeds", "1", "--set", "rounds=2",
                               "--set", "num_clients=4", "--out", str(out), "--ray"],
                              capture_output=True, text=True, env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}"})
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(read_frontier(out)) == 8
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)


def _answers(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_rerun_skips_finished_points(ray_frontier):
    _, _, _, out = ray_frontier
    before = out.read_text()
    code, stdout, _ = _cli(SWEEP + ["--out", str(out), "--ray"])
    assert code == 0
    assert "0 point(s) in 0 task(s)" in stdout and "skipped 16 point(s)" in stdout
    assert json.loads(out.read_text()) == json.loads(before)


def test_killed_worker_is_retried_and_nothing_is_lost(local_ray, tmp_path):
    from fedcore.runner import JobStore
    from fedcore.runner.record import CacheKey

    marks = str(tmp_path / "marks")
    os.mkdir(marks)

    def dies_on_first_attempt(items, batched, threads):
        mark = os.path.join(marks, items[0]["config"]["privacy"]["epsilon"].__repr__())
        if not os.path.exists(mark):
            open(mark, "w").close()
            os._exit(1)  # the worker process dies in the middle of its task
        return train_sweep_batch(items, batched, threads)

    points = _small_points(reference=False)
    store = JobStore(tmp_path / "store")
    sweep = RaySweep(points, out=tmp_path / "f.json", batched=False, store=store, task=dies_on_first_attempt)
    events = list(sweep.run())
    assert len(os.listdir(marks)) == 2  # both tasks died once
    assert [k for k, _ in events].count("row") == 2 and sweep.failed == []
    assert sweep.state == "finished"
    rows = read_frontier(tmp_path / "f.json")
    local = list(run_sweep(points, batched=False))
    assert [(r["epsilon"], r["accuracy"]) for r in rows] == [(r["epsilon"], r["accuracy"]) for r in local]
    # points trained alone come back with their event stream: finished runs in the store
    for point in points:
        run_id = store.find_finished(CacheKey(point.config.config_hash()))
        assert run_id is not None
        kinds = [e["type"] for e in store.read_events(run_id, 0, touch=False)]
        assert kinds[0] == "start" and kinds.count("round") == 2 and kinds[-1] == "end"


def test_task_that_always_dies_is_reported_naming_its_runs(local_ray, tmp_path):
    attempts = tmp_path / "attempts"
    attempts.mkdir()

    def eps10_always_dies(items, batched, threads):
        if items[0]["epsilon"] == 10.0:
            (attempts / str(len(list(attempts.iterdir())))).touch()
            os._exit(3)
        return train_sweep_batch(items, batched, threads)

    out = tmp_path / "f.json"
    points = _small_points(reference=False)
    sweep = RaySweep(points, out=out, batched=False, task=eps10_always_dies)
    events = list(sweep.run())
    assert len(list(attempts.iterdir())) == 2  # first try + one retry
    (failed,) = sweep.failed
    assert failed["runs"] == ["ldp_fl ε=10 seed 0"]
    assert "died" in failed["error"].lower() or "exit" in failed["error"].lower()
    assert ("failed", failed) in events and sweep.state == "failed"
    kept = read_frontier(out)
    assert [(r["method"], r["epsilon"]) for r in kept] == [("ldp_fl", 1.0)]
    # a rerun trains only the missing point
    again = RaySweep(points, out=out, batched=False)
    events = list(again.run())
    assert again.skipped == 1 and [k for k, _ in events].count("row") == 1
    assert [r["epsilon"] for r in read_frontier(out)] == [1.0, 10.0]


def test_cli_reports_failed_runs_and_exits_1(local_ray, tmp_path, monkeypatch):
    import fedcore.distributed.sweep as ray_sweep

    def refuses(items, batched, threads):
        raise RuntimeError("no GPU memory left")

    monkeypatch.setattr(ray_sweep, "train_sweep_batch", refuses)
    code, stdout, stderr = _cli(["sweep", "--preset", "demo", "--methods", "ldp_fl", "--epsilons", "1",
                                 "--seeds", "1", "--no-reference", "--set", "rounds=1", "--set", "num_clients=4",
                                 "--out", str(tmp_path / "f.json"), "--ray"])
    assert code == 1
    assert "FAILED after a retry: 1 run(s): ldp_fl ε=1 seed 0 -- RuntimeError: no GPU memory left" in stderr
    assert "Traceback" not in stderr and "wrote 0 rows" in stdout


def test_cancel_stops_the_cluster_tasks(local_ray, tmp_path):
    import time

    spec = SweepSpec(preset="demo", methods="ldp_fl", epsilons="1", seeds=1, sets=TINY, reference=False)
    handle = SweepHandle(RaySweep(spec.points(), address="local", out=tmp_path / "f.json", task=_sleeps))
    deadline = time.time() + 60
    while handle.progress()["state"] != "running" and time.time() < deadline:
        time.sleep(0.1)
    progress = handle.progress()
    assert progress["state"] == "running" and progress["total"] == 1 and progress["cluster"]["CPU"] == 2
    handle.cancel()
    assert handle.wait(30)
    assert handle.progress()["state"] == "cancelled" and handle.progress()["done"] == 0


def _sleeps(items, batched, threads):
    import time

    time.sleep(120)
    return []


def test_reproduce_on_ray_writes_the_same_record(local_ray, tmp_path):
    args = ["reproduce", "pldp", "--quick", "--tables", "digits_iid", "--seeds", "1", "--set", "rounds=2"]
    code, _, _ = _cli(args + ["--out", str(tmp_path / "local")])
    assert code == 0
    code, stdout, _ = _cli(args + ["--out", str(tmp_path / "ray"), "--ray"])
    assert code == 0 and "ray: " in stdout
    local = json.loads((tmp_path / "local" / "pldp.json").read_text())
    remote = json.loads((tmp_path / "ray" / "pldp.json").read_text())
    finals = lambda rec: {r["key"]: r.get("finals") for r in rec["tables"][0]["rows"]}  # noqa: E731
    assert finals(remote) == finals(local) and any(finals(local).values())
    assert (tmp_path / "ray" / "pldp.md").exists()
    # rerun: every run is already in <out>/pldp.runs.json
    code, stdout, _ = _cli(args + ["--out", str(tmp_path / "ray"), "--ray"])
    assert code == 0 and "ray: 0 run(s)" in stdout


def test_batches_follow_the_lockstep_key():
    points = SweepSpec(preset="demo", methods="pldp_b,ldp_fl", epsilons="1,10", seeds=2, sets=TINY,
                       match="headline").points()  # the CLI's default, as the page's
    batches = sweep_batches(points, max_batch=3)
    assert sum(len(b) for b in batches) == 16 and max(len(b) for b in batches) == 3
    assert sweep_batches(points, batched=False) == [[p] for p in points]


@pytest.mark.parametrize("address", ["local", "auto", "10.0.0.5:6379", "ray://head:10001"])
def test_addresses_accepted(address):
    assert check_address(address) == address


def test_bad_address_is_one_line(tmp_path):
    with pytest.raises(FedcoreError, match="--ray 'not an address'"):
        check_address("not an address")
    code, _, stderr = _cli(["sweep", "--methods", "ldp_fl", "--epsilons", "1", "--seeds", "1", "--ray", "nowhere",
                            "--out", str(tmp_path / "f.json")])
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "--ray" in stderr


def test_host_setting_names_the_cluster(monkeypatch):
    monkeypatch.delenv("FEDCORE_RAY_ADDRESS", raising=False)
    assert configured_address() == "local"
    monkeypatch.setenv("FEDCORE_RAY_ADDRESS", "ray://head:10001")
    assert configured_address() == "ray://head:10001"


def test_without_ray_the_flag_says_how_to_install_it(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, _, stderr = _cli(["sweep", "--methods", "ldp_fl", "--epsilons", "1", "--seeds", "1", "--no-reference",
                            "--out", str(tmp_path / "f.json"), "--ray"])
    assert code == 2 and "pip install -r requirements-ray.txt" in stderr
    assert len(stderr.strip().splitlines()) == 1 and not (tmp_path / "f.json").exists()


def test_unreachable_cluster_is_refused_at_once():
    from fedcore.distributed.cluster import reachable

    with pytest.raises(FedcoreError, match=r"--ray 127.0.0.1:1: nothing answers there"):
        reachable("127.0.0.1:1", timeout=2)
    with pytest.raises(FedcoreError, match=r"--ray ray://127.0.0.1:1: nothing answers"):
        reachable("ray://127.0.0.1:1", timeout=2)


def test_dashboard_jobs_on_the_cluster(local_ray, tmp_path):
    """A Ray sweep is a kind of job of the one manager: owned, queued, written to the same files."""
    import time

    from fedcore.distributed.jobs import ray_installed
    from fedcore.runner import ACTIVE, Jobs
    from fedcore.sweep.job import start_sweep, sweep_rows, sweep_status

    assert ray_installed()
    jobs = Jobs(tmp_path, warm=False)
    spec = SweepSpec(preset="demo", methods="ldp_fl", epsilons="1", seeds=1, sets=TINY)
    try:
        key = start_sweep(jobs, spec, owner="session:a", ray="local")
        assert start_sweep(jobs, spec, ray="local") == key  # a running sweep is not started twice
        assert jobs.job(f"sweep:{key}").kind == "sweep" and jobs.job(f"sweep:{key}").get("ray") == "local"
        deadline = time.time() + 120
        while sweep_status(jobs, key).status in ACTIVE and time.time() < deadline:
            time.sleep(0.2)
        status = sweep_status(jobs, key)
        assert status.status == "finished" and status.done == status.total == 3, status
        assert status.get("cluster")["CPU"] == 2 and status.owner == "session:a"
        assert [r["epsilon"] for r in sweep_rows(jobs, key)] == [None, None, 1.0]  # with the references
        assert read_frontier(tmp_path / "sweeps" / f"{key}.json") == sweep_rows(jobs, key)
        # started again (a fresh server, or after a stop): the points in its file are skipped
        jobs.store.delete(f"sweep:{key}")
        start_sweep(jobs, spec, ray="local")
        while sweep_status(jobs, key).status in ACTIVE and time.time() < deadline:
            time.sleep(0.2)
        assert sweep_status(jobs, key).get("skipped") == 3 and len(sweep_rows(jobs, key)) == 3
    finally:
        jobs.close()


# --- the resume rule of the local sweep (fedcore.sweep.rows.rows_to_resume), on Ray -------------
def test_an_empty_out_file_starts_a_ray_sweep_afresh(local_ray, tmp_path):
    out = tmp_path / "f.json"
    out.write_text("")
    sweep = RaySweep(_small_points(reference=False)[:1], out=out, batched=False)
    assert [kind for kind, _ in sweep.run()] == ["started", "row"] and sweep.skipped == 0
    assert len(read_frontier(out)) == 1


def test_an_out_file_that_is_not_a_frontier_is_refused_on_ray_too(tmp_path):
    out = tmp_path / "notes.json"
    out.write_text("my notes\n")
    with pytest.raises(FedcoreError, match="not a frontier file"):
        next(RaySweep(_small_points(reference=False), out=out).run())
    code, stdout, stderr = _cli(SWEEP + ["--out", str(out), "--ray"])
    assert code == 2 and "not a frontier file" in stderr and len(stderr.strip().splitlines()) == 1
    assert "ray:" not in stdout and out.read_text() == "my notes\n"
