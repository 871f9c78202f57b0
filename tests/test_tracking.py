"""Runs in MLflow and TensorBoard (fedcore/tracking.py): `python -m fedcore run --track ...` logs
what the event file holds, read back with each library's own reader."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "--preset", "demo", "--set", "method=dp_fedavg", "--set", "privacy.epsilon=3", "--set", "rounds=3",
       "--out", "events.jsonl"]


def fedcore(tmp_path: Path, *args: str) -> list[dict]:
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-m", "fedcore", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]


def test_a_run_tracked_in_mlflow_is_found_by_search_runs(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    events = fedcore(tmp_path, *RUN, "--track", "mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(output_format="list")
    assert len(runs) == 1
    client = mlflow.MlflowClient()
    run = client.get_run(runs[0].info.run_id)
    last = events[-2]
    assert run.data.metrics["final_accuracy"] == events[-1]["final_accuracy"]
    assert run.data.metrics["epsilon_headline"] == last["epsilon_headline_run"] == float(run.data.tags["epsilon_headline"])
    assert run.data.params["method"] == "dp_fedavg" and run.data.params["privacy.epsilon"] == "[3.0]"
    assert run.data.tags["config_hash"] == events[0]["config_hash"] and run.data.tags["threat_model"] == "central"
    assert last["epsilon_accountant"][run.data.tags["epsilon_accountant"]] == last["epsilon_headline"]
    history = client.get_metric_history(run.info.run_id, "accuracy")
    assert [(m.step, m.value) for m in history] == [(e["round"], e["accuracy"]) for e in events[1:-1]]
    assert client.get_metric_history(run.info.run_id, "epsilon_client_9")[-1].value == last["epsilon_headline"][9]
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["events.jsonl"]
    assert run.info.status == "FINISHED"


def test_a_run_tracked_in_tensorboard_is_read_back_by_its_event_accumulator(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = fedcore(tmp_path, *RUN, "--track", "tensorboard=tb")
    (folder,) = (tmp_path / "tb").iterdir()
    acc = EventAccumulator(str(folder))
    acc.Reload()
    assert [s.step for s in acc.Scalars("accuracy")] == [e["round"] for e in events[1:-1]]
    assert [s.value for s in acc.Scalars("accuracy")] == pytest.approx([e["accuracy"] for e in events[1:-1]])
    assert acc.Scalars("final_accuracy")[0].value == pytest.approx(events[-1]["final_accuracy"])
    assert acc.Scalars("epsilon_headline")[-1].value == pytest.approx(events[-2]["epsilon_headline_run"])
    assert (folder / "events.jsonl").read_text() == (tmp_path / "events.jsonl").read_text()


def test_a_sweep_tracked_in_mlflow_logs_one_run_per_row(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-m", "fedcore", "sweep", "--methods", "dp_fedavg", "--epsilons", "10",
                           "--seeds", "1", "--set", "rounds=2", "--out", "f.json", "--track", "mlflow"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "f.json").read_text())["rows"]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("Default").experiment_id])
    assert len(runs) == len(rows) == 3                      # the point, no privacy, clip only
    assert sorted(r.data.metrics["accuracy"] for r in runs) == sorted(r["accuracy"] for r in rows)
    assert {r.data.params["reference"] for r in runs} == {"", "no_privacy", "clip_only"}
