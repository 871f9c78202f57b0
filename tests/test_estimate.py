"""Rough durations of presets (fedcore/runner/estimate.py): the stored table is current."""
from __future__ import annotations

import pytest

from fedcore.resolve import preset_config
from fedcore.runner.estimate import (count_train_flops, estimate_presets, flops_table, preset_seconds,
                                     rough_label, rough_seconds)


@pytest.mark.parametrize("model, dataset, shape", [("logreg", "digits", (1, 8, 8)), ("cnn_uldp", "mnist", (1, 28, 28))])
def test_the_stored_flops_are_what_torch_counts(model, dataset, shape):
    assert flops_table()[f"{model}/{dataset}"] == count_train_flops(model, shape, 10)


def test_every_preset_has_a_current_estimate():
    # A preset added or changed without `python -m fedcore.runner.estimate` fails here.
    assert preset_seconds() == estimate_presets()


def test_estimates_grow_with_the_work_and_read_as_rough_durations():
    demo = preset_config("demo")
    assert rough_seconds(demo.replace(rounds=40)) == pytest.approx(2 * rough_seconds(demo))
    assert rough_seconds(demo.with_overrides({"model": "mlp"})) > rough_seconds(demo)
    assert rough_label(preset_seconds()["demo"]).endswith(" s")
    assert rough_label(preset_seconds()["kdp_fl_fmnist_iid_eps1"]).endswith(" min")
