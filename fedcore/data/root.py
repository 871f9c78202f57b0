"""Where dataset files live, whether we may download them, and how a failure reads.

The data root is ``$FEDCORE_DATA`` if set, else ``$XDG_CACHE_HOME/fedcore/data``
(``~/.cache/fedcore/data`` by default). It must be writable: torchvision extracts the
archives next to the downloaded files, and :mod:`fedcore.data.cache` stores the decoded
tensors there. ``FEDCORE_OFFLINE=1`` switches downloads off.
"""
from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import DatasetUnavailable

ROOT_ENV = "FEDCORE_DATA"
OFFLINE_ENV = "FEDCORE_OFFLINE"
DOWNLOAD_TIMEOUT_S = 10.0
"""Socket timeout during downloads: an unreachable host fails instead of hanging."""


def data_root() -> Path:
    """The folder holding dataset files: ``$FEDCORE_DATA`` or a per-user cache folder.

    >>> import os
    >>> os.environ["FEDCORE_DATA"] = "/tmp/fl-data"
    >>> str(data_root())
    '/tmp/fl-data'
    >>> del os.environ["FEDCORE_DATA"]
    """
    explicit = os.environ.get(ROOT_ENV)
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "fedcore" / "data"


def downloads_allowed(download: bool | None) -> bool:
    """An explicit ``download`` wins; ``None`` means "yes unless FEDCORE_OFFLINE is set"."""
    if download is not None:
        return bool(download)
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("1", "true", "yes", "on")


@contextmanager
def fetching(name: str, root: Path, expected: str, download: bool) -> Iterator[None]:
    """Guard for reading (and maybe downloading) ``name``'s files under ``root``.

    Creates ``root``, bounds every socket operation by :data:`DOWNLOAD_TIMEOUT_S`, and
    turns the ``OSError`` / ``RuntimeError`` that torchvision and scikit-learn raise for
    missing, corrupted or undownloadable files into one :class:`DatasetUnavailable`
    naming the dataset, the files expected under ``root`` and ``FEDCORE_DATA``.
    ``expected`` is the layout relative to ``root``, e.g.
    ``"MNIST/raw/train-images-idx3-ubyte.gz, ..."``. The timeout is the process-wide
    socket default (torchvision and scikit-learn expose no per-call timeout); the
    previous value is restored on exit.
    """
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)
    try:
        root.mkdir(parents=True, exist_ok=True)
        yield
    except (OSError, RuntimeError) as err:
        how = ("downloads are off (download=False or FEDCORE_OFFLINE=1)" if not download
               else "the download failed (no network?)")
        raise DatasetUnavailable(
            f"dataset {name!r} is not available under {root}: {how}; "
            f"{type(err).__name__}: {str(err).strip()}. "
            f"Expected files under {root}: {expected}. Put them there (the folder must be "
            f"writable: archives are extracted in place), or set {ROOT_ENV} to a folder "
            f"that has them."
        ) from err
    finally:
        socket.setdefaulttimeout(previous)
