"""Connecting to Ray: a local instance, or an existing cluster.

``address``:

- ``"local"`` (what ``--ray`` without a value means): start a private Ray instance on this
  machine with ``num_cpus`` CPUs (default: all of them);
- ``"auto"``: join the cluster this machine is already part of (``ray start`` ran here);
- ``"HOST:PORT"`` (the head's GCS port, usually 6379) or ``"ray://HOST:10001"`` (Ray
  Client, from a machine outside the cluster): join that cluster.

When joining a cluster the ``fedcore`` package is shipped to the workers with the job
(``runtime_env`` ``py_modules``), so the cluster's nodes only need the requirements
installed, not this checkout. A local instance's workers import it from here.

Ray is an optional extra (``requirements-ray.txt``): nothing in this module imports it
at import time, and :func:`require_ray` turns its absence into one readable line.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from ..errors import FedcoreError

ADDRESS_ENV = "FEDCORE_RAY_ADDRESS"
"""Host setting: the cluster the dashboard sends large sweeps to (e.g. ``auto`` or
``ray://head:10001``); unset means a local Ray instance."""
LOCAL = "local"
LOCAL_OBJECT_STORE = 256 * 2**20
"""Object store of a local instance: rows and configs are small, so a small store keeps
Ray from reserving a large share of /dev/shm on a shared machine."""


def require_ray():
    """The ``ray`` module, or a one-line :class:`FedcoreError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise FedcoreError("--ray: Ray is not installed; install the optional extra with "
                           "`pip install -r requirements-ray.txt`") from None
    return ray


def configured_address() -> str:
    """The host's cluster address: ``$FEDCORE_RAY_ADDRESS``, else ``"local"``."""
    return os.environ.get(ADDRESS_ENV, "").strip() or LOCAL


def check_address(address: Optional[str]) -> str:
    """``None`` / ``""`` / ``"local"`` -> ``"local"``; ``auto``, ``HOST:PORT`` and
    ``ray://HOST:PORT`` pass; anything else is refused in one line."""
    address = (address or LOCAL).strip()
    if address in (LOCAL, "auto") or address.startswith("ray://"):
        return address
    host, sep, port = address.rpartition(":")
    if sep and host and port.isdigit() and 0 < int(port) < 65536 and " " not in host:
        return address
    raise FedcoreError(f"--ray {address!r}: expected nothing (a local Ray instance), 'auto', "
                       "HOST:PORT or ray://HOST:PORT")


def connect(address: Optional[str] = None, *, num_cpus: Optional[int] = None):
    """Initialise Ray for ``address`` (see the module doc); returns the ``ray`` module.

    Reuses a connection this process already holds. A cluster that cannot be reached is
    a one-line :class:`FedcoreError`.
    """
    ray = require_ray()
    address = check_address(address)
    if ray.is_initialized():
        return ray
    if address == LOCAL and os.environ.get("RAY_ADDRESS"):
        address = "auto"   # Ray Jobs, Slurm and Kubernetes recipes set it: join that cluster, start none
    if address not in (LOCAL, "auto"):
        reachable(address)
    try:
        if address == LOCAL:
            ray.init(num_cpus=num_cpus, include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE,
                     logging_level="WARNING", log_to_driver=True)
        else:
            package = str(Path(__file__).resolve().parents[1])
            ray.init(address=address, logging_level="WARNING",
                     runtime_env={"py_modules": [package], "excludes": ["__pycache__", "*.pyc"]})
    except (ConnectionError, RuntimeError, TimeoutError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise FedcoreError(f"--ray {address}: cannot connect to the Ray cluster ({first[:160]})") from None
    return ray


def reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse, in one line, a ``HOST:PORT`` / ``ray://HOST:PORT`` nobody answers on within
    ``timeout`` seconds (``ray.init`` itself would keep retrying for minutes)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        raise FedcoreError(f"--ray {address}: nothing answers there ({exc.strerror or exc}); is the cluster's "
                           "head running (`ray start --head`)?") from None


def cluster_resources() -> dict:
    """``{"CPU": total, "GPU": total, "CPU_free": ..., "GPU_free": ...}`` of the connected cluster."""
    ray = require_ray()
    total, free = ray.cluster_resources(), ray.available_resources()
    return {"CPU": total.get("CPU", 0.0), "GPU": total.get("GPU", 0.0),
            "CPU_free": free.get("CPU", 0.0), "GPU_free": free.get("GPU", 0.0)}
