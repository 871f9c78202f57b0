"""Writing a file so that no reader ever sees half of it: one function for the run store's
archives, the dataset caches, a sweep's rows and an audit's result.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.json"
>>> write_atomic(path, '{"rows": []}'); path.read_text()
'{"rows": []}'
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Union


def write_atomic(path: Union[str, Path], content: Union[str, bytes, Callable[[BinaryIO], object]]) -> None:
    """Write ``content`` (text as UTF-8, bytes, or a function that writes to a binary file) to a
    private temporary file (mode 0600) in ``path``'s folder, then rename it over ``path``. Raises
    ``OSError`` (a full disk, a read-only folder) with the temporary file removed."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
