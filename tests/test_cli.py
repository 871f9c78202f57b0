"""`python -m fedcore`: exit codes, per-round lines, JSON-lines output, registry listing; bad
input on every command (one line, exit 2, before any work)."""
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

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



def test_daemon_threads_do_not_keep_the_process_from_its_quick_exit(monkeypatch):
    """The curve workers' reader threads are daemons: the process still leaves at once; a live
    non-daemon thread sends it through the interpreter's own exit."""
    import threading

    from fedcore import __main__ as entry

    left, ran = [], []
    monkeypatch.setattr(entry.os, "_exit", lambda code: left.append(code))
    monkeypatch.setattr(entry.atexit, "_run_exitfuncs", lambda: ran.append(True))
    monkeypatch.setattr(entry.sys, "gettrace", lambda: None)
    monkeypatch.setattr(entry.sys, "getprofile", lambda: None)
    daemon, other = threading.Thread(target=print, daemon=True), threading.Thread(target=print)
    live = [threading.main_thread(), daemon]   # the threads of this process as leave() sees them
    monkeypatch.setattr(entry.threading, "enumerate", lambda: list(live))
    with pytest.raises(SystemExit):   # os._exit patched: leave() goes on to sys.exit
        entry.leave(3)
    assert left == [3] and ran == [True]
    live.append(other)
    with pytest.raises(SystemExit) as exited:
        entry.leave(4)
    assert exited.value.code == 4 and left == [3]

# --- issue 22: bad input on the new commands: bounded, checked before any work, one line, exit 2 ---
def _bad_inputs():
    """scripts/bad_inputs.py, the corpus ``python scripts/bad_inputs.py`` feeds the CLI."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "bad_inputs.py"
    spec = importlib.util.spec_from_file_location("bad_inputs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NEW_COMMAND_CASES = [
    (["audit", "--preset", "demo", "--canaries", "1000000000"], "--canaries: got 1000000000"),
    (["audit", "--preset", "demo", "--trials", "1000000000000"], "--trials: got 1000000000000"),
    (["audit", "--preset", "demo", "--dim", "1000000000000"], "--dim: got 1000000000000"),
    (["audit", "--preset", "demo", "--trials", "5000"], "not used by the canary audit"),
    (["audit", "--preset", "demo", "--dim", "10"], "not used by the canary audit"),
    (["audit", "--preset", "demo", "--set", "privacy.mechanism=laplace", "--set", "privacy.aggregator=mean",
      "--canaries", "100"], "not used by the distinguishing audit"),
    (["audit", "--preset", "demo", "--seed", "-1"], "--seed: got -1"),
    (["audit", "--preset", "demo", "--out", "/proc/nope/audit.json"], "--out"),
    (["reproduce", "ldp_fl", "--quick", "--set", "rounds=-3"], "rounds: got -3"),
    (["reproduce", "ldp_fl", "--quick", "--seeds", "1000000000000"], "--seeds: got 1000000000000"),
    (["reproduce", "ldp_fl", "--quick", "--out", "/proc/nope"], "--out '/proc/nope'"),
    (["run", "--preset", "demo", "--set", "privacy.mechanism=gaussian", "--set", "privacy.mechanism_options.clip=Infinity"],
     "privacy.mechanism_options.clip: got 'Infinity'; must be a number > 0"),
]


@pytest.mark.parametrize("argv, named", NEW_COMMAND_CASES, ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else None)
def test_bad_input_on_the_new_commands_is_one_line_and_exit_2_before_any_work(argv, named, tmp_path, capsys,
                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)            # a case that wrongly ran writes its default --out here
    start = time.monotonic()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and err.count("\n") == 0 and "Traceback" not in err, err
    assert named in err, err
    assert time.monotonic() - start < 20, "checked before any training"
    assert not any(tmp_path.iterdir()), "nothing written"


def test_the_bad_inputs_corpus_holds_the_new_commands_and_the_cases_above():
    corpus = _bad_inputs().cases()
    commands = {case[0] for case in corpus}
    assert {"run", "audit", "reproduce", "sweep"} <= commands
    for argv, _ in NEW_COMMAND_CASES[:-1]:
        assert any(case[:len(argv)] == argv for case in corpus), argv
    assert all("--out" in case for case in corpus if case[0] != "run")   # never into the checkout


def test_bad_inputs_classes_a_clear_line_apart_from_a_traceback():
    classify = _bad_inputs().classify
    assert classify(2, "error: --canaries: got 5; must be an integer in [20, 10,000]\n") == "clear"
    assert classify(1, "Traceback (most recent call last):\n  ...\nRuntimeError: x") == "traceback"
    assert classify(0, "") == "accepted"


@pytest.mark.parametrize("args,message", [
    (["run", "--preset", "demo", "--limits", "__binary__"], "not a limits file"),
    (["run", "--preset", "demo", "--out", "__folder__"], "is a folder"),
    (["reproduce", "ldp_fl", "--quick", "--rows", ","], "names no row"),
    (["reproduce", "ldp_fl", "--quick", "--rows", ",".join(f"row{i}" for i in range(20_000))], "and 19995 more"),
])
def test_hostile_cli_inputs_are_one_short_line_and_exit_2(args, message, tmp_path, capsys):
    binary = tmp_path / "limits.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    args = [str(binary) if a == "__binary__" else str(tmp_path) if a == "__folder__" else a for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and len(err) < 2000 and "Traceback" not in err
    assert not list(tmp_path.glob("*.jsonl"))


def test_a_profiled_command_writes_its_profile(tmp_path):
    """``python -m cProfile -o F -m fedcore ...`` writes F: the fast exit waits for the profiler."""
    import pstats
    import subprocess
    import sys

    out = tmp_path / "run.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "fedcore", "run", "--preset", "demo",
                           "--set", "rounds=1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1000:]
    assert pstats.Stats(str(out)).total_calls > 1000


@pytest.mark.parametrize("method, says", [
    ("dp_fedavg", "; exact (PLD) accountant"),
    ("dsdp_fedavg", "; RDP accountant (looser; the PLD is not composed for this run)"),
])
def test_the_finished_line_names_its_accountant_and_only_its_figure(capsys, method, says):
    """Issue 51's "every run names its accountant" on the command line: a PLD headline says so, and ULDP-FED's
    decaying clips (RDP each round) say RDP; the line carries one accountant's ε, never a second beside it."""
    assert main(["run", "--preset", "demo", "--set", f"method={method}", "--set", "rounds=4"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("finished:") and says in last, last
    assert last.count("ε") == 1, last
