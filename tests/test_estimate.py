"""Rough durations of presets (fedcore/reproduce/estimate.py): the stored table is current."""
from __future__ import annotations

import pytest

from fedcore.resolve import preset_config
from fedcore.reproduce.estimate import (count_train_flops, estimate_presets, flops_table, preset_seconds,
                                     rough_label, rough_seconds)


@pytest.mark.parametrize("model, dataset, shape", [("logreg", "digits", (1, 8, 8)), ("cnn_uldp", "mnist", (1, 28, 28))])
def test_the_stored_flops_are_what_torch_counts(model, dataset, shape):
    assert flops_table()[f"{model}/{dataset}"] == count_train_flops(model, shape, 10)


def test_every_preset_has_a_current_estimate():
    # A preset added or changed without `python -m fedcore.reproduce.estimate` fails here.
    assert preset_seconds() == estimate_presets()


def test_estimates_grow_with_the_work_and_read_as_rough_durations():
    demo = preset_config("demo")
    assert rough_seconds(demo.replace(rounds=40)) == pytest.approx(2 * rough_seconds(demo))
    assert rough_seconds(demo.with_overrides({"model": "mlp"})) > rough_seconds(demo)
    assert rough_label(preset_seconds()["demo"]).endswith(" s")
    assert rough_label(preset_seconds()["kdp_fl_fmnist_iid_eps1"]).endswith(" min")


def test_the_model_counts_per_sample_gradients_evaluations_and_steps():
    from fedcore.reproduce.estimate import PER_SAMPLE_FACTOR

    hw = preset_config("hw_dpfl_mnist_noniid_fedavg")
    clip = preset_config("hw_dpfl_mnist_noniid_clip")
    assert rough_seconds(clip) > rough_seconds(hw)                  # per-sample gradients cost more
    assert PER_SAMPLE_FACTOR > 1
    assert rough_seconds(hw.replace(eval_every=1)) > rough_seconds(hw)   # 50 evaluations instead of 5
    # ULDP-FED at the full setting: 300 rounds of 100 users x 60 steps, minutes not seconds
    assert 10 * 60 < rough_seconds(preset_config("uldp_mnist_dsdp")) < 60 * 60


def test_measured_durations_come_from_the_records(tmp_path):
    import json

    from fedcore.reproduce.estimate import measured_preset_seconds, measured_runs

    rec = {"paper": "hw_dpfl", "mode": "full (paper settings)", "tables": [{"rows": [
        {"preset": "hw_dpfl_mnist_noniid_clip", "finals": [0.9, 0.9, 0.9], "seconds_per_seed": [100.0, 300.0, 200.0],
         "config": {k: v for k, v in preset_config("hw_dpfl_mnist_noniid_clip").to_dict().items() if k != "seed"}},
        {"preset": "hw_dpfl_mnist_noniid", "finals": [0.9], "seconds": 0.01}]}]}   # reused: left out
    (tmp_path / "hw_dpfl.json").write_text(json.dumps(rec))
    assert measured_preset_seconds(tmp_path) == {}                    # no load recorded: no time alone
    rec["tables"][0]["rows"][0]["load_average"] = [1.0, 1.5, 2.0]
    (tmp_path / "hw_dpfl.json").write_text(json.dumps(rec))
    assert measured_preset_seconds(tmp_path) == {"hw_dpfl_mnist_noniid_clip": 200.0}
    rec["tables"][0]["rows"][0]["load_average"] = None
    rec["tables"][0]["mode"] = "quick (CPU, reduced)"                 # not the preset's own settings
    (tmp_path / "hw_dpfl.json").write_text(json.dumps(rec))
    assert measured_preset_seconds(tmp_path) == {}
    ((paper, cfg, seconds, alone),) = measured_runs(tmp_path)
    assert paper == "hw_dpfl" and seconds == 200.0 and alone is None and cfg.privacy.mechanism == "hw_gaussian"
    assert rough_seconds(cfg) > 0
    rec["tables"][0]["mode"] = "full (paper settings)"                # loads recorded: alone on 2 cores
    rec["tables"][0]["rows"][0]["load_average"] = [1.0, 6.0, None]
    (tmp_path / "hw_dpfl.json").write_text(json.dumps(rec))
    assert measured_runs(tmp_path)[0][3] == 100.0                      # median of 100 (alone) and 100 (300 / 3)
    assert measured_preset_seconds(tmp_path) == {"hw_dpfl_mnist_noniid_clip": 100.0}


def test_runs_trained_in_lockstep_are_not_timings_of_one_run(tmp_path):
    import json

    from fedcore.reproduce.estimate import measured_runs

    config = {k: v for k, v in preset_config("hw_dpfl_mnist_noniid_clip").to_dict().items() if k != "seed"}
    rec = {"paper": "hw_dpfl", "tables": [{"rows": [
        {"finals": [0.9, 0.9], "seconds_per_seed": [40.0, 300.0], "lockstep": [6, 1], "config": config},
        {"finals": [0.9], "seconds_per_seed": [40.0], "lockstep": [6], "config": config}]}]}
    (tmp_path / "hw_dpfl.json").write_text(json.dumps(rec))
    assert [seconds for _, _, seconds, _ in measured_runs(tmp_path)] == [300.0]
