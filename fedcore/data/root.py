"""Where dataset files live, whether we may download them, and how a failure reads.

The data root is ``$FEDCORE_DATA`` if set, else ``$XDG_CACHE_HOME/fedcore/data``
(``~/.cache/fedcore/data`` by default). It must be writable: torchvision extracts the
archives next to the downloaded files, and :mod:`fedcore.data.cache` stores the decoded
tensors there. ``FEDCORE_OFFLINE=1`` switches downloads off.
"""
from __future__ import annotations

import os
import re
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
        unavailable = DatasetUnavailable(
            f"dataset {name!r} is not available under {root}: {how}; "
            f"{type(err).__name__}: {str(err).strip()}. "
            f"Expected files under {root}: {expected}. Put them there (the folder must be "
            f"writable: archives are extracted in place), or set {ROOT_ENV} to a folder "
            f"that has them."
        )
        # what a visitor of a shared server may read: no server path, no exception text
        unavailable.public = (f"dataset {name!r} is not available on this server: "
                              f"{'downloads are off' if not download else 'the download failed'}. "
                              f"Its files go under ${ROOT_ENV}: {expected}.")
        raise unavailable from err
    finally:
        socket.setdefaulttimeout(previous)


_PATH = re.compile(r"(?<![\w.:/\\-])(?:~|[A-Za-z]:)?(?:[/\\][^\s/\\'\"`()\[\]{},;:<>|*?]+){2,}[/\\]?")
"""An absolute path (``/srv/data/x``, ``~/.cache/y``, ``C:\\data``) of two segments or more;
not a URL's path (``http://host/a/b``) nor ``1/3`` or ``and/or``."""
PATH_PLACEHOLDER = "<path>"


def redact_paths(text: str) -> str:
    """``text`` without this server's paths: the data root reads ``$FEDCORE_DATA``, every
    other absolute path :data:`PATH_PLACEHOLDER`.

    >>> redact_paths("no files under /srv/fl/data; see /home/ann/x.log or ~/notes, not 1/3 or http://a/b/c")
    'no files under <path>; see <path> or ~/notes, not 1/3 or http://a/b/c'
    >>> redact_paths("it was written to /tmp/a/b.")
    'it was written to <path>.'
    """
    text = str(text)
    root = str(data_root())
    if len(root) > 1:
        text = text.replace(root, "$" + ROOT_ENV)
    # a full stop after a path ends the sentence, not the path
    return _PATH.sub(lambda m: PATH_PLACEHOLDER + m.group(0)[len(m.group(0).rstrip(".")):], text)


def public_message(error) -> str:
    """What a visitor of a shared server may read of ``error`` (an exception or its text):
    the exception's ``public`` text where it has one (:class:`DatasetUnavailable` raised by
    :func:`fetching`: no server path, no library's exception text), else the text with the
    server's paths removed (:func:`redact_paths`). The CLI and the host's log keep the full
    message.

    >>> err = DatasetUnavailable("dataset 'x' is not available under /srv/d: OSError: ...")
    >>> public_message(err)
    "dataset 'x' is not available under <path>: OSError: ..."
    >>> err.public = "dataset 'x' is not available on this server"
    >>> public_message(err)
    "dataset 'x' is not available on this server"
    """
    public = getattr(error, "public", None)
    return public if isinstance(public, str) and public else redact_paths(str(error))
