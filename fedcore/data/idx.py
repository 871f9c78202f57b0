"""The IDX files of MNIST and Fashion-MNIST, read with numpy when they are on disk.

The format is LeCun et al.'s ("THE IDX FILE FORMAT", yann.lecun.com/exdb/mnist): two zero bytes,
a type byte (``0x08``: unsigned byte), the number of dimensions, each dimension as a big-endian
int32, then the data. torchvision reads the same bytes (``read_sn3_pascalvincent_tensor``), but
importing torchvision costs 2.5 CPU-s here and 4 s on a fresh GPU host (its ``ops`` pull in
``torch._dynamo``), against 0.4 s for decompressing and reading the four files (issue 55 §5). So a
loader reads present files here and leaves torchvision the download, its md5 checks and its
extraction. The ``.gz`` archives are read as they are: gzip's CRC-32 stands for the md5 that
torchvision checks before extracting.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

FILES = {"x_train": "train-images-idx3-ubyte", "y_train": "train-labels-idx1-ubyte",
         "x_test": "t10k-images-idx3-ubyte", "y_test": "t10k-labels-idx1-ubyte"}
"""The four files of an MNIST-format dataset, by the key :mod:`fedcore.data.cache` stores them under."""
UBYTE = 0x08


def present(raw_folder: Path) -> dict[str, Path] | None:
    """Each of :data:`FILES` under ``raw_folder``, extracted or as its ``.gz``; None if any is missing."""
    found = {}
    for key, name in FILES.items():
        path = next((p for p in (raw_folder / name, raw_folder / f"{name}.gz") if p.is_file()), None)
        if path is None:
            return None
        found[key] = path
    return found


def read_idx(path: Path, ndim: int) -> np.ndarray:
    """The unsigned-byte array of an IDX file of ``ndim`` dimensions (``.gz`` or not).

    Raises ``OSError`` naming the file when it is not one (a wrong magic number, a size that does
    not match its header, a damaged archive), which :func:`fedcore.data.root.fetching` reports.

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "x-idx1-ubyte"
    >>> _ = f.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9]))
    >>> read_idx(f, 1)
    array([7, 8, 9], dtype=uint8)
    """
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise OSError(f"{path.name} is a damaged archive: {err}") from err
    head = 4 * (ndim + 1)
    if len(data) < head or data[:4] != bytes([0, 0, UBYTE, ndim]):
        raise OSError(f"{path.name} is not an IDX file of unsigned bytes in {ndim} dimensions")
    shape = tuple(int(d) for d in np.frombuffer(data, ">i4", count=ndim, offset=4))
    if len(data) - head != int(np.prod(shape)):
        raise OSError(f"{path.name} holds {len(data) - head} bytes, its header says {shape}")
    return np.frombuffer(data, np.uint8, offset=head).reshape(shape).copy()   # writable, for torch
