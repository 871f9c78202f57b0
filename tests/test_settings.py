"""One source of truth for every setting (issue 12): what a link, a preset or a typed value
says is what the Playground trains, or it says why not. One test per reported bug."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.cli import main
from fedcore.config import RunConfig, unflatten
from fedcore.errors import ConfigError
from fedcore.catalog import PRESETS
from fedcore.resolve import preset_config
from fedcore.resolve import resolve
from fedcore.links import config_from_params, config_to_params

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def playground(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def playground_config(at) -> RunConfig:
    return RunConfig.from_dict(unflatten(at.session_state["pg.flat"]))


def test_every_preset_round_trips_through_its_link():
    for name in PRESETS.names():
        cfg = preset_config(name)
        assert config_from_params(config_to_params(cfg, name)).config_hash() == cfg.config_hash(), name


# Presets whose values lie outside a widget's suggested range (budgets below 0.1 or above
# 20, many rounds, big batches) plus the demo: loaded through a link, the Playground keeps
# their hash. (All 129 through AppTest would take minutes; the link codec is checked for
# every preset above, and these are the ones a clamping widget used to change.)
def _outside_suggested(name: str) -> bool:
    cfg = preset_config(name)
    eps = cfg.privacy.epsilon
    return min(eps) < 0.1 or max(eps) > 20 or cfg.rounds > 500 or cfg.local.epochs > 100


PLAYGROUND_PRESETS = sorted({"demo", "pldp_fmnist_iid_b"} | {n for n in PRESETS.names() if _outside_suggested(n)})[:6]


@pytest.mark.parametrize("name", PLAYGROUND_PRESETS)
def test_a_preset_link_keeps_its_config_hash_in_the_playground(store_dir, name):
    cfg = preset_config(name)
    at = playground(**config_to_params(cfg, name))
    assert not at.exception
    assert playground_config(at).config_hash() == cfg.config_hash()
    assert not [e for e in at.error], [e.value for e in at.error]


def test_pldp_preset_budgets_are_not_clamped(store_dir):
    at = playground(preset="pldp_fmnist_iid_b")
    assert playground_config(at).privacy.epsilon == preset_config("pldp_fmnist_iid_b").privacy.epsilon
    at = playground(preset="demo", num_clients="3", **{"privacy.epsilon": "[0.05,50,100]",
                                                        "privacy.mechanism": '"gaussian"'})
    cfg = playground_config(at)
    assert cfg.privacy.epsilon == (0.05, 50.0, 100.0)
    assert cfg.method == ""  # the link's mechanism is not fedavg's: labelled custom


@pytest.mark.parametrize("label, value, field", [("Clients", 0, "num_clients"), ("Seed", -1, "seed")])
def test_an_invalid_typed_value_is_named_and_disables_run(store_dir, label, value, field):
    at = playground()
    next(w for w in at.number_input if w.label == label).set_value(value).run()
    errors = " ".join(e.value for e in at.error).replace("\\", "")  # shown as escaped plain text
    assert f"{field}: got {value}" in errors
    assert next(b for b in at.button if b.label == "Run").disabled


def test_an_invalid_typed_epsilon_is_named_and_disables_run(store_dir):
    at = playground()
    at.radio[0].set_value("Same for all clients").run()
    next(w for w in at.number_input if w.label == "ε for every client").set_value(-3.0).run()
    assert "privacy.epsilon[0]: got -3.0" in " ".join(e.value for e in at.error).replace("\\", "")
    assert next(b for b in at.button if b.label == "Run").disabled


def test_participation_that_rounds_to_no_client_is_refused():
    with pytest.raises(ConfigError, match="participation.*rounds to none"):
        RunConfig(num_clients=5, participation=0.05)
    assert RunConfig(num_clients=5, participation=0.05, sampling="poisson").clients_per_round == 0.25


def test_more_train_samples_than_exist_is_refused():
    from fedcore.engine.setup import prepare

    with pytest.raises(ConfigError, match="train_size: got 100000; .*1437"):
        prepare(RunConfig(train_size=100_000))


def test_overriding_the_mechanism_drops_the_method_label():
    cfg = config_from_params({"preset": "demo", "privacy.mechanism": '"gaussian"'})
    assert cfg.method == "" and cfg.privacy.mechanism == "gaussian"
    cfg = config_from_params({"preset": "demo", "rounds": "5"})
    assert cfg.method == "fedavg"


def test_building_a_config_imports_neither_torch_nor_the_registries():
    code = ("import sys; from fedcore.config import RunConfig; RunConfig(); "
            "bad = [m for m in sys.modules if m == 'torch' or m.startswith(('fedcore.catalog', 'fedcore.mechanisms'))]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the CLI on bad input: one line, exit 2, naming the field ------------------------------
@pytest.mark.parametrize("args, words", [
    (["--set", "rounds.x=1"], "rounds: got 'x'; is not a section"),
    (["--set", "privacy.epsilon=abc"], "privacy.epsilon: got 'abc'; must be numbers"),
    (["--set", "privacy.epsilon=nan"], "privacy.epsilon: got 'nan'"),
    (["--set", "privacy.epsilon=inf"], "privacy.epsilon: got 'inf'"),
    (["--set", "privacy.epsilon=1,,2"], "privacy.epsilon: got '1,,2'"),
    (["--set", "participation=NaN"], "participation: got 'NaN'; must be a number in (0, 1]"),
    (["--set", "seed=999999999999999999999999999999"], "seed: got 999999999999999999999999999999; must be an integer in [0, 4294967295]"),
    (["--set", "local.steps=1000000000"], "local.steps: got 1000000000"),
    (["--set", "local.steps=1000000"], "local.steps: got 1000000; 10 clients x 1000000 steps"),
    (["--set", "privacy.mechanism=gaussian", "--set", "privacy.mechanism_options.clip=Infinity"],
     "privacy.mechanism_options.clip: got 'Infinity'"),
    (["--set", "rounds=[[1]]"], "rounds: got [[1]]"),
    (["--preset", "pldp_mnist_iid"], "did you mean"),
])
def test_cli_bad_set_values_exit_2_with_one_line(capsys, args, words):
    assert main(["run", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err, err


@pytest.mark.parametrize("content, words", [
    (b"[1, 2]", "holds a JSON list"),
    (b"null", "holds a JSON null"),
    (b'{"privacy": [1, 2]}', "privacy: got [1, 2]; must be a mapping"),
    (b'{"rounds": ' + b"9" * 5001 + b"}", "not valid JSON"),
    (bytes(range(256)), "not a UTF-8 text file"),
    (b'{"rounds": NaN}', "not valid JSON"),
])
def test_cli_bad_config_files_exit_2_with_one_line(tmp_path, capsys, content, words):
    path = tmp_path / "cfg.json"
    path.write_bytes(content)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err, err


def test_event_files_are_strict_json(tmp_path):
    import json

    out = tmp_path / "ev.jsonl"
    assert main(["run", "--set", "rounds=2", "--set", "local.lr=100", "--out", str(out)]) == 0
    for line in out.read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON token {c}"))


def test_a_link_with_only_a_run_id_loads_that_runs_settings(store_dir):
    from fedcore.runner import Jobs

    cfg = RunConfig(rounds=2, num_clients=4, seed=3)
    manager = Jobs(str(store_dir))
    run_id = manager.start(cfg)
    manager.close()
    at = playground(run=run_id)
    assert not at.exception
    assert playground_config(at).config_hash() == cfg.config_hash()
    assert "settings in the sidebar have changed" not in " ".join(c.value for c in at.caption)


def test_widget_callbacks_survive_an_earlier_callback_resetting_the_widgets(store_dir):
    # Streamlit runs every changed widget's callback in one rerun; picking a preset resets the
    # widgets, so the method picker's callback must not assume its key still exists.
    at = playground()
    at.selectbox(key="pg.preset_pick").set_value("pldp_fmnist_iid_b")
    at.selectbox(key="w.method").set_value("ldp_fl")
    at.run()
    assert not at.exception, at.exception


@pytest.mark.parametrize("sets", [["method=hw_dpfl", "rounds=20"], ["method=ldp_fl"], ["method=", "privacy.mechanism=gaussian"]])
def test_links_and_cli_lines_layer_a_method_like_the_cli(sets):
    # A link names the method and what differs from the method applied on the preset, so a
    # value set back to the preset's (hw_dpfl's 80 demo rounds back to 20) survives the trip.
    import shlex

    from fedcore.layering import build_config
    from fedcore.links import cli_command, config_from_params, config_to_params

    cfg = build_config("demo", None, sets)
    assert config_from_params(config_to_params(cfg, "demo")).config_hash() == cfg.config_hash()
    words = shlex.split(cli_command(cfg, "demo"))
    again = build_config("demo", None, [words[i + 1] for i, w in enumerate(words) if w == "--set"])
    assert again.config_hash() == cfg.config_hash()


# --- issue 24: install routes that work on a plain PyPI ----------------------------------------
def test_the_readme_install_routes_name_no_local_path_and_the_fallback_needs_pypi_alone():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    for text in (readme, (root / "requirements.txt").read_text(), (root / "requirements-cpu.txt").read_text()):
        assert not re.search(r"(?<![\w.])/(opt|home|root|mnt|srv/wheels|tmp)/\S*\.whl", text)
        assert not re.search(r"\S+\.whl\b", text), "a wheel file of one machine"
    default = (root / "requirements.txt").read_text()
    assert "--index-url" not in default and "--extra-index-url" not in default and "--find-links" not in default
    cpu = (root / "requirements-cpu.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in cpu
    install = readme.split("**Install routes**")[1].split("## ")[0]
    assert "https://download.pytorch.org/whl/cpu" in install                  # the CPU route names its index
    assert "fallback" in install and "pip install -r requirements.txt" in install
    assert "--no-index --find-links" in install                                # offline: one download of both
