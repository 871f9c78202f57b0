"""Poisson-sampled DP-SGD batches (fedcore.engine.plan): the sampling the record-level RDP
bound assumes. Batch sizes are Binomial(n, q), steps are those of the epoch mode, and local
training divides by the expected batch size."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedcore.config import LocalConfig
from fedcore.engine.plan import make_plan, pad_client_indices, poisson_steps


def _plan(sizes, local, seed=0):
    offsets = np.cumsum([0, *sizes])
    padded, counts = pad_client_indices([np.arange(a, b) for a, b in zip(offsets[:-1], offsets[1:])], "cpu")
    return make_plan(padded, counts, local, torch.Generator().manual_seed(seed), poisson=True), counts


def test_batch_sizes_are_binomial():
    """Chi-square goodness of fit of the drawn batch sizes against Binomial(n, B/n)."""
    from scipy import stats

    n, b = 200, 20
    local = LocalConfig(epochs=50, batch_size=b)
    plan, _ = _plan([n], local)
    sizes = plan.mask[0].sum(-1).numpy().astype(int)
    assert len(sizes) == 50 * math.ceil(n / b)                      # the epoch mode's number of steps
    q = b / n
    edges = list(range(8, 33))                                       # pool the thin tails
    observed = [np.sum(sizes < edges[0])] + [np.sum(sizes == k) for k in edges] + [np.sum(sizes > edges[-1])]
    expected_p = ([stats.binom.cdf(edges[0] - 1, n, q)] + [stats.binom.pmf(k, n, q) for k in edges]
                  + [stats.binom.sf(edges[-1], n, q)])
    chi2, p = stats.chisquare(observed, np.array(expected_p) * len(sizes))
    assert p > 1e-3, (chi2, p)
    assert abs(sizes.mean() - b) < 4 * math.sqrt(n * q * (1 - q) / len(sizes))
    assert sizes.std() > 1.0                                         # not a fixed batch size


def test_samples_are_drawn_independently_and_only_from_the_client():
    local = LocalConfig(epochs=3, batch_size=8)
    plan, counts = _plan([40, 10], local)
    assert torch.equal(plan.active.sum(1), poisson_steps(counts, local).float())
    for c, (lo, hi) in enumerate(((0, 40), (40, 50))):
        rows = plan.index[c][plan.mask[c].bool()]
        assert ((rows >= lo) & (rows < hi)).all()
        for s in range(plan.steps):
            taken = plan.index[c, s][plan.mask[c, s].bool()]
            assert len(set(taken.tolist())) == len(taken)            # without replacement within a step
    assert plan.expected.tolist() == pytest.approx([8.0, 8.0])       # q n = B (client 1: q = 0.8)


def test_dp_sgd_trains_on_poisson_batches_by_default_and_shuffled_batches_on_request():
    from fedcore.config import RunConfig
    from fedcore.engine.setup import prepare

    s = prepare(RunConfig(rounds=1, num_clients=3, privacy={"mechanism": "dp_sgd", "aggregator": "mean"}))
    assert s.mechanism.poisson_batches
    s = prepare(RunConfig(rounds=1, num_clients=3, privacy={"mechanism": "dp_sgd", "aggregator": "mean",
                                                            "mechanism_options": {"batching": "shuffle"}}))
    assert not s.mechanism.poisson_batches


def test_shuffled_dp_sgd_batches_say_their_bound_assumes_poisson_sampling():
    from fedcore.config import RunConfig
    from fedcore.engine import iter_run
    from fedcore.events import summarize

    shuffled = RunConfig(rounds=1, num_clients=3, privacy={"mechanism": "dp_sgd", "aggregator": "mean",
                                                           "mechanism_options": {"batching": "shuffle"}})
    assert "assumes Poisson sampling" in summarize(iter_run(shuffled)).caveat
    poisson = shuffled.with_overrides({"privacy.mechanism_options": {}})
    assert summarize(iter_run(poisson)).caveat == ""


def test_uldp_central_reading_with_recall_is_labelled_an_approximation():
    from fedcore.catalog import MECHANISMS

    cls = MECHANISMS.get("uldp_gaussian")
    assert "approximation" in cls.caveat_for(cls.parse_options({"recall": "sign"}))
    assert cls.caveat_for(cls.parse_options({"recall": "none", "decay": False})) == ""
    assert cls.caveat_for(cls.parse_options({"reading": "local"})) == ""
