"""benchmarks.pfl_compare: the synthetic FedAvg task, fedcore's side of it in a process of its own, and
(when pfl-research is importable, or ``PFL_PATH`` names a folder holding it) pfl's side against it."""
from __future__ import annotations

import os

import numpy as np
import pytest

from benchmarks.pfl_compare import Task, compare, make_data, measure, table_row

TINY = Task(clients=40, samples=20, cohort=8, rounds=5, features=32, test=400, separation=6.0)


def test_the_task_is_one_fixed_draw_with_equal_shards():
    a, b = make_data(TINY), make_data(TINY)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    x_train, y_train, x_test, y_test = a
    assert x_train.shape == (40 * 20, 32) and x_test.shape == (400, 32) and x_train.dtype == np.float32
    assert set(np.unique(y_train)) == set(range(10)) and y_test.max() < 10
    assert not np.array_equal(make_data(Task(**{**TINY.__dict__, "seed": 1}))[1], y_train)
    with pytest.raises(ValueError):
        Task(clients=10, cohort=11)


def test_fedcore_learns_the_task_and_counts_every_client_update():
    m = measure("fedcore", TINY, "cpu", threads=1, timeout=300)
    assert "error" not in m, m.get("error")
    assert m["updates"] == TINY.cohort * TINY.rounds and m["rounds"] == TINY.rounds
    assert m["later_updates"] == TINY.cohort * (TINY.rounds - 1)
    assert m["threads"] == 1 and m["device"] == "cpu"
    assert m["accuracy"] > 0.6                       # ten classes: chance is 0.1
    assert m["accuracy_rounds"] == [m["accuracy"]]   # evaluated after the last round only
    assert m["loop_s"] > 0 and m["loop_cpu_s"] >= 0 and m["updates_per_s"] == m["updates"] / m["loop_s"]
    assert table_row(m).startswith("| fedcore")


def test_equal_accuracy_is_within_one_point():
    row = lambda s, acc, ups: {"system": s, "updates_per_s": ups, "updates_per_cpu_s": ups, "accuracy": acc}  # noqa: E731
    c = compare([row("fedcore", 0.900, 100.0), row("pfl", 0.895, 10.0)])
    assert c["equal_accuracy"] and c["speedup_updates_per_s"] == pytest.approx(10.0)
    assert not compare([row("fedcore", 0.90, 100.0), row("pfl", 0.88, 10.0)])["equal_accuracy"]
    assert "equal_accuracy" not in compare([row("fedcore", 0.9, 1.0), {"system": "pfl", "error": "not installed"}])


@pytest.mark.slow   # pfl's first torch.optim optimizer imports torch._dynamo: about 20 s on a busy host
def test_pfl_trains_the_same_fedavg_as_fedcore():
    """Full-batch local steps and the whole population each round leave no sampling or shuffling to
    differ: from the same initial weights both systems must follow the same accuracy curve."""
    path = os.environ.get("PFL_PATH")
    if not path:
        pytest.importorskip("pfl")
    task = Task(**{**TINY.__dict__, "cohort": TINY.clients, "batch": TINY.samples, "epochs": 2,
                   "separation": 2.0, "eval_every": 1})
    f = measure("fedcore", task, "cpu", threads=1, timeout=300)
    p = measure("pfl", task, "cpu", threads=1, pfl_path=path, timeout=300)
    assert "error" not in f and "error" not in p, (f.get("error"), p.get("error"))
    assert p["updates"] == f["updates"] == task.clients * task.rounds
    assert len(p["accuracy_rounds"]) == len(f["accuracy_rounds"]) == task.rounds
    assert np.allclose(p["accuracy_rounds"], f["accuracy_rounds"], atol=2 / task.test)
    assert f["accuracy_rounds"][-1] > f["accuracy_rounds"][0]
