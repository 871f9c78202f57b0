"""Partitioners (METHODS section 6): a specification of what each split guarantees."""
from __future__ import annotations

import numpy as np
import pytest

from fedcore.errors import ConfigError, PartitionError
from fedcore.partition import PARTITIONERS, Partition, make_partition

# Every parameter of PartitionConfig, as the engine passes them.
CONFIG = dict(alpha=0.5, min_size=10, shards_per_client=2, classes_per_client=2,
              iid_fraction=0.8, size_cv=0.55)
MNIST_CLASS_SIZES = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]


@pytest.fixture(scope="module")
def labels() -> np.ndarray:
    """3000 shuffled labels over 10 unevenly sized classes."""
    return np.random.default_rng(123).permutation(
        np.repeat(np.arange(10), [200, 250, 300, 350, 400, 300, 250, 350, 300, 300]))


@pytest.fixture(scope="module")
def mnist_labels() -> np.ndarray:
    return np.repeat(np.arange(10), MNIST_CLASS_SIZES)


def split(kind: str, labels: np.ndarray, num_clients: int = 20, seed: int = 0, **params) -> Partition:
    return make_partition(kind, labels, num_clients, num_classes=10, seed=seed, **{**CONFIG, **params})


def classes_held(p: Partition) -> np.ndarray:
    return (p.label_counts > 0).sum(axis=1)


# --- properties every partitioner shares ------------------------------------------------

@pytest.mark.parametrize("kind", PARTITIONERS.names())
def test_clients_are_disjoint_and_label_counts_match_a_recount(kind, labels):
    p = split(kind, labels)
    assert p.num_clients == 20 and len(p.sizes) == 20
    assert p.sizes.tolist() == [len(ix) for ix in p.indices]
    rows = np.concatenate(p.indices)
    assert len(np.unique(rows)) == len(rows), "a sample was given to two clients"
    assert rows.min() >= 0 and rows.max() < len(labels)
    recount = np.stack([np.bincount(labels[ix], minlength=10) for ix in p.indices])
    np.testing.assert_array_equal(p.label_counts, recount)
    assert p.label_counts.shape == (20, 10)


@pytest.mark.parametrize("kind", PARTITIONERS.names())
def test_same_seed_same_partition_other_seed_other_partition(kind, labels):
    a, b, c = split(kind, labels, seed=7), split(kind, labels, seed=7), split(kind, labels, seed=8)
    assert all(np.array_equal(x, y) for x, y in zip(a.indices, b.indices))
    assert any(not np.array_equal(x, y) for x, y in zip(a.indices, c.indices))


def test_make_partition_passes_each_partitioner_only_its_own_parameters(labels):
    # kclass takes size_cv, mixed does not: both accept the full config
    assert classes_held(split("kclass", labels, size_cv=0.3)).tolist() == [2] * 20
    assert split("mixed", labels, size_cv=0.3).num_clients == 20


def test_unknown_partitioner_lists_the_known_ones(labels):
    with pytest.raises(ConfigError, match="dirichlet, iid, kclass, mixed, shards"):
        make_partition("sorted", labels, 5, num_classes=10, seed=0)


def test_a_misspelt_parameter_is_an_error_not_ignored(labels):
    with pytest.raises(ConfigError, match="partition.alhpa.*known: alpha"):
        make_partition("dirichlet", labels, 5, num_classes=10, seed=0, alhpa=0.1)


def test_more_clients_than_samples_says_how_many_are_possible():
    with pytest.raises(PartitionError, match="use at most 5 clients"):
        make_partition("iid", np.arange(5) % 2, 6, num_classes=2, seed=0)


def test_labels_outside_the_class_range_are_rejected():
    with pytest.raises(PartitionError, match=r"0\.\.1"):
        make_partition("iid", np.array([0, 1, 2]), 2, num_classes=2, seed=0)


# --- iid ------------------------------------------------------------------------------

def test_iid_uses_every_sample_in_sizes_differing_by_at_most_one(labels):
    p = split("iid", labels, num_clients=7)
    assert p.sizes.sum() == len(labels)
    assert p.sizes.max() - p.sizes.min() <= 1


# --- dirichlet ------------------------------------------------------------------------

def test_dirichlet_large_alpha_gives_every_client_the_global_label_mix():
    labels = np.repeat(np.arange(10), 1000)
    p = make_partition("dirichlet", labels, 10, num_classes=10, seed=0, alpha=1000.0)
    mix = p.label_counts / p.label_counts.sum(axis=1, keepdims=True)
    assert np.abs(mix - 0.1).max() < 0.03
    assert p.sizes.sum() == len(labels)


def test_dirichlet_tiny_alpha_puts_each_class_almost_entirely_on_one_client():
    labels = np.repeat(np.arange(50), 100)
    p = make_partition("dirichlet", labels, 10, num_classes=50, seed=0, alpha=0.01, min_size=0)
    top_share = p.label_counts.max(axis=0) / p.label_counts.sum(axis=0)
    assert top_share.mean() > 0.85
    assert np.median(top_share) >= 0.99
    mixed = make_partition("dirichlet", labels, 10, num_classes=50, seed=0, alpha=1000.0)
    assert (mixed.label_counts.max(axis=0) / 100).mean() < 0.25


def test_dirichlet_respects_min_size(labels):
    p = split("dirichlet", labels, alpha=0.3, min_size=40)
    assert p.sizes.min() >= 40


def test_dirichlet_min_size_failure_reports_smallest_size_and_what_to_change():
    labels = np.repeat(np.arange(10), 10)
    with pytest.raises(PartitionError) as err:
        make_partition("dirichlet", labels, 10, num_classes=10, seed=0, alpha=0.05, min_size=9)
    msg = str(err.value)
    for part in ("10 attempts", "smallest client had", "raise alpha", "lower min_size",
                 "fewer than 10 clients"):
        assert part in msg


def test_dirichlet_impossible_min_size_is_refused_before_sampling():
    with pytest.raises(PartitionError, match="lower min_size to at most 10"):
        make_partition("dirichlet", np.arange(100) % 10, 10, num_classes=10, seed=0, min_size=11)


@pytest.mark.parametrize("alpha", [0.0, -1.0])
def test_dirichlet_alpha_must_be_positive(alpha, labels):
    with pytest.raises(ConfigError, match="partition.alpha"):
        split("dirichlet", labels, alpha=alpha)


# --- shards ---------------------------------------------------------------------------

def test_shards_give_equal_sizes_and_at_most_shards_per_client_classes():
    labels = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 120))
    p = make_partition("shards", labels, 20, num_classes=10, seed=0, shards_per_client=3)
    shard_size = len(labels) // (20 * 3)  # 20: class sizes are multiples, shards are pure
    assert p.sizes.tolist() == [3 * shard_size] * 20
    assert classes_held(p).max() <= 3


def test_shards_of_uneven_classes_drop_the_remainder_and_may_straddle_two_labels(mnist_labels):
    p = make_partition("shards", mnist_labels, 100, num_classes=10, seed=0)
    assert p.sizes.tolist() == [600] * 100  # McMahan: 200 shards of 300
    assert classes_held(p).max() <= 4
    assert np.median(classes_held(p)) == 2


def test_shards_too_small_say_what_to_lower():
    with pytest.raises(PartitionError, match="lower shards_per_client or num_clients"):
        make_partition("shards", np.arange(30) % 3, 20, num_classes=3, seed=0)


# --- kclass ---------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 5])
def test_kclass_gives_every_client_exactly_k_classes(k, mnist_labels):
    p = make_partition("kclass", mnist_labels, 100, num_classes=10, seed=0, classes_per_client=k)
    assert classes_held(p).tolist() == [k] * 100


def test_kclass_sizes_match_kdp_fl_mean_600_std_328_on_mnist(mnist_labels):
    p = make_partition("kclass", mnist_labels, 100, num_classes=10, seed=0, size_cv=0.55)
    assert p.sizes.std() / p.sizes.mean() == pytest.approx(0.55, abs=0.02)
    assert p.sizes.mean() == pytest.approx(600, rel=0.05)
    assert p.sizes.sum() >= 0.95 * len(mnist_labels)


def test_kclass_cv_zero_gives_equal_sizes(labels):
    p = split("kclass", labels, size_cv=0.0)
    assert p.sizes.min() == p.sizes.max()


def test_kclass_more_classes_than_exist_is_a_config_error(labels):
    with pytest.raises(ConfigError, match="between 1 and num_classes = 10"):
        split("kclass", labels, classes_per_client=11)


def test_kclass_class_with_too_few_samples_for_its_holders():
    labels = np.array([0] * 50 + [1] * 50 + [2])
    with pytest.raises(PartitionError, match="lower num_clients or classes_per_client"):
        make_partition("kclass", labels, 40, num_classes=3, seed=0, classes_per_client=3)


# --- mixed ----------------------------------------------------------------------------

def test_mixed_makes_the_requested_fraction_of_clients_iid(mnist_labels):
    p = make_partition("mixed", mnist_labels, 100, num_classes=10, seed=0, iid_fraction=0.8)
    held = classes_held(p)
    assert (held == 10).sum() == 80 and (held == 2).sum() == 20
    # HW-DPFL: 100 clients x 600; here 587, as the scarcest digit (5) must stay IID too
    assert 580 <= p.sizes.min() and p.sizes.max() - p.sizes.min() <= 2
    iid_mix = p.label_counts[held == 10].sum(axis=0) / p.sizes[held == 10].sum()
    np.testing.assert_allclose(iid_mix, np.array(MNIST_CLASS_SIZES) / 60000, atol=0.002)


@pytest.mark.parametrize("fraction, classes", [(0.0, 2), (1.0, 10)])
def test_mixed_extremes_are_pure_kclass_or_pure_iid(fraction, classes, labels):
    assert set(classes_held(split("mixed", labels, iid_fraction=fraction))) == {classes}


def test_mixed_fraction_outside_unit_interval_is_rejected(labels):
    with pytest.raises(ConfigError, match="partition.iid_fraction"):
        split("mixed", labels, iid_fraction=1.5)
