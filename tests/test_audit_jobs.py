"""Audits of runs from the dashboard: in a background process, stored beside the run store,
shown as the three numbers (paper's claim, accountant's upper bound, audited lower bound)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.config import RunConfig
from fedcore.runner.audits import AuditJobs

ROOT = Path(__file__).resolve().parents[1]


def local_config() -> RunConfig:
    return RunConfig(rounds=1, num_clients=3, privacy={"mechanism": "laplace", "aggregator": "mean",
                                                         "epsilon": [1.0]})


def test_an_audit_runs_in_the_background_and_is_stored(tmp_path):
    jobs = AuditJobs(tmp_path)
    cfg = local_config()
    assert jobs.result(cfg, 400) is None
    jobs.submit(cfg, 400)
    assert jobs.running(cfg, 400)
    jobs.submit(cfg, 400)  # asking again starts nothing new
    assert len(jobs._futures) == 1
    deadline = time.monotonic() + 300
    while jobs.result(cfg, 400) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    jobs.close()
    result = jobs.result(cfg, 400)
    assert result is not None and "error" not in result, result
    assert result["kind"] == "distinguishing" and result["audited_epsilon"] is not None
    assert AuditJobs(tmp_path).result(cfg, 400) == result  # another session, or a restart, finds it
    assert oct(jobs.folder.stat().st_mode)[-3:] == "700"


def test_the_playground_shows_the_three_numbers_of_a_stored_audit(tmp_path, monkeypatch):
    from fedcore.runner import JobManager
    from fedcore.runner.audits import DEFAULT_TRIALS

    monkeypatch.setenv("FEDCORE_STORE", str(tmp_path))
    cfg = local_config()
    manager = JobManager(str(tmp_path))
    run_id = manager.start(cfg)
    deadline = time.monotonic() + 300
    while manager.status(run_id) not in ("finished", "failed") and time.monotonic() < deadline:
        time.sleep(0.5)
    manager.close()
    assert manager.status(run_id) == "finished"
    stored = {"paper_claim": None, "accountant_epsilon": 1.0, "audited_epsilon": 0.5, "confidence": 0.95,
              "kind": "distinguishing", "scope": "one report", "verdict": "consistent"}
    AuditJobs(tmp_path).path(cfg, DEFAULT_TRIALS).write_text(__import__("json").dumps(stored))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    labels = {m.label: m.value for m in at.metric}
    assert labels.get("accountant's ε (upper bound)") == "1" or labels.get("accountant's ε (upper bound)", "").startswith("1")
    assert any(k.startswith("audited ε (lower bound") for k in labels), labels
