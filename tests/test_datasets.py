"""Datasets (METHODS section 7): loading, caching, and failing clearly when offline.

MNIST and Fashion-MNIST are read from the original files in the shared data folder
(``$FEDCORE_TEST_RAW_DATA``, default ``../shared/data`` beside the repository; those tests skip when it is
absent). CIFAR-10 and Covertype are not available offline, so the tests write a few
rows in their real on-disk formats and load them through the real loaders.
"""
from __future__ import annotations

import gzip
import os
import pickle
import shutil
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import joblib
import numpy as np
import pytest
import torch

from fedcore.data import DATASETS, Dataset, data_root, load_dataset
from fedcore.data import idx
from fedcore.data.cache import CACHE_DIR
from fedcore.data.root import DOWNLOAD_TIMEOUT_S, downloads_allowed
from fedcore.data.vision import CIFAR10_MEAN, CIFAR10_STD, load_cifar10
from fedcore.errors import ConfigError, DatasetUnavailable

RAW = Path(os.environ.get("FEDCORE_TEST_RAW_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="module")
def raw_copy(tmp_path_factory):
    """``raw_copy("MNIST")``: a writable root holding a copy of ``RAW/MNIST/raw/*.gz``,
    made once per module, as a user would set one up. (Copies, not hard links: a link
    would let a stray write through to the shared originals.)"""
    made: dict[str, Path] = {}

    def copy(folder: str) -> Path:
        source = RAW / folder / "raw"
        if not source.is_dir():
            pytest.skip(f"no raw {folder} files under {RAW}")
        if folder not in made:
            root = tmp_path_factory.mktemp(folder)
            (root / folder / "raw").mkdir(parents=True)
            for archive in source.glob("*.gz"):
                shutil.copyfile(archive, root / folder / "raw" / archive.name)
            made[folder] = root
        return made[folder]

    return copy


# --- digits, the registry, the root -------------------------------------------------------

def test_digits_loads_offline_with_a_stable_stratified_split(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    ds = load_dataset("digits", root=tmp_path)
    assert (ds.x_train.shape, ds.x_test.shape) == ((1437, 1, 8, 8), (360, 1, 8, 8))
    assert ds.x_train.dtype == torch.float32 and ds.y_train.dtype == torch.int64
    assert ds.input_shape == (1, 8, 8) and ds.num_classes == 10
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    assert torch.bincount(ds.y_test, minlength=10).min() >= 35  # stratified: ~36 per digit
    cached = tmp_path / CACHE_DIR / "digits-split-v1.pt"
    assert cached.is_file(), "the split is cached so the next process skips scikit-learn"
    again = DATASETS.get("digits")(tmp_path, False)  # a fresh load from the cached split
    assert torch.equal(again.x_test, ds.x_test) and torch.equal(again.y_train, ds.y_train)
    cached.write_bytes(b"not a tensor file")  # a damaged cache is rebuilt, not trusted
    rebuilt = DATASETS.get("digits")(tmp_path, False)
    assert torch.equal(rebuilt.x_train, ds.x_train) and torch.equal(rebuilt.y_test, ds.y_test)


def test_digits_works_where_the_cache_cannot_be_written_without_warnings(tmp_path):
    import warnings

    root = tmp_path / "a-file-not-a-folder"  # unwritable even for root, unlike chmod
    root.write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = DATASETS.get("digits")(root, False)
    assert ds.x_train.shape == (1437, 1, 8, 8)


def test_same_name_root_and_device_return_the_same_object(tmp_path):
    a = load_dataset("digits", root=tmp_path)
    assert load_dataset("digits", device=torch.device("cpu"), root=tmp_path) is a
    assert load_dataset("digits", root=tmp_path / "other") is not a


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_load_on_cuda_moves_every_tensor(tmp_path):
    ds = load_dataset("digits", device="cuda", root=tmp_path)
    assert ds.x_train.is_cuda and ds.y_test.is_cuda
    assert torch.equal(ds.x_train.cpu(), load_dataset("digits", root=tmp_path).x_train)


def test_unknown_dataset_names_the_known_ones():
    with pytest.raises(ConfigError, match="cifar10, covertype, digits, fashion_mnist, mnist"):
        load_dataset("imagenet")


def test_every_dataset_has_a_summary_and_a_paper():
    assert DATASETS.names() == ["cifar10", "covertype", "digits", "fashion_mnist", "mnist"]
    assert all(e.summary and e.paper for e in DATASETS.entries())


def test_every_dataset_declares_its_facts_where_it_registers_them(tmp_path):
    """Size, shape and classes come from the dataset's own registration (no table elsewhere),
    read without torch; the digits loader gives exactly its declared figures."""
    import subprocess
    import sys

    from fedcore.data import dataset_facts

    assert all(e.facts is not None for e in DATASETS.entries())
    ds, facts = load_dataset("digits", root=tmp_path), dataset_facts("digits")
    assert (len(ds.y_train), len(ds.y_test), ds.input_shape, ds.num_classes) == \
        (facts.train_size, facts.test_size, facts.input_shape, facts.num_classes)
    assert dataset_facts("imagenet") is None
    code = ("import sys; from fedcore.data import DATASETS, dataset_facts; "
            "[dataset_facts(n) for n in DATASETS.names()]; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_data_root_comes_from_fedcore_data_else_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDCORE_DATA", str(tmp_path / "mine"))
    assert data_root() == tmp_path / "mine"
    monkeypatch.delenv("FEDCORE_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data_root() == tmp_path / "xdg" / "fedcore" / "data"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_root() == tmp_path / "home" / ".cache" / "fedcore" / "data"


def test_fedcore_offline_switches_downloads_off_unless_asked_explicitly(monkeypatch):
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    assert downloads_allowed(None) is False and downloads_allowed(True) is True
    monkeypatch.delenv("FEDCORE_OFFLINE")
    assert downloads_allowed(None) is True and downloads_allowed(False) is False


def test_dataset_repr_is_one_short_line(tmp_path):
    assert repr(load_dataset("digits", root=tmp_path)) == (
        "Dataset('digits', train=1437, test=360, input_shape=(1, 8, 8), num_classes=10, "
        "device='cpu')")


# --- MNIST and Fashion-MNIST from the original files --------------------------------------

@pytest.mark.parametrize("name, folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")])
def test_mnist_family_loads_the_original_files_offline(name, folder, raw_copy, monkeypatch):
    monkeypatch.setenv("FEDCORE_DATA", str(raw_copy(folder)))
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    ds = load_dataset(name)
    assert (len(ds.y_train), len(ds.y_test)) == (60000, 10000)
    assert ds.x_train.shape[1:] == (1, 28, 28) and ds.input_shape == (1, 28, 28)
    assert ds.y_train.unique().tolist() == list(range(10))
    assert abs(ds.x_train.mean().item()) < 0.01 and abs(ds.x_train.std().item() - 1) < 0.01


def test_decoded_tensors_are_cached_on_disk_for_the_next_process(raw_copy, tmp_path):
    root = raw_copy("MNIST")
    first = load_dataset("mnist", root=root, download=False)
    cache = root / CACHE_DIR / "mnist-v1.pt"
    assert cache.is_file()
    (tmp_path / CACHE_DIR).mkdir()
    shutil.copyfile(cache, tmp_path / CACHE_DIR / cache.name)  # a root with only the cache
    second = DATASETS.get("mnist")(tmp_path, False)  # what the next process runs
    assert second is not first
    assert torch.equal(second.x_train, first.x_train) and torch.equal(second.y_test, first.y_test)


@pytest.mark.parametrize("folder", ["MNIST", "FashionMNIST"])
def test_present_idx_files_read_as_torchvision_decodes_them_without_importing_it(folder, raw_copy, tmp_path):
    """Issue 55 §5: present files are read by :mod:`fedcore.data.idx` (torchvision's import is
    2.5 CPU-s); the bytes are torchvision's, image for image and label for label."""
    import subprocess
    import sys

    from torchvision import datasets

    root = raw_copy(folder)
    code = ("import sys; from fedcore.data.vision import _idx_images; from pathlib import Path; "
            f"t = _idx_images('x', {folder!r}, Path(sys.argv[1]), False); "
            "print(sorted(t), 'torchvision' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "FEDCORE_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "not available" in out.stderr   # tmp_path has no files: refused
    shutil.copytree(root / folder, tmp_path / folder)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    assert out.stdout.split() == ["['x_test',", "'x_train',", "'y_test',", "'y_train']", "False"], out.stderr
    ours = torch.load(tmp_path / CACHE_DIR / "x-v1.pt", weights_only=True)
    extracted = tmp_path / "tv"
    shutil.copytree(root / folder, extracted / folder)
    for archive in (extracted / folder / "raw").glob("*.gz"):
        archive.with_suffix("").write_bytes(gzip.decompress(archive.read_bytes()))
    for train in (True, False):
        theirs = getattr(datasets, folder)(str(extracted), train=train, download=False)
        split = "train" if train else "test"
        assert torch.equal(ours[f"x_{split}"][:, 0], theirs.data)
        assert torch.equal(ours[f"y_{split}"], theirs.targets) and ours[f"y_{split}"].dtype == torch.int64


def test_a_damaged_idx_archive_is_refused_naming_the_file(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in idx.FILES.values():
        (raw / f"{name}.gz").write_bytes(gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 2, 5])))  # 1 of 2 bytes
    with pytest.raises(DatasetUnavailable, match="'mnist'.*train-images-idx3-ubyte.gz is not an IDX file"):
        load_dataset("mnist", root=tmp_path, download=False)
    (raw / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b not gzip")
    (raw / "train-images-idx3-ubyte.gz").unlink()
    (raw / "train-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9]))
    (raw / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 1, 4])))
    (raw / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(bytes([0, 0, 8, 3] + [0, 0, 0, 1] * 3 + [2])))
    with pytest.raises(DatasetUnavailable, match="t10k-labels-idx1-ubyte.gz is a damaged archive"):
        load_dataset("mnist", root=tmp_path, download=False)


# --- offline failures ---------------------------------------------------------------------

@pytest.mark.parametrize("name, expected_file", [
    ("mnist", "train-images-idx3-ubyte.gz"), ("fashion_mnist", "FashionMNIST/raw/"),
    ("cifar10", "data_batch_1"), ("covertype", "covertype/samples_py3")])
def test_missing_dataset_offline_fails_fast_naming_files_and_env(name, expected_file, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv("FEDCORE_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(DatasetUnavailable) as err:
        load_dataset(name, root=tmp_path)
    assert time.monotonic() - start < 5
    msg = str(err.value)
    for part in (repr(name), expected_file, "FEDCORE_DATA", str(tmp_path.resolve())):
        assert part in msg


@pytest.mark.filterwarnings("ignore:Retry downloading")  # scikit-learn retries once
@pytest.mark.parametrize("name", ["mnist", "cifar10", "covertype"])
def test_failed_download_is_bounded_by_a_timeout_and_reported(name, tmp_path, monkeypatch):
    timeouts = []

    def no_network(*args, **kwargs):
        timeouts.append(socket.getdefaulttimeout())
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    with pytest.raises(DatasetUnavailable, match="download failed"):
        load_dataset(name, root=tmp_path, download=True)
    assert timeouts and set(timeouts) == {DOWNLOAD_TIMEOUT_S}
    assert socket.getdefaulttimeout() is None, "the timeout is restored afterwards"


# --- CIFAR-10 and Covertype in their on-disk formats ---------------------------------------

def write_tiny_cifar10(root: Path, per_batch: int = 3) -> None:
    """``cifar-10-batches-py`` as torchvision reads it: pickled dicts with ``data``
    (uint8 ``[n, 3072]``: the 1024 red, then green, then blue pixels, row-major) and
    ``labels``, plus ``batches.meta``. The originals are Python 2 pickles whose keys
    read as ``"data"`` under torchvision's ``encoding="latin1"`` (``b"data"`` under
    ``encoding="bytes"``); Python 3 str keys read the same way."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for b, name in enumerate(names):
        ids = b * per_batch + np.arange(per_batch)
        red = (np.arange(1024)[None, :] + ids[:, None]) % 256
        green = np.repeat(7 * ids[:, None], 1024, axis=1)
        blue = np.full((per_batch, 1024), 255)
        data = np.concatenate([red, green, blue], axis=1).astype(np.uint8)
        batch = {"batch_label": name, "labels": (ids % 10).tolist(), "data": data,
                 "filenames": [f"img_{i}.png" for i in ids]}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
    meta = {"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                            "horse", "ship", "truck"], "num_cases_per_batch": per_batch}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))


def test_cifar10_checks_md5_by_default_so_altered_files_are_refused(tmp_path):
    write_tiny_cifar10(tmp_path)
    with pytest.raises(DatasetUnavailable, match="'cifar10'.*corrupted"):
        load_dataset("cifar10", root=tmp_path, download=False)


def test_tiny_cifar10_in_the_real_format_loads_through_torchvision(tmp_path):
    write_tiny_cifar10(tmp_path)
    ds = load_cifar10(tmp_path, download=False, verify=False)
    assert (ds.x_train.shape, ds.x_test.shape) == ((15, 3, 32, 32), (3, 3, 32, 32))
    assert ds.y_train.tolist() == [i % 10 for i in range(15)] and ds.y_test.tolist() == [5, 6, 7]
    pixels = ds.x_train[4] * torch.tensor(CIFAR10_STD).view(3, 1, 1) \
        + torch.tensor(CIFAR10_MEAN).view(3, 1, 1)
    expected_red = ((torch.arange(1024) + 4) % 256).view(32, 32) / 255.0
    torch.testing.assert_close(pixels[0], expected_red)  # row-major 32x32 planes
    torch.testing.assert_close(pixels[1], torch.full((32, 32), 28 / 255.0))
    torch.testing.assert_close(pixels[2], torch.ones(32, 32))
    assert not (tmp_path / CACHE_DIR).exists(), "unverified files must not feed the cache"


def write_tiny_covertype(root: Path, per_class: int = 20) -> None:
    """``covertype/samples_py3`` (float64 ``[n, 54]``) and ``targets_py3`` (int32 labels
    1..7), joblib dumps as ``sklearn.datasets.fetch_covtype`` writes them."""
    rng = np.random.default_rng(0)
    n = 7 * per_class
    x = np.zeros((n, 54))
    x[:, :10] = rng.normal(2000, 300, size=(n, 10))  # elevation, slope, distances...
    x[np.arange(n), 10 + rng.integers(0, 4, n)] = 1  # wilderness area (one-hot)
    x[np.arange(n), 14 + rng.integers(0, 20, n)] = 1  # soil type (one-hot, some unused)
    y = np.repeat(np.arange(1, 8), per_class).astype(np.int32)
    (root / "covertype").mkdir(parents=True)
    joblib.dump(x, root / "covertype" / "samples_py3", compress=9)
    joblib.dump(y, root / "covertype" / "targets_py3", compress=9)


def test_tiny_covertype_loads_standardised_with_labels_from_zero(tmp_path):
    write_tiny_covertype(tmp_path)
    ds = load_dataset("covertype", root=tmp_path, download=False)
    assert (ds.x_train.shape, ds.x_test.shape) == ((112, 54), (28, 54))  # 20% held out
    assert ds.input_shape == (54,) and ds.num_classes == 7
    assert torch.bincount(ds.y_test).tolist() == [4] * 7  # stratified
    used = ds.x_train.std(dim=0) > 0
    torch.testing.assert_close(ds.x_train.mean(dim=0), torch.zeros(54), atol=1e-5, rtol=0)
    torch.testing.assert_close(ds.x_train[:, used].std(dim=0, unbiased=False),
                               torch.ones(int(used.sum())), atol=1e-4, rtol=0)
    assert int(used.sum()) >= 30 and torch.all(ds.x_test[:, ~used] == 0)
    assert isinstance(ds, Dataset)
