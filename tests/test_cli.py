"""`python -m fedcore`: exit codes, per-round lines, JSON-lines output, registry listing."""
import json
import subprocess
import sys

from fedcore.cli import main


def test_run_demo_writes_jsonl_and_prints_rounds(tmp_path, capsys):
    out = tmp_path / "events.jsonl"
    assert main(["run", "--preset", "demo", "--set", "rounds=3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "round    3/3" in printed and "acc" in printed
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["type"] for e in lines] == ["start", "round", "round", "round", "end"]
    assert lines[-1]["status"] == "finished"


def test_invalid_set_exits_2_with_one_line(capsys):
    assert main(["run", "--set", "privacy.epsilon=-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "privacy.epsilon[0]" in err


def test_malformed_set_and_unknown_preset_exit_2(capsys):
    assert main(["run", "--set", "rounds"]) == 2
    assert main(["run", "--preset", "nope"]) == 2
    assert "preset: got 'nope'; is not a known preset" in capsys.readouterr().err


def test_config_file_is_read(tmp_path, capsys):
    f = tmp_path / "cfg.json"
    f.write_text(json.dumps({"rounds": 2, "num_clients": 4}))
    assert main(["run", "--config", str(f)]) == 0
    assert "round    2/2" in capsys.readouterr().out
    f.write_text(json.dumps({"rounds": -2}))
    assert main(["run", "--config", str(f)]) == 2


def test_data_dependent_error_exits_2(capsys):
    assert main(["run", "--set", "num_clients=5000", "--set", "rounds=1"]) == 2
    assert "num_clients" in capsys.readouterr().err


def test_list_prints_every_registry(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for section in ("datasets:", "models:", "partitioners:", "mechanisms:", "aggregators:", "methods:", "presets:"):
        assert section in out
    assert "demo" in out and "dirichlet" in out


def test_module_entry_point_exit_code():
    bad = subprocess.run([sys.executable, "-m", "fedcore", "run", "--set", "rounds=0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "rounds: got 0" in bad.stderr
