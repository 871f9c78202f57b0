"""Figures a student reads: no empty panel without a word, no signal flattened by another's scale."""
from __future__ import annotations

import math

import pandas as pd

from pages.components.charts import accuracy_vs_epsilon, signals


def test_runs_without_noise_are_named_not_silently_dropped_from_accuracy_vs_epsilon():
    points = pd.DataFrame({"group": ["fedavg", "dp_fedavg"], "epsilon": [math.inf, 3.0], "accuracy": [0.97, 0.8],
                           "label": ["a", "b"]})
    fig = accuracy_vs_epsilon(points, "headline ε", "r")
    assert [list(t.x) for t in fig.data] == [[3.0]]
    assert fig.data[0].marker.color != "#1f77b4"            # dp_fedavg keeps its colour (the second)
    assert fig.layout.annotations[0].text == "1 run without noise (ε = ∞) not drawn"
    only = accuracy_vs_epsilon(points.iloc[:1], "headline ε", "r")
    assert not only.data and "not drawn" in only.layout.annotations[0].text
    assert not accuracy_vs_epsilon(points.iloc[1:], "headline ε", "r").layout.annotations


def test_each_method_signal_has_its_own_panel_titled_in_words():
    table = pd.DataFrame({"round": [1, 2], "signal.eps_round": [418.07, 418.07], "signal.recall_rate": [0.0, 0.1],
                          "signal.some_new_signal": [1.0, 2.0]})
    fig = signals(table, 2, "r")
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["ε allotted this round (mean)", "share of users who recalled", "some new signal"]
    assert {t.yaxis for t in fig.data} == {"y", "y2", "y3"} and not fig.layout.showlegend
