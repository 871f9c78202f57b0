"""The CLI refuses before it trains (issue 38 §6): ``sweep`` checks every point of its spec (the
page's check, :func:`fedcore.sweep.job.checked_groups`) before the first row, and ``attack``
refuses an ε on a config that adds no noise; one line, exit 2."""
from __future__ import annotations

import pytest

from fedcore.cli import main


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_a_sweep_whose_last_method_cannot_be_calibrated_trains_nothing(tmp_path, capsys, monkeypatch):
    trained = []
    monkeypatch.setattr("fedcore.sweep.runner.run_sweep", lambda points, **kw: trained.append(points) or iter(()))
    out = tmp_path / "frontier.json"
    argv = ["sweep", "--preset", "demo", "--methods", "ldp_fl,dp_fedavg", "--epsilons", "0.01,1", "--seeds", "1",
            "--set", "rounds=2", "--out", str(out)]
    assert main(argv) == 2
    err = one_error_line(capsys)
    assert "solving dp_fedavg's budget" in err and "0.01" in err, err
    assert trained == [] and not out.exists()          # ldp_fl's rows, first in order, were not trained


@pytest.mark.parametrize("epsilon", ["1", "1e-300"])
def test_attack_refuses_an_epsilon_on_a_method_without_noise(epsilon, capsys, monkeypatch):
    monkeypatch.setattr("fedcore.attacks.run.attack_run", lambda *a, **k: pytest.fail("attacked"))
    assert main(["attack", "--preset", "demo", "--set", "method=fedavg", "--set", f"privacy.epsilon={epsilon}"]) == 2
    err = one_error_line(capsys)
    assert f"privacy.epsilon={epsilon}" in err and "fedavg adds no noise" in err, err
