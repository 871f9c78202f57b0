"""A shared host: limits refuse runs naming the limit, the queue reports its position and
estimate, workers are niced, the store heals itself and stays private (fedcore/runner)."""
from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from fedcore.errors import FedcoreError
from fedcore.events import replay
from fedcore.resolve import preset_config
from fedcore.runner import Jobs, JobStore
from fedcore.runner import worker as worker_mod
from fedcore.runner.limits import (SHARED_DEFAULTS, HostLimits, HostUnavailable, LimitError, check_host,
                                   check_limits, dashboard_limits)
from fedcore.runner.queueing import estimate_starts, seconds_per_round
from fedcore.tables import export_json

DEMO = preset_config("demo")


# --- limits -------------------------------------------------------------------------------
@pytest.mark.parametrize("change, limit", [
    ({"rounds": 100_000}, "max_rounds"),
    ({"num_clients": 50}, "max_clients"),
    ({"local.epochs": 5_000}, "max_local_epochs"),
    ({"local.steps": 8_000, "local.batch_size": 4}, "max_local_steps"),
    ({"dataset": "mnist", "model": "mlp"}, "max_train_samples"),
    ({"model": "resnet18"}, "max_model_params"),
])
def test_each_limit_refuses_a_run_naming_itself(change, limit):
    limits = HostLimits(max_rounds=500, max_clients=20, max_local_epochs=50, max_local_steps=5000,
                        max_train_samples=10_000, max_model_params=1_000_000)
    cfg = DEMO.with_overrides(change)
    with pytest.raises(LimitError) as err:
        check_limits(cfg, limits)
    assert err.value.limit == limit
    assert limit in str(err.value) and f"FEDCORE_{limit.upper()}" in str(err.value)
    check_limits(cfg, HostLimits())  # no limits: the same config passes


def test_offered_datasets_and_models_are_a_host_setting():
    limits = HostLimits(datasets=("digits",), models=("logreg", "mlp"))
    check_limits(DEMO, limits)
    with pytest.raises(LimitError, match="not offered on this server; offered: digits"):
        check_limits(DEMO.with_overrides({"dataset": "mnist"}), limits)
    with pytest.raises(LimitError, match="model: 'cnn_uldp' is not offered"):
        check_limits(DEMO.with_overrides({"model": "cnn_uldp", "dataset": "digits"}), limits)


def test_limits_come_from_a_toml_file_and_environment_variables(tmp_path):
    path = tmp_path / "host.toml"
    path.write_text('[limits]\nmax_rounds = 300\ndatasets = ["digits", "mnist"]\nvisibility = "public"\n')
    limits = HostLimits.from_env({"FEDCORE_LIMITS": str(path), "FEDCORE_MAX_CLIENTS": "12",
                                  "FEDCORE_ADMINS": "Teacher@school.org"}, defaults=SHARED_DEFAULTS)
    assert limits.max_rounds == 300 and limits.max_clients == 12
    assert limits.datasets == ("digits", "mnist") and limits.visibility == "public"
    assert limits.admins == ("Teacher@school.org",)
    assert limits.max_run_seconds == SHARED_DEFAULTS.max_run_seconds  # untouched defaults stay
    assert HostLimits.from_env({"FEDCORE_LIMITS": "off"}, defaults=SHARED_DEFAULTS) == HostLimits()
    assert HostLimits.from_env({"FEDCORE_MAX_ROUNDS": "0"}, defaults=SHARED_DEFAULTS).max_rounds is None


@pytest.mark.parametrize("env, message", [
    ({"FEDCORE_MAX_ROUNDS": "many"}, "host setting max_rounds: got 'many'; must be an integer >= 0"),
    ({"FEDCORE_MAX_ROUNDS": "-3"}, "max_rounds: got -3; must be an integer >= 0"),
    ({"FEDCORE_MAX_ROUNDS": "2.5"}, "max_rounds: got 2.5; must be an integer"),
    ({"FEDCORE_MAX_RUN_SECONDS": "inf"}, "max_run_seconds: got inf; must be a number >= 0"),
    ({"FEDCORE_VISIBILITY": "everyone"}, "visibility"),
    ({"FEDCORE_LIMITS": "/nonexistent/host.toml"}, "cannot read the limits file"),
])
def test_a_bad_host_setting_is_one_clear_line(env, message):
    with pytest.raises(FedcoreError, match=message):
        HostLimits.from_env(env)


def test_each_host_setting_is_declared_once_and_the_readme_gives_its_default():
    """HostLimits' fields carry the constraint, the dashboard default and what they bound; the
    README's Hosting table shows the same default (words where a number would mislead)."""
    import dataclasses
    import re

    from fedcore.constraints import constraint_of, help_of
    from fedcore.runner.limits import parse_setting

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for f in dataclasses.fields(HostLimits):
        assert constraint_of(HostLimits, f.name) is not None and help_of(HostLimits, f.name), f.name
        (default,) = re.findall(rf"^\| `FEDCORE_{f.name.upper()}` \| ([^|]+) \|", readme, re.M)
        if default.strip() not in ("CPU count", "all", "(none)"):
            assert parse_setting(f.name, default.strip()) == getattr(SHARED_DEFAULTS, f.name), f.name


def test_an_unknown_setting_in_the_file_is_named(tmp_path):
    (tmp_path / "h.toml").write_text("max_round = 3\n")
    with pytest.raises(FedcoreError, match="unknown host setting 'max_round'"):
        HostLimits.from_env({"FEDCORE_LIMITS": str(tmp_path / "h.toml")})


def test_the_dashboard_has_limits_by_default_and_the_cli_none(monkeypatch):
    for name in list(os.environ):
        if name.startswith("FEDCORE_") and name not in ("FEDCORE_STORE", "FEDCORE_DATA", "FEDCORE_OFFLINE"):
            monkeypatch.delenv(name)
    assert dashboard_limits() == SHARED_DEFAULTS
    with pytest.raises(LimitError, match="max_rounds"):
        check_limits(DEMO.replace(rounds=100_000), dashboard_limits())


def test_cuda_on_a_cpu_host_and_a_dataset_missing_offline_are_refused(monkeypatch, tmp_path):
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(HostUnavailable, match="no CUDA GPU"):
            check_host(DEMO.replace(device="cuda"))
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path))
    with pytest.raises(HostUnavailable, match="'cifar10' is not on this server"):
        check_host(DEMO.with_overrides({"dataset": "cifar10", "model": "cnn_uldp"}))
    check_host(DEMO)  # digits is bundled
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"x")
    check_host(DEMO.with_overrides({"dataset": "cifar10", "model": "cnn_uldp"}))


# --- the manager applies them -------------------------------------------------------------
@pytest.fixture()
def limited(tmp_path):
    m = Jobs(tmp_path / "store", warm=False, max_running=1,
                   limits=HostLimits(max_rounds=50_000, max_active=3, max_active_per_owner=2))
    yield m
    m.close()


def test_the_manager_refuses_beyond_the_owner_and_server_caps(limited):
    a1 = limited.start(DEMO.replace(rounds=40_000, seed=1), owner="session:a")
    a2 = limited.start(DEMO.replace(rounds=40_000, seed=2), owner="session:a")
    with pytest.raises(LimitError, match="max_active_per_owner"):
        limited.start(DEMO.replace(rounds=40_000, seed=3), owner="session:a")
    limited.start(DEMO.replace(rounds=40_000, seed=4), owner="session:b")
    with pytest.raises(LimitError, match="max_active\\b"):
        limited.start(DEMO.replace(rounds=40_000, seed=5), owner="session:c")
    assert limited.capacity_left("session:c") == 0
    info = limited.queue_info(a2)
    assert info["position"] == 1 and info["waiting"] == 2 and info["slots"] == 1
    limited.stop(a1)
    limited.stop(a2)


def test_an_over_limit_config_is_refused_before_it_is_stored(limited):
    with pytest.raises(LimitError, match="max_rounds"):
        limited.start(DEMO.replace(rounds=60_000), owner="session:a")
    assert limited.store.list_job_dicts("run") == []


def test_another_owners_finished_run_is_replayed_as_a_copy_the_new_owner_controls(tmp_path):
    m = Jobs(tmp_path, warm=False)
    try:
        cfg = DEMO.replace(rounds=2)
        first = m.start(cfg, owner="session:a")
        assert m.wait(first, timeout=120)["status"] == "finished"
        copy = m.start(cfg, owner="session:b")
        assert copy != first
        record = m.store.get_job_dict(copy)
        assert record["owner"] == "session:b" and record["status"] == "finished"
        assert record["replayed_from"] == first
        assert m.store.read_events(copy, touch=False) == m.store.read_events(first, touch=False)
        assert m.start(cfg, owner="session:b") == copy  # and then it is b's own cache hit
    finally:
        m.close()


# --- the queue ----------------------------------------------------------------------------
def test_queue_estimates_follow_slots_and_pace():
    running = [{"rounds": 20, "rounds_done": 10, "elapsed_s": 10.0},
               {"rounds": 10, "rounds_done": 8, "elapsed_s": 8.0}]
    queued = [{"id": q, "rounds": 10, "round_s": 1.0} for q in "abc"]
    # slots free after 2 s and 10 s; a starts at 2, b at 10, c when a ends (2 + 10)
    assert estimate_starts(running, queued, slots=2) == {"a": 2.0, "b": 10.0, "c": 12.0}
    history = [{"status": "finished", "rounds_done": 10, "elapsed": 5.0, "config": {"dataset": "d", "model": "m"}},
               {"status": "finished", "rounds_done": 10, "elapsed": 50.0, "config": {"dataset": "x", "model": "m"}}]
    assert seconds_per_round(history, "d", "m") == 0.5
    assert seconds_per_round(history, "q", "m") == 2.75  # no match: median of all
    assert seconds_per_round([], "d", "m") is None


# --- workers ------------------------------------------------------------------------------
def test_a_run_past_its_wall_clock_limit_is_stopped_naming_the_limit(tmp_path):
    store = JobStore(tmp_path)
    cfg = DEMO.replace(rounds=100_000)
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash(), max_seconds=1.0, grace_s=None)["id"]
    t0 = time.monotonic()
    assert worker_mod.run_job(str(tmp_path), run_id) == "stopped"  # nobody watches: grace None keeps it
    assert time.monotonic() - t0 < 30
    assert "max_run_seconds" in store.get_job_dict(run_id)["reason"]


def test_a_closed_owner_page_stops_its_run_after_the_grace_period(tmp_path):
    store = JobStore(tmp_path)
    cfg = DEMO.replace(rounds=100_000)
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash(), grace_s=0.6)["id"]
    store.cache.set(f"beat:{run_id}", time.time() - 3600)  # queued for an hour: does not count
    assert worker_mod.run_job(str(tmp_path), run_id) == "stopped"
    record = store.get_job_dict(run_id)
    assert record["rounds_done"] >= 1 and "owner's page was closed" in record["reason"]


def test_queued_runs_of_an_owner_who_left_never_start(tmp_path):
    m = Jobs(tmp_path, warm=False, max_running=1, limits=HostLimits(owner_grace_s=0.5))
    try:
        busy = m.start(DEMO.replace(rounds=40_000, seed=1), owner="session:a", background=True)
        waiting = m.start(DEMO.replace(rounds=5, seed=2), owner="session:b")
        assert m.store.get_job_dict(busy)["grace_s"] is None and m.store.get_job_dict(waiting)["grace_s"] == 0.5
        time.sleep(1.0)  # b's page is gone: nobody touches its heartbeat
        m.stop(busy)
        deadline = time.monotonic() + 30
        while m.store.get_job_dict(waiting)["status"] == "queued" and time.monotonic() < deadline:
            time.sleep(0.1)
        record = m.store.get_job_dict(waiting)
        assert record["status"] == "stopped" and "owner left before it started" in record["reason"]
    finally:
        m.close()


def test_workers_run_niced_with_one_torch_thread(tmp_path):
    m = Jobs(tmp_path, warm=False, limits=HostLimits(worker_nice=7, worker_threads=1))
    try:
        run_id = m.start(DEMO.replace(rounds=100_000), owner="session:a", background=True)
        deadline = time.monotonic() + 90
        while m.store.get_job_dict(run_id)["rounds_done"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        pid = m.process(run_id).pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(fields[16]) == min(os.nice(0) + 7, 19)  # field 19 of /proc/<pid>/stat: nice (at most 19)
        assert int(fields[17]) <= 3  # threads: main, watchdog, at most one more (no torch pool)
        m.stop(run_id)
    finally:
        m.close()


def test_a_failed_run_keeps_its_traceback_out_of_the_record_and_the_download(tmp_path, capfd):
    store = JobStore(tmp_path)
    cfg = DEMO.replace(num_clients=5000)
    run_id = store.create_run(cfg.to_dict(), cfg.config_hash(), owner="session:a")["id"]
    worker_mod.run_job(str(tmp_path), run_id)
    record = store.get_job_dict(run_id)
    assert record["status"] == "failed" and "traceback" not in record
    doc = json.loads(export_json({**record, "traceback": "Traceback (most recent call last): /srv/x.py"},
                                 replay(store.read_events(run_id, touch=False))))
    assert "traceback" not in doc["run"] and "owner" not in doc["run"]
    assert "Traceback" in capfd.readouterr().err  # the host's log has it


# --- the store ----------------------------------------------------------------------------
def test_the_store_folder_is_private(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir(mode=0o755)
    JobStore(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_deleted_store_folder_is_recreated_with_a_note(tmp_path, monkeypatch):
    import shutil

    from fedcore.runner import store as store_mod

    monkeypatch.setattr(store_mod, "EXISTENCE_CHECK_S", 0.0)
    store = JobStore(tmp_path / "runs")
    store.create_run({"rounds": 1}, "h")
    shutil.rmtree(tmp_path / "runs")
    assert store.list_job_dicts("run") == []
    assert "missing and has been recreated" in store.problem
    store.create_run({"rounds": 1}, "h2")
    assert len(store.list_job_dicts("run")) == 1 and (tmp_path / "runs" / "cache.db").exists()


def test_a_damaged_store_is_moved_aside_and_reported(tmp_path):
    store = JobStore(tmp_path)
    store.create_run({"rounds": 1}, "h")
    store.close()
    db = tmp_path / "cache.db"
    with open(db, "r+b") as f:
        f.write(os.urandom(8192))
    with pytest.raises(FedcoreError, match="cannot be opened"):
        JobStore(tmp_path)  # a worker (no check) fails with one line
    fresh = JobStore(tmp_path, check=True)
    assert fresh.list_job_dicts("run") == [] and "damaged" in fresh.problem
    assert list(tmp_path.glob("cache.db.damaged-*"))


def test_the_cli_keeps_no_limits_unless_given_a_limits_file(tmp_path, capsys):
    from fedcore.cli import main

    (tmp_path / "host.toml").write_text("[limits]\nmax_rounds = 2\n")
    assert main(["run", "--preset", "demo", "--set", "rounds=3", "--limits", str(tmp_path / "host.toml")]) == 2
    assert "host limit max_rounds" in capsys.readouterr().err
    assert main(["run", "--preset", "demo", "--set", "rounds=3"]) == 0


def test_the_cpu_requirements_pin_the_same_packages_as_the_default_ones():
    def pins(name):
        lines = (Path(__file__).resolve().parents[1] / name).read_text().splitlines()
        return dict(line.split("==") for line in lines if "==" in line and not line.startswith("#"))

    default, cpu = pins("requirements.txt"), pins("requirements-cpu.txt")
    assert set(default) == set(cpu)
    for name, version in default.items():
        assert cpu[name] in (version, version + "+cpu"), name
    assert cpu["torch"].endswith("+cpu") and cpu["torchvision"].endswith("+cpu")


def test_docker_compose_names_every_host_setting_and_they_parse():
    import dataclasses

    yaml = pytest.importorskip("yaml")
    root = Path(__file__).resolve().parents[1]
    service = yaml.safe_load((root / "docker-compose.yml").read_text())["services"]["lab"]
    env = {k: str(v) for k, v in service["environment"].items()}
    limits = HostLimits.from_env(env, defaults=SHARED_DEFAULTS)
    assert limits.max_running == 2 and limits.datasets == ("digits", "mnist", "fashion_mnist")
    assert limits.models is None and limits.admins == ()
    readme = (root / "README.md").read_text()
    for f in dataclasses.fields(HostLimits):
        assert f"FEDCORE_{f.name.upper()}" in env, f.name
        assert f"FEDCORE_{f.name.upper()}" in readme, f"README does not name {f.name}"
    assert any(v.startswith("runs:") for v in service["volumes"]) and service["user"] != "0"
    assert "_stcore/health" in " ".join(service["healthcheck"]["test"])
