"""Adding a method is one module plus one registration: a throwaway mechanism, aggregator
and partitioner registered here appear in `fedcore list`, the Playground's pickers (with
their option forms, from their declared constraints), the Mechanisms page and a real run,
with no other edit."""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from fedcore.aggregators import AGGREGATORS
from fedcore.aggregators.mean import MeanAggregator
from fedcore.cli import main
from fedcore.constraints import Interval, setting
from fedcore.mechanisms import MECHANISMS
from fedcore.mechanisms.base import Mechanism, Upload
from fedcore.partition import PARTITIONERS
from fedcore.partition.iid import iid
from fedcore.partition.registry import register_partitioner

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class JitterOptions:
    """Options of the throwaway mechanism."""

    scale: float = setting(0.5, Interval(float, 0, 10, closed="right"), "noise scale")


class JitterMechanism(Mechanism):
    """Adds N(0, scale^2) with no claim at all (a test fixture, not a method)."""

    Options = JitterOptions
    threat_model = "local"

    def privatize(self, updates, clients, round, gen) -> Upload:
        noise = torch.randn(updates.shape, generator=gen, device=updates.device) * self.options.scale
        return Upload(values=updates + noise, clients=clients, spent=torch.zeros(len(clients)))


class HalfMeanAggregator(MeanAggregator):
    """The mean, halved (a test fixture)."""

    def aggregate(self, upload, round):
        out = super().aggregate(upload, round)
        return type(out)(out.delta / 2, out.weights)


@dataclass(frozen=True)
class HalvesOptions:
    """Options of the throwaway partitioner."""

    repeat: int = setting(1, Interval(int, 1, 5), "unused knob")


def halves(labels, num_clients, num_classes, rng, repeat: int = 1):
    return iid(labels, num_clients, num_classes, rng)


@contextmanager
def registered():
    MECHANISMS.register("jitter_test", summary="Throwaway test mechanism.")(JitterMechanism)
    AGGREGATORS.register("halfmean_test", summary="Throwaway test aggregator.")(HalfMeanAggregator)
    register_partitioner("halves_test", summary="Throwaway test partitioner.", options=HalvesOptions)(halves)
    try:
        yield
    finally:
        for reg, name in ((MECHANISMS, "jitter_test"), (AGGREGATORS, "halfmean_test"),
                          (PARTITIONERS, "halves_test")):
            reg._entries.pop(name, None)


@pytest.fixture
def throwaway(tmp_path):
    old = os.environ.get("FEDCORE_STORE")
    os.environ["FEDCORE_STORE"] = str(tmp_path / "store")
    with registered():
        yield
    if old is None:
        os.environ.pop("FEDCORE_STORE", None)
    else:
        os.environ["FEDCORE_STORE"] = old


def test_throwaway_components_are_listed(throwaway, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "jitter_test" in out and "halfmean_test" in out and "halves_test" in out


def test_throwaway_components_train_from_the_cli(throwaway, capsys):
    assert main(["run", "--set", "rounds=2", "--set", "privacy.mechanism=jitter_test",
                 "--set", "privacy.mechanism_options.scale=0.01", "--set", "privacy.aggregator=halfmean_test",
                 "--set", "partition.kind=halves_test", "--set", "partition.repeat=2"]) == 0
    assert "finished: 2 rounds" in capsys.readouterr().out
    assert main(["run", "--set", "privacy.mechanism=jitter_test",
                 "--set", "privacy.mechanism_options.scale=-1"]) == 2
    assert "privacy.mechanism_options.scale: got -1" in capsys.readouterr().err


def test_throwaway_components_appear_in_the_playground_pickers(throwaway):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["preset"] = "demo"
    at.query_params["privacy.mechanism"] = '"jitter_test"'
    at.query_params["privacy.aggregator"] = '"halfmean_test"'
    at.query_params["partition.kind"] = '"halves_test"'
    at.run()
    assert not at.exception
    pickers = {s.label: s for s in at.selectbox}
    assert "jitter_test" in pickers["Mechanism (client side)"].options
    assert "halfmean_test" in pickers["Aggregator (server side)"].options
    assert "halves_test" in pickers["Partition"].options
    assert pickers["Mechanism (client side)"].value == "jitter_test"
    labels = [w.label for w in at.number_input]
    assert "scale" in labels and "repeat" in labels  # option forms from the declared options


def test_throwaway_mechanism_is_on_the_mechanisms_page_without_a_borrowed_law(throwaway):
    at = AppTest.from_file(str(ROOT / "pages" / "mechanisms.py"), default_timeout=60)
    at.query_params["mechanism"] = "jitter_test"
    at.run()
    assert not at.exception
    assert at.selectbox(key="mech.name").value == "jitter_test"
    assert "supplies no one-number law" in at.info[0].value
