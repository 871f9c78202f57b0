"""The Python API (fedcore/api.py): the CLI's numbers, its validation and its one-line errors."""
from __future__ import annotations

import json
import math

import pytest

import fedcore
from fedcore.cli import main


def test_every_name_of_all_is_importable_from_fedcore():
    assert {"run", "frontier", "attack", "reproduce_paper", "RunResult", "use_plugins", "ConfigError"} <= set(
        fedcore.__all__)
    assert all(callable(getattr(fedcore, name)) for name in fedcore.__all__)
    with pytest.raises(AttributeError):
        fedcore.no_such_name


def test_run_gives_the_clis_accuracy_and_headline_for_the_same_seed(tmp_path, capsys):
    r = fedcore.run(preset="demo", method="dp_fedavg", epsilon=3, rounds=4, seed=2)
    assert main(["run", "--preset", "demo", "--set", "method=dp_fedavg", "--set", "privacy.epsilon=3",
                 "--set", "rounds=4", "--set", "seed=2", "--out", str(tmp_path / "e.jsonl")]) == 0
    events = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert r.config_hash == events[0]["config_hash"]
    assert r.final_accuracy == events[-1]["final_accuracy"]
    assert r.epsilon_headline == events[-2]["epsilon_headline_run"] < 3
    assert f"final accuracy {r.final_accuracy:.4f}" in capsys.readouterr().out
    assert r.rounds == [1, 2, 3, 4] and len(r.accuracy) == len(r.loss) == len(r.epsilon_rounds) == 4
    assert r.epsilon_rounds == sorted(r.epsilon_rounds) and r.epsilon_rounds[-1] == r.epsilon_headline
    assert r.epsilon_per_client == events[-2]["epsilon_headline"] and r.threat_model == "central"
    # the accountant is the ledger whose per-client ε are the headline's, whichever it is
    assert events[-2]["epsilon_accountant"][r.accountant] == events[-2]["epsilon_headline"]
    assert r.history[-1] == {"round": 4, "accuracy": r.final_accuracy, "loss": r.loss[-1],
                             "epsilon_headline": r.epsilon_headline}


def test_a_run_without_noise_has_an_infinite_headline_and_no_accountant():
    r = fedcore.run(preset="demo", rounds=2)
    assert r.epsilon_headline == math.inf and r.accountant == "" and r.threat_model == "none"
    assert r.status == "finished" and 0.5 < r.final_accuracy <= 1


def test_settings_layer_as_the_clis_do():
    cfg = fedcore.make_config({"rounds": 7, "local": {"lr": 0.2}}, preset="demo", clients=4, eps=[1, 2, 3, 4],
                              **{"partition.kind": "dirichlet", "partition.alpha": 0.3})
    assert (cfg.rounds, cfg.num_clients, cfg.local.lr) == (7, 4, 0.2)
    assert list(cfg.privacy.epsilon) == [1, 2, 3, 4] and cfg.partition.options["alpha"] == 0.3
    assert fedcore.make_config(cfg) == cfg


@pytest.mark.parametrize("settings, names", [
    ({"epsilon": -3}, "privacy.epsilon[0]: got -3"),
    ({"epsilonn": 3}, "epsilonn"),
    ({"local": 3}, "local"),
    ({"method": "dp_fedavgg"}, "dp_fedavgg"),
])
def test_a_bad_setting_is_a_one_line_config_error_before_training(settings, names):
    with pytest.raises(fedcore.FedcoreError) as err:
        fedcore.run(preset="demo", **settings)
    assert names in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_tracker_is_refused_before_training(tmp_path):
    with pytest.raises(fedcore.FedcoreError, match="--track wandb: must be mlflow or tensorboard"):
        fedcore.run(preset="demo", track="wandb", out=tmp_path / "e.jsonl")
    assert not list(tmp_path.iterdir())


def test_frontier_returns_the_sweeps_rows(tmp_path):
    rows = fedcore.frontier(methods="dp_fedavg", epsilons=[10], seeds=1, reference=False, rounds=2,
                            out=tmp_path / "f.json")
    assert [(r["method"], r["epsilon"], r["match"]) for r in rows] == [("dp_fedavg", 10.0, "headline")]
    assert 9.9 <= rows[0]["epsilon_accountant"] <= 10
    assert json.loads((tmp_path / "f.json").read_text())["rows"] == rows


def test_attack_reports_the_attackers_beside_their_caps():
    result = fedcore.attack(preset="demo", shadows=None, rounds=2, num_clients=3,
                            **{"local.steps": 1, "local.batch_size": 1})
    assert result["threat_model"] == "none" and result["membership"] is None
    assert result["reconstruction"]["reidentified"] == 1.0       # no noise, one image: the update is the image
