"""The device call's CPU half (issue 41 §7): every command of ``scripts/device_check.sh`` runs here,
shrunk to seconds (``--cpu``), so the script a device session runs first is known to work."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RAW = Path(os.environ.get("FEDCORE_TEST_RAW_DATA", ROOT.parent / "shared" / "data"))

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not (RAW / "MNIST").is_dir() or not (RAW / "FashionMNIST").is_dir(),
                    reason="needs the raw MNIST and Fashion-MNIST files (../shared/data)")
def test_every_step_of_the_device_call_runs_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "FEDCORE_SHARED_DATA": str(RAW), "PYTHON": sys.executable}
    done = subprocess.run(["bash", "scripts/device_check.sh", "--cpu"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    steps = dict(line.split()[:2] for line in (out / "steps.txt").read_text().splitlines())
    assert steps == {name: "rc=0" for name in ("profile", "quick", "setup", "w3", "w2", "w4", "graphtest", "graph", "kdp")}, (
        steps, {n: (out / f"{n}.log").read_text()[-1500:] for n in steps if steps[n] != "rc=0"})
    profile = json.loads((out / "profile.log").read_text().strip().splitlines()[-1])
    assert profile["aten_calls_per_round"] > 0 and profile["rounds"] == 2
    assert {"ledger_cpu_s_per_round", "eval_cpu_s_per_round", "train_cpu_s_per_round"} <= profile.keys()
    with gzip.open(out / "w3.jsonl.gz", "rt") as f:
        events = [json.loads(line) for line in f]
    assert [e["round"] for e in events if e.get("type") == "round"] == [1, 2]
    assert events[-1]["type"] == "end" and events[0]["config"]["method"] == "dsdp_fedavg"
    marks = json.loads((out / "w3.log").read_text().strip().splitlines()[-1])   # benchmarks.timeline's
    assert marks["returncode"] == 0 and marks["rounds_seen"] == 2 and marks["exit_s"] >= marks["finished_s"]
    setup = json.loads((out / "setup.log").read_text().strip().splitlines()[-1])
    assert setup["device"] == "cpu" and setup["load_dataset"] > 0 and setup["round_1"] > 0
    report = (out / "benchmarks.md").read_text()
    assert "W2/plain" in report and "W2/uldp" in report and "W4" in report
    assert (out / "kdp_fedavg_T1.jsonl.gz").is_file()
    assert "no GPU" in (out / "host.txt").read_text()
    graph = json.loads((out / "graph.log").read_text().strip().splitlines()[-1])
    assert graph["eager"]["wall_s"] > 0 and "graph" not in graph          # no capture without CUDA
    assert "no CUDA device" in (out / "graphtest.log").read_text()
