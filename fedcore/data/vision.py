"""Image datasets read by torchvision: MNIST, Fashion-MNIST and CIFAR-10.

Each loader finds (or lets torchvision download) the original files under the data
root, decodes them to ``uint8`` arrays (caching them in ``fedcore_cache/`` so the next
process skips the decoding) and normalises them per channel with the usual constants.
MNIST-format files already present are read by :mod:`fedcore.data.idx`, as they are; CIFAR-10's
archive, when present and matching torchvision's md5, is extracted here first, so the original
``.gz`` / ``.tar.gz`` files are enough even offline. torchvision is imported only to download
or to read CIFAR-10 (2.5 CPU-s of start-up, most of it torch._dynamo pulled in by
``torchvision.ops``); a cached load does not touch it.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from . import idx
from .base import Dataset, DatasetFacts
from .cache import Tensors, cached_tensors
from .registry import DATASETS
from .root import fetching

if TYPE_CHECKING:
    import torch

CACHE_VERSION = "v1"
MNIST = DatasetFacts(train_size=60_000, input_shape=(1, 28, 28), num_classes=10, test_size=10_000, files=(
    "MNIST/raw/train-images-idx3-ubyte", "MNIST/raw/train-images-idx3-ubyte.gz", "fedcore_cache/mnist-v1.pt"))
FASHION_MNIST = DatasetFacts(train_size=60_000, input_shape=(1, 28, 28), num_classes=10, test_size=10_000, files=(
    "FashionMNIST/raw/train-images-idx3-ubyte", "FashionMNIST/raw/train-images-idx3-ubyte.gz",
    "fedcore_cache/fashion_mnist-v1.pt"))
CIFAR10 = DatasetFacts(train_size=50_000, input_shape=(3, 32, 32), num_classes=10, test_size=10_000, files=(
    "cifar-10-batches-py/data_batch_1", "cifar-10-python.tar.gz", "fedcore_cache/cifar10-v1.pt"))


def _extract_verified(archive: Path, md5: str, target: Path, to: Path) -> None:
    """Extract ``archive`` into ``to`` if ``target`` is missing and the md5 matches."""
    from torchvision.datasets.utils import check_integrity, extract_archive

    if not target.exists() and check_integrity(str(archive), md5):
        extract_archive(str(archive), str(to))


def _normalised(name: str, facts: DatasetFacts, raw: Tensors, mean, std) -> Dataset:
    """Scale ``uint8 [n, c, h, w]`` images to [0, 1], then ``(x - mean) / std`` per channel.

    Computed as ``(x - 255 mean) / (255 std)`` in place: one float32 allocation.
    """
    import torch

    mean = 255.0 * torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1)
    std = 255.0 * torch.tensor(std, dtype=torch.float32).view(-1, 1, 1)

    def scale(x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float32).sub_(mean).div_(std)

    return Dataset(name, scale(raw["x_train"]), raw["y_train"].long(),
                   scale(raw["x_test"]), raw["y_test"].long(),
                   num_classes=facts.num_classes, input_shape=facts.input_shape)


def _idx_images(name: str, class_name: str, root: Path, download: bool) -> Tensors:
    """Decoded MNIST-format (IDX) images ``[n, 1, 28, 28]`` and labels, cached; read by
    :mod:`fedcore.data.idx` when the four files are present, else by ``torchvision.datasets``'
    ``class_name``, which downloads them."""
    raw_folder = root / class_name / "raw"
    expected = f"{class_name}/raw/" + ", ".join(f"{f}.gz" for f in idx.FILES.values())

    def decode() -> Tensors:
        import torch

        with fetching(name, root, expected, download):
            files = idx.present(raw_folder)
            if files is not None:
                images = {key: torch.from_numpy(idx.read_idx(path, 3 if key.startswith("x") else 1))
                          for key, path in files.items()}
                return {key: t.unsqueeze(1) if key.startswith("x") else t.long() for key, t in images.items()}
            from torchvision import datasets

            cls = getattr(datasets, class_name)
            for filename, md5 in cls.resources:
                archive = raw_folder / filename
                _extract_verified(archive, md5, archive.with_suffix(""), raw_folder)
            train = cls(str(root), train=True, download=download)
            test = cls(str(root), train=False, download=download)
        return {"x_train": train.data.unsqueeze(1), "y_train": train.targets,
                "x_test": test.data.unsqueeze(1), "y_test": test.targets}

    return cached_tensors(root, f"{name}-{CACHE_VERSION}", decode)


@DATASETS.register(
    "mnist",
    summary="MNIST handwritten digits, 60000/10000 images 1x28x28, 10 classes (torchvision).",
    paper="PLDP-FL (seed 000), LDP-FL (seed 001), HW-DPFL (seed 002), KDP-FL (seed 003), ULDP-FED (seed 004)",
    facts=MNIST,
)
def load_mnist(root: Path, download: bool = True) -> Dataset:
    """MNIST (LeCun et al. 1998), normalised with mean 0.1307, std 0.3081.

    Files: ``<root>/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz``.
    """
    return _normalised("mnist", MNIST, _idx_images("mnist", "MNIST", root, download), (0.1307,), (0.3081,))


@DATASETS.register(
    "fashion_mnist",
    summary="Fashion-MNIST clothing images, 60000/10000 images 1x28x28, 10 classes (torchvision).",
    paper="PLDP-FL (seed 000), LDP-FL (seed 001), KDP-FL (seed 003)",
    facts=FASHION_MNIST,
)
def load_fashion_mnist(root: Path, download: bool = True) -> Dataset:
    """Fashion-MNIST (Xiao et al. 2017), normalised with mean 0.2860, std 0.3530.

    Files: ``<root>/FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz``.
    """
    raw = _idx_images("fashion_mnist", "FashionMNIST", root, download)
    return _normalised("fashion_mnist", FASHION_MNIST, raw, (0.2860,), (0.3530,))


@lru_cache(maxsize=None)
def _cifar10_reader(verify: bool) -> type:
    """torchvision's CIFAR10, or (``verify=False``) a subclass with every md5 set to ``None``.

    torchvision's own ``check_integrity(path, None)`` then only checks that each file
    exists; all reading stays torchvision's.
    """
    from torchvision.datasets import CIFAR10

    if verify:
        return CIFAR10

    class _UnverifiedCIFAR10(CIFAR10):
        train_list = [[name, None] for name, _ in CIFAR10.train_list]
        test_list = [[name, None] for name, _ in CIFAR10.test_list]
        meta = {**CIFAR10.meta, "md5": None}

    return _UnverifiedCIFAR10


CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)


@DATASETS.register(
    "cifar10",
    summary="CIFAR-10 colour images, 50000/10000 images 3x32x32, 10 classes (torchvision).",
    paper="LDP-FL (seed 001), KDP-FL (seed 003), ULDP-FED (seed 004)",
    facts=CIFAR10,
)
def load_cifar10(root: Path, download: bool = True, verify: bool = True) -> Dataset:
    """CIFAR-10 (Krizhevsky 2009), normalised per channel.

    Mean ``(0.4914, 0.4822, 0.4465)`` and std ``(0.2470, 0.2435, 0.2616)`` are the
    training-set pixel statistics (the often-copied ``(0.2023, 0.1994, 0.2010)`` is
    the mean of per-image stds, not the pixel std).

    Files: ``<root>/cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta}``,
    or ``<root>/cifar-10-python.tar.gz``, which is extracted there.

    Parameters
    ----------
    root : Path
        The data root.
    download : bool
        Try to download the archive when the files are missing.
    verify : bool
        Check the md5 of every batch file against torchvision's published checksums
        (the default). ``False`` only checks that the files exist, so that small files
        written in the real on-disk format (pickled dicts with ``b"data"`` uint8
        ``[n, 3072]`` and ``b"labels"``) load through the real torchvision reader; this
        is what the tests use. We chose an explicit knob over monkeypatching
        torchvision's private integrity check from the tests, which would break
        silently when torchvision moves it. Unverified loads bypass the on-disk tensor
        cache, so they can never stand in for a verified load later.
    """

    def decode() -> Tensors:
        import torch

        cls = _cifar10_reader(verify)
        files = [f for f, _ in cls.train_list + cls.test_list] + [cls.meta["filename"]]
        expected = f"{cls.base_folder}/" + ", ".join(files) + f" (or {cls.filename}, extracted there)"
        with fetching("cifar10", root, expected, download):
            _extract_verified(root / cls.filename, cls.tgz_md5,
                              root / cls.base_folder / cls.test_list[0][0], root)
            train = cls(str(root), train=True, download=download)
            test = cls(str(root), train=False, download=download)

        def images(part) -> torch.Tensor:  # torchvision holds [n, h, w, c]
            return torch.from_numpy(part.data).permute(0, 3, 1, 2).contiguous()

        return {"x_train": images(train), "y_train": torch.tensor(train.targets),
                "x_test": images(test), "y_test": torch.tensor(test.targets)}

    raw = cached_tensors(root, f"cifar10-{CACHE_VERSION}", decode) if verify else decode()
    return _normalised("cifar10", CIFAR10, raw, CIFAR10_MEAN, CIFAR10_STD)
