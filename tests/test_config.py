"""RunConfig: validation messages, JSON round-trip, stable hash, dotted overrides."""
import json

import pytest

from fedcore.config import RunConfig
from fedcore.errors import ConfigError
from fedcore.resolve import preset_config
from fedcore.resolve import resolve


def test_default_config_is_valid_and_round_trips_through_json():
    cfg = RunConfig()
    again = RunConfig.from_json(cfg.to_json())
    assert again == cfg
    assert again.config_hash() == cfg.config_hash()


def test_hash_is_stable_and_changes_with_any_field():
    a = RunConfig()
    assert a.config_hash() == RunConfig().config_hash()
    assert a.config_hash() != a.replace(seed=1).config_hash()
    assert a.config_hash() != a.with_overrides({"partition.alpha": 0.3}).config_hash()


@pytest.mark.parametrize("override, field, words", [
    ({"rounds": 0}, "rounds", "[1, 100000]"),
    ({"num_clients": -3}, "num_clients", "[1, 100000]"),
    ({"privacy.epsilon": [-1.0]}, "privacy.epsilon[0]", "(0,"),
    ({"privacy.delta": [1.5]}, "privacy.delta[0]", "1"),
    ({"participation": 1.5}, "participation", "(0, 1]"),
    ({"dataset": "imagenet"}, "dataset", "digits"),
    ({"partition.kind": "zipf"}, "partition.kind", "dirichlet"),
    ({"partition.kind": "dirichlet", "partition.alpha": 0}, "partition.alpha", "(0,"),
    ({"partition.alpha": 0.3}, "partition.alpha", "not an option of the iid partitioner"),
    ({"local.optimizer": "adam"}, "local.optimizer", "sgd"),
    ({"privacy.mechanism": "magic"}, "privacy.mechanism", "none"),
])
def test_invalid_value_names_field_value_and_range(override, field, words):
    with pytest.raises(ConfigError) as info:
        resolve(RunConfig().with_overrides(override))
    msg = str(info.value)
    assert msg.startswith(field + ":"), msg
    assert words in msg


def test_epsilon_list_must_match_clients():
    with pytest.raises(ConfigError, match="one value or one per client"):
        RunConfig(num_clients=3, privacy={"epsilon": [1.0, 2.0]})
    cfg = RunConfig(num_clients=3, privacy={"epsilon": [1, 5, 10]})
    assert cfg.privacy.epsilons(3) == [1.0, 5.0, 10.0]
    assert RunConfig(num_clients=4).privacy.epsilons(4) == [1.0] * 4


def test_unknown_field_is_rejected_with_known_names():
    with pytest.raises(ConfigError, match="unknown field"):
        RunConfig.from_dict({"roundz": 3})
    with pytest.raises(ConfigError, match="local.speed"):
        RunConfig().with_overrides({"local.speed": "1"})


def test_set_strings_are_parsed_to_field_types():
    cfg = RunConfig().with_overrides({"rounds": "7", "local.lr": "0.05", "privacy.epsilon": "1,5,10",
                                      "num_clients": "3", "partition.kind": "shards"})
    assert cfg.rounds == 7 and cfg.local.lr == 0.05
    assert cfg.privacy.epsilon == (1.0, 5.0, 10.0)
    assert cfg.partition.kind == "shards"


def test_wrong_type_is_a_config_error():
    with pytest.raises(ConfigError, match="rounds"):
        RunConfig().with_overrides({"rounds": "many"})


def test_demo_preset_matches_issue():
    cfg = preset_config("demo")
    assert (cfg.dataset, cfg.model, cfg.num_clients, cfg.rounds) == ("digits", "logreg", 10, 20)
    assert cfg.partition.kind == "iid" and cfg.privacy.mechanism == "none"
    json.loads(cfg.to_json())
