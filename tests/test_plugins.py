"""Your own dataset and model, seen by every part: the modules ``FEDCORE_PLUGINS`` names
(fedcore/plugins.py) reach the CLI, the Playground's pickers and Ray's tasks; what the engine
cannot train is one sentence. Each check runs in a process of its own, so this process's
registries keep fedcore's own entries only."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def fedcore(*args, plugins: str, tmp_path: Path, extra_path: str = "", timeout: int = 300):
    env = {**os.environ, "FEDCORE_PLUGINS": plugins, "FEDCORE_IMAGE_FOLDER": str(tmp_path / "images"),
           "PYTHONPATH": os.pathsep.join(p for p in (extra_path, str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-m", "fedcore", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_a_csv_dataset_from_a_plugin_trains_from_the_cli(tmp_path):
    done = fedcore("run", "--preset", "demo", "--set", "dataset=wine_csv", "--set", "rounds=5",
                   "--out", "events.jsonl", plugins="examples.tabular_csv", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert events[0]["config"]["dataset"] == "wine_csv" and events[0]["num_classes"] == 3
    assert sum(events[0]["client_sizes"]) == 142            # 80 % of the 178 wines
    assert events[-1]["final_accuracy"] > 0.8                # three cultivars: chance is about 0.33


def test_an_image_folder_and_a_custom_model_train_together(tmp_path):
    done = fedcore("run", "--preset", "demo", "--set", "dataset=digits_folder", "--set", "model=tiny_cnn",
                   "--set", "rounds=8", "--out", "events.jsonl",
                   plugins="examples.image_folder, examples.custom_model", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert sum(events[0]["client_sizes"]) == 400 and events[0]["num_classes"] == 10   # 500 PNGs, 80 % to train
    assert events[-1]["final_accuracy"] > 0.5                                          # ten digits: chance 0.1
    assert len(list((tmp_path / "images").rglob("*.png"))) == 500


def test_a_model_the_batched_engine_cannot_train_is_one_sentence(tmp_path):
    (tmp_path / "bn_plugin.py").write_text(textwrap.dedent("""
        from torch import nn
        from fedcore.models import MODELS

        @MODELS.register("bn_mlp", summary="an MLP with batch norm")
        def bn_mlp(shape, classes):
            return nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16), nn.Linear(16, classes))
    """))
    done = fedcore("run", "--preset", "demo", "--set", "model=bn_mlp", plugins="bn_plugin", tmp_path=tmp_path,
                   extra_path=str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "bn_mlp" in done.stderr and "batch norm" in done.stderr


def test_a_plugin_that_cannot_be_imported_is_named_in_one_line(tmp_path):
    done = fedcore("list", plugins="examples.tabular_csv,no_such_lab.fl_data", tmp_path=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ("error: FEDCORE_PLUGINS: cannot import plugin 'no_such_lab.fl_data' "
                                   "(ModuleNotFoundError: No module named 'no_such_lab'); it must be importable "
                                   "from the working folder or PYTHONPATH")


PLAYGROUND = """
import time
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=120)
at.query_params["preset"] = "demo"
at.query_params["dataset"] = '"wine_csv"'
at.query_params["rounds"] = "3"
at.run()
assert not at.exception, at.exception
print(next(w for w in at.selectbox if w.label == "Dataset").options)
next(w for w in at.button if w.label == "Run").click().run()
for _ in range(600):
    bars = at.get("progress")
    if bars and any(s in bars[0].proto.text for s in ("finished", "stopped", "failed")):
        break
    time.sleep(0.3)
    at.run()
print(at.get("progress")[0].proto.text)
"""


def test_a_plugin_dataset_is_in_the_playgrounds_picker_and_its_worker_trains_it(tmp_path):
    env = {**os.environ, "FEDCORE_PLUGINS": "examples.tabular_csv", "FEDCORE_STORE": str(tmp_path / "store"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-c", PLAYGROUND.format(app=str(ROOT / "app.py"))], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    options, progress = done.stdout.strip().splitlines()[-2:]
    assert "'wine_csv'" in options and "'digits'" in options
    assert "finished" in progress and "3" in progress, progress     # trained in the job's spawned worker


@pytest.mark.slow
def test_a_plugin_dataset_trains_in_sweep_on_ray(tmp_path):
    pytest.importorskip("ray")
    done = fedcore("sweep", "--ray", "--preset", "demo", "--methods", "dp_fedavg", "--epsilons", "10", "--seeds", "1",
                   "--no-reference", "--set", "dataset=wine_csv", "--set", "rounds=3", "--out", "frontier.json",
                   plugins="examples.tabular_csv", tmp_path=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "frontier.json").read_text())["rows"]
    assert [(r["method"], r["epsilon"]) for r in rows] == [("dp_fedavg", 10.0)]
    assert 0 < rows[0]["epsilon_accountant"] <= 10 and rows[0]["accuracy"] is not None
