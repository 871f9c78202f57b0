"""Host limits: what one shared dashboard lets a visitor run, set in one place.

A host (e.g. one server for a class) bounds each run and the queue with
:class:`HostLimits`, read by :meth:`HostLimits.from_env` from

1. a TOML file named by ``$FEDCORE_LIMITS`` (keys as below, top level or in a
   ``[limits]`` table; ``FEDCORE_LIMITS=off`` lifts every limit), then
2. one environment variable per setting, ``FEDCORE_<NAME>`` (e.g.
   ``FEDCORE_MAX_ROUNDS=500``, ``FEDCORE_DATASETS=digits,mnist``), which win over the file.

A value of ``0`` or ``none`` (or an empty list) means "no limit". Each setting's meaning and
dashboard default (:data:`SHARED_DEFAULTS`) is written once, in the README's Hosting table
(``tests/test_host.py`` checks it names every field); the CLI and scripts use no limits
unless asked (``python -m fedcore run --limits host.toml``). ``max_running``,
``max_active`` and ``max_active_per_owner`` count jobs of every kind (runs, sweeps, audits).

Every refusal is a :class:`LimitError` naming the setting and its environment variable:

>>> limits = HostLimits(max_rounds=500)
>>> from fedcore.config import RunConfig
>>> check_limits(RunConfig(rounds=1000), limits)
Traceback (most recent call last):
...
fedcore.runner.limits.LimitError: rounds: got 1000; this server allows at most 500 (host limit max_rounds, FEDCORE_MAX_ROUNDS)
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

from ..errors import FedcoreError

LIMITS_ENV = "FEDCORE_LIMITS"
ENV_PREFIX = "FEDCORE_"
VISIBILITIES = ("private", "public")

DATASET_FACTS: dict[str, tuple[int, tuple[int, ...], int]] = {
    "digits": (1437, (1, 8, 8), 10),
    "mnist": (60000, (1, 28, 28), 10),
    "fashion_mnist": (60000, (1, 28, 28), 10),
    "cifar10": (50000, (3, 32, 32), 10),
    "covertype": (551012, (54,), 7),
}
"""Training-set size, input shape and classes of each registered dataset, so a limit can be
checked without loading the data (the loaders' docstrings give the same figures)."""

DATASET_FILES: dict[str, tuple[str, ...]] = {
    "mnist": ("MNIST/raw/train-images-idx3-ubyte", "MNIST/raw/train-images-idx3-ubyte.gz",
              "fedcore_cache/mnist-v1.pt"),
    "fashion_mnist": ("FashionMNIST/raw/train-images-idx3-ubyte", "FashionMNIST/raw/train-images-idx3-ubyte.gz",
                      "fedcore_cache/fashion_mnist-v1.pt"),
    "cifar10": ("cifar-10-batches-py/data_batch_1", "cifar-10-python.tar.gz", "fedcore_cache/cifar10-v1.pt"),
    "covertype": ("covertype/samples_py3", "fedcore_cache/covertype-v1.pt"),
}
"""Any one of these files under the data root means the dataset can load offline."""


class LimitError(FedcoreError):
    """A run refused by a host limit; ``limit`` is the setting's name."""

    def __init__(self, limit: str, message: str):
        self.limit = limit
        super().__init__(f"{message} (host limit {limit}, {ENV_PREFIX}{limit.upper()})")


class HostUnavailable(FedcoreError):
    """The run needs something this host does not have (a GPU, a dataset's files offline)."""


@dataclass(frozen=True)
class HostLimits:
    """The host's settings; ``None`` means unlimited (see the module docstring)."""

    max_running: Optional[int] = None
    max_active: Optional[int] = None
    max_active_per_owner: Optional[int] = None
    max_sweep_runs: Optional[int] = None
    max_rounds: Optional[int] = None
    max_clients: Optional[int] = None
    max_train_samples: Optional[int] = None
    max_local_epochs: Optional[int] = None
    max_local_steps: Optional[int] = None
    max_model_params: Optional[int] = None
    max_run_seconds: Optional[float] = None
    datasets: Optional[tuple[str, ...]] = None
    models: Optional[tuple[str, ...]] = None
    owner_grace_s: Optional[float] = None
    visibility: str = "private"
    admins: tuple[str, ...] = ()
    worker_nice: int = 0
    worker_threads: Optional[int] = None

    def __post_init__(self):
        if self.visibility not in VISIBILITIES:
            raise FedcoreError(f"host setting visibility: got {self.visibility!r}; must be one of: "
                               + ", ".join(VISIBILITIES))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: Optional["HostLimits"] = None,
                     source: str = "host settings") -> "HostLimits":
        """``base`` with ``values`` (strings as in environment variables, or TOML values) applied."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        changes = {}
        for key, raw in values.items():
            if key not in fields:
                raise FedcoreError(f"{source}: unknown host setting {key!r}; known: " + ", ".join(fields))
            changes[key] = _parse(key, raw, source)
        return dataclasses.replace(base or cls(), **changes)

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None,
                 defaults: Optional["HostLimits"] = None) -> "HostLimits":
        """``defaults`` <- the TOML file of ``$FEDCORE_LIMITS`` <- ``FEDCORE_<NAME>`` variables.

        ``FEDCORE_LIMITS=off`` starts from no limits instead of ``defaults``.
        """
        env = os.environ if environ is None else environ
        limits = defaults or cls()
        path = env.get(LIMITS_ENV, "").strip()
        if path.lower() in ("off", "none", "0"):
            limits = cls()
        elif path:
            limits = cls.from_mapping(read_toml(Path(path)), limits, source=path)
        names = [f.name for f in dataclasses.fields(cls)]
        from_env = {n: env[ENV_PREFIX + n.upper()] for n in names if ENV_PREFIX + n.upper() in env}
        return cls.from_mapping(from_env, limits, source="environment") if from_env else limits

    def describe(self) -> list[tuple[str, str]]:
        """``(setting, value)`` rows for a settings table (``unlimited`` for None)."""
        rows = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = ", ".join(value) if value else ("(none)" if f.name == "admins" else "(all)")
            rows.append((f.name, "unlimited" if value is None else str(value)))
        return rows


def _parse(key: str, raw: Any, source: str) -> Any:
    """One setting's value: ints, floats, comma lists, the visibility word; 0/none = unlimited."""
    if key in ("datasets", "models", "admins"):
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        items = tuple(str(i).strip() for i in items if str(i).strip())
        return items if items or key == "admins" else None
    if key == "visibility":
        return str(raw).strip().lower()
    text = str(raw).strip().lower()
    if text in ("", "none", "unlimited", "off"):
        return 0 if key == "worker_nice" else None
    try:
        value = float(text)
    except ValueError:
        raise FedcoreError(f"{source}: host setting {key} must be a number; got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise FedcoreError(f"{source}: host setting {key} must be >= 0; got {raw!r}")
    if key in ("max_run_seconds", "owner_grace_s"):
        return value or None
    if value != int(value):
        raise FedcoreError(f"{source}: host setting {key} must be a whole number; got {raw!r}")
    return int(value) if (value or key == "worker_nice") else None


def read_toml(path: Path) -> dict:
    """The settings of a limits file: its ``[limits]`` table, else its top-level keys."""
    import tomllib

    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise FedcoreError(f"{LIMITS_ENV}={path}: cannot read the limits file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise FedcoreError(f"{LIMITS_ENV}={path}: not valid TOML ({exc})") from None
    return data.get("limits", data)


SHARED_DEFAULTS = HostLimits(
    max_running=max(1, os.cpu_count() or 1), max_active=40, max_active_per_owner=3, max_sweep_runs=1000,
    max_rounds=2000, max_clients=1000, max_train_samples=60000, max_local_epochs=50, max_local_steps=5000,
    max_model_params=12_000_000, max_run_seconds=1800.0, owner_grace_s=120.0, visibility="private",
    worker_nice=10, worker_threads=1)
"""The dashboard's limits when the host sets nothing (the CLI has none)."""


def dashboard_limits() -> HostLimits:
    """:data:`SHARED_DEFAULTS` with the host's file and environment variables applied."""
    return HostLimits.from_env(defaults=SHARED_DEFAULTS)


# --- checks at submission -------------------------------------------------------------
def _at_most(field: str, value, limit: Optional[float], name: str, unit: str = "") -> None:
    if limit is not None and value > limit:
        raise LimitError(name, f"{field}: got {value:g}{unit}; this server allows at most {limit:g}{unit}")


def check_limits(cfg, limits: HostLimits) -> None:
    """Raise :class:`LimitError` naming the first host limit ``cfg`` (a RunConfig) exceeds."""
    if limits.datasets is not None and cfg.dataset not in limits.datasets:
        raise LimitError("datasets", f"dataset: {cfg.dataset!r} is not offered on this server; "
                                     "offered: " + ", ".join(limits.datasets))
    if limits.models is not None and cfg.model not in limits.models:
        raise LimitError("models", f"model: {cfg.model!r} is not offered on this server; "
                                   "offered: " + ", ".join(limits.models))
    _at_most("rounds", cfg.rounds, limits.max_rounds, "max_rounds")
    _at_most("num_clients", cfg.num_clients, limits.max_clients, "max_clients")
    _at_most("local.epochs", cfg.local.epochs, limits.max_local_epochs, "max_local_epochs")
    _at_most("local.steps", cfg.local.steps, limits.max_local_steps, "max_local_steps")
    facts = DATASET_FACTS.get(cfg.dataset)
    if facts is not None:
        total, shape, classes = facts
        samples = min(cfg.train_size, total) if cfg.train_size else total
        _at_most("training samples" + ("" if cfg.train_size else f" (all of {cfg.dataset}; set train_size)"),
                 samples, limits.max_train_samples, "max_train_samples")
        if limits.max_model_params is not None:
            params = model_parameters(cfg.model, shape, classes)
            _at_most(f"model {cfg.model} on {cfg.dataset}: parameters", params, limits.max_model_params,
                     "max_model_params")


def check_sweep(runs: int, limits: HostLimits) -> None:
    """Raise :class:`LimitError` when a sweep of ``runs`` runs exceeds ``max_sweep_runs``."""
    _at_most("runs in one sweep", runs, limits.max_sweep_runs, "max_sweep_runs")


def check_host(cfg) -> None:
    """Raise :class:`HostUnavailable` when this machine cannot run ``cfg`` at all."""
    if cfg.device == "cuda" and not cuda_available():
        raise HostUnavailable("device: got 'cuda'; this server has no CUDA GPU — use 'auto' or 'cpu'")
    if not dataset_available(cfg.dataset):
        from ..data.root import data_root

        raise HostUnavailable(f"dataset: {cfg.dataset!r} is not on this server and it works offline "
                              f"(no files under {data_root()}); pick another dataset")


def check_submission(cfg, limits: HostLimits) -> None:
    """Everything a submitted run must pass before it is queued: the host, then the limits."""
    check_host(cfg)
    check_limits(cfg, limits)


@lru_cache(maxsize=64)
def model_parameters(model: str, input_shape: tuple[int, ...], classes: int) -> int:
    """Parameters of ``model`` for that input (built once on the CPU, then cached)."""
    from ..models import build_model, num_parameters

    return num_parameters(build_model(model, input_shape, classes))


@lru_cache(maxsize=1)
def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def dataset_available(name: str) -> bool:
    """Whether ``name`` can load here: bundled, downloadable, or its files are present."""
    from ..data.root import data_root, downloads_allowed

    files = DATASET_FILES.get(name)
    if files is None or downloads_allowed(None):
        return True
    root = data_root()
    return any((root / f).exists() for f in files)


def offered_datasets(limits: HostLimits, names) -> list[str]:
    """Of ``names``, those the host offers and can load (for pickers)."""
    return [n for n in names if (limits.datasets is None or n in limits.datasets) and dataset_available(n)]
