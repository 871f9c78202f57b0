"""Issue 32: every one-click method picked from the default first screen (DP-FedAvg at ε = 10)
gives a valid setting with Run enabled, carries nothing of the previous method, and HW-DPFL on the
demo can spend exactly its ε (its 80 rounds are within the equal-privacy limit)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import fedcore.catalog  # noqa: F401  (registers the methods)
from fedcore.methods import METHODS, apply_method
from fedcore.resolve import preset_config

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_switching_methods_carries_nothing_of_the_previous_one():
    demo = preset_config("demo")
    first = apply_method(demo, "dp_fedavg", preset="demo")
    for name in METHODS.names():
        assert apply_method(first, name, preset="demo") == apply_method(demo, name, preset="demo"), name


@pytest.fixture(scope="module")
def first_screen(store_dir):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at


@pytest.mark.parametrize("method", [m for m in METHODS.names()])
def test_every_one_click_method_from_the_first_screen_can_run(first_screen, method):
    at = first_screen
    picker = next(s for s in at.selectbox if s.label == "Method (one-click recipe)")
    picker.set_value(method).run()
    assert not at.exception
    errors = " ".join(str(e.value) for e in at.error)
    assert "Invalid setting" not in errors, errors
    run = next(b for b in at.button if b.label == "Run")
    assert not run.disabled, (method, errors)
    spend = [t for t in at.toggle if t.label.startswith("Spend exactly")]
    if method == "hw_dpfl":
        assert spend and not spend[0].disabled and spend[0].value
