"""Audits of runs from the dashboard: in a background process, stored beside the run store,
shown as the three numbers (paper's claim, accountant's upper bound, audited lower bound)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.config import RunConfig
from fedcore.runner import Jobs
from fedcore.runner.audits import audit_path, audit_result, start_audit

ROOT = Path(__file__).resolve().parents[1]


def local_config() -> RunConfig:
    return RunConfig(rounds=1, num_clients=3, privacy={"mechanism": "laplace", "aggregator": "mean",
                                                         "epsilon": [1.0]})


def test_an_audit_runs_in_the_background_and_is_stored(tmp_path):
    jobs = Jobs(tmp_path, warm=False)
    cfg = local_config()
    assert audit_result(tmp_path, cfg, 400) is None
    job_id = start_audit(jobs, cfg, 400, owner="session:a")
    assert jobs.job(job_id).owner == "session:a" and jobs.is_alive(job_id)
    assert start_audit(jobs, cfg, 400, owner="session:a") == job_id  # asking again starts nothing new
    assert jobs.active_count() == 1
    deadline = time.monotonic() + 300
    while audit_result(tmp_path, cfg, 400) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    jobs.close()
    result = audit_result(tmp_path, cfg, 400)
    assert result is not None and "error" not in result, result
    assert result["kind"] == "distinguishing" and result["audited_epsilon"] is not None
    assert audit_result(str(tmp_path), cfg, 400) == result  # another session, or a restart, finds it
    assert oct(audit_path(tmp_path, cfg, 400).parent.stat().st_mode)[-3:] == "700"


def test_the_playground_shows_the_three_numbers_of_a_stored_audit(tmp_path, monkeypatch):
    from fedcore.runner import Jobs
    from fedcore.runner.audits import DEFAULT_TRIALS

    monkeypatch.setenv("FEDCORE_STORE", str(tmp_path))
    cfg = local_config()
    manager = Jobs(str(tmp_path))
    run_id = manager.start(cfg)
    deadline = time.monotonic() + 300
    while manager.status(run_id) not in ("finished", "failed") and time.monotonic() < deadline:
        time.sleep(0.5)
    manager.close()
    assert manager.status(run_id) == "finished"
    stored = {"paper_claim": None, "accountant_epsilon": 1.0, "audited_epsilon": 0.5, "confidence": 0.95,
              "kind": "distinguishing", "scope": "one report", "verdict": "consistent"}
    audit_path(tmp_path, cfg, DEFAULT_TRIALS).write_text(__import__("json").dumps(stored))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    labels = {m.label: m.value for m in at.metric}
    assert labels.get("accountant's ε (upper bound)") == "1" or labels.get("accountant's ε (upper bound)", "").startswith("1")
    assert any(k.startswith("audited ε (lower bound") for k in labels), labels
