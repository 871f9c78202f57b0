"""Every refusal of the CLI is one line on stderr and exit 2, argparse's own included (it printed its
usage first: 5-8 lines), and a refused command leaves no ``--out`` file or folder behind (issue 57 §4);
``attack --config`` refuses an ε on a config without noise as ``--set`` does (issue 54 §7)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedcore.cli import main

ROOT = Path(__file__).resolve().parents[1]


def one_error_line(err: str) -> str:
    err = err.strip()
    assert err.startswith("error: ") and "\n" not in err and "usage:" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("argv", [
    ["attack", "--match", "nosuch"], ["sweep", "--match", "nosuch"], ["audit", "--canaries", "inf"],
    ["attack", "--shadows", "nan"], ["reproduce", "--seeds", "x"], ["run", "--nosuch"], [], ["nosuch"],
    ["audit", "--kind", "nosuch"], ["--threads"],
])
def test_an_argparse_refusal_is_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = one_error_line(capsys.readouterr().err)
    assert "--help" in err  # where the options are listed


def _fedcore(*argv, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fedcore", *argv], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_the_issues_commands_exit_2_in_one_line_and_leave_nothing(tmp_path):
    for argv in (["sweep", "--preset", "demo", "--seeds", "nan"], ["attack", "--match", "nosuch"],
                 ["run", "--preset", "demo", "--set", "num_clients=100000", "--out", "X.jsonl"]):
        done = _fedcore(*argv, cwd=tmp_path)
        assert done.returncode == 2, (argv, done.stderr)
        one_error_line(done.stderr)
    assert list(tmp_path.iterdir()) == []  # no X.jsonl, no frontier.json


@pytest.mark.parametrize("sets", [["num_clients=100000"], ["device=cuda"] if not __import__("torch").cuda.is_available()
                                  else ["partition.kind=nosuch"], ["partition.kind=kclass", "partition.k=999"]])
def test_a_refused_run_writes_no_out_file_and_keeps_an_old_one(sets, tmp_path, capsys):
    argv = ["run", "--preset", "demo", *[a for s in sets for a in ("--set", s)]]
    assert main(argv + ["--out", str(tmp_path / "new.jsonl")]) == 2
    one_error_line(capsys.readouterr().err)
    old = tmp_path / "old.jsonl"
    old.write_text('{"kept": true}\n')
    assert main(argv + ["--out", str(old)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"] and old.read_text() == '{"kept": true}\n'


def test_a_run_that_starts_writes_its_out_file_under_its_own_name(tmp_path, capsys):
    out = tmp_path / "events.jsonl"
    assert main(["run", "--preset", "demo", "--set", "rounds=1", "--out", str(out)]) == 0
    kinds = [json.loads(line)["type"] for line in out.read_text().splitlines()]
    assert kinds[0] == "start" and kinds[-1] == "end"
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]  # no temporary name left


def test_a_refused_reproduction_leaves_no_out_folder(tmp_path, capsys):
    pytest.importorskip("ray")
    out = tmp_path / "new" / "deeper"
    assert main(["reproduce", "ldp_fl", "--quick", "--ray", "127.0.0.1:1", "--out", str(out)]) == 2
    one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_attack_refuses_an_epsilon_from_a_config_file_on_a_method_without_noise(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("fedcore.attacks.run.attack_run", lambda *a, **k: pytest.fail("attacked"))
    config = tmp_path / "fedavg.json"
    config.write_text(json.dumps({"method": "fedavg", "privacy": {"epsilon": 1}}))
    assert main(["attack", "--config", str(config)]) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "privacy.epsilon 1" in err and "fedavg adds no noise" in err


def test_attack_takes_a_whole_exported_config_without_noise(tmp_path):
    from fedcore.attacks.cli import attack_config
    from fedcore.layering import build_config

    exported = build_config("demo", None, []).to_dict()  # what the Config tab downloads: "mechanism": "none" in it
    assert "epsilon" in exported["privacy"] and exported["privacy"]["mechanism"] == "none"
    path = tmp_path / "exported.json"
    path.write_text(json.dumps(exported))
    assert attack_config(None, str(path), [], "headline").privacy.mechanism == "none"
