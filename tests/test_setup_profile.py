"""benchmarks.setup_profile: each step before round 1 timed on its own, on the run's real code."""
from benchmarks.setup_profile import main


def test_every_step_before_round_one_is_timed(capsys):
    marks = main(["--set", "rounds=2", "--set", "num_clients=4", "--device", "cpu"])
    steps = ("import_torch", "import_fedcore", "device_start", "load_dataset", "prepare", "round_1")
    assert all(marks[k] >= 0 for k in steps) and marks["device"] == "cpu"
    assert marks["total"] >= sum(marks[k] for k in steps) - 1e-3
    assert marks["round_1"] > 0 and marks["settings"] == ["rounds=2", "num_clients=4"]
    assert '"round_1"' in capsys.readouterr().out
