"""Host limits: what one shared dashboard lets a visitor run, set in one place.

A host (e.g. one server for a class) bounds each run and the queue with
:class:`HostLimits`, read by :meth:`HostLimits.from_env` from

1. a TOML file named by ``$FEDCORE_LIMITS`` (keys as below, top level or in a
   ``[limits]`` table; ``FEDCORE_LIMITS=off`` lifts every limit), then
2. one environment variable per setting, ``FEDCORE_<NAME>`` (e.g.
   ``FEDCORE_MAX_ROUNDS=500``, ``FEDCORE_DATASETS=digits,mnist``), which win over the file.

A value of ``0`` or ``none`` (or an empty list) means "no limit". Each setting is declared once,
a field of :class:`HostLimits` (:func:`limit`: its dashboard default, constraint, what it bounds),
and read by one function, :func:`parse_setting`; the README's Hosting table explains each
(``tests/test_host.py`` checks it names every field). The CLI and scripts use no limits
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
import functools
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

from ..constraints import Choice, Interval, OptionalOf, check, constraint_of, setting, shorten
from ..data import dataset_facts
from ..errors import FedcoreError

LIMITS_ENV = "FEDCORE_LIMITS"
ENV_PREFIX = "FEDCORE_"
VISIBILITIES = ("private", "public")
EMAIL_TRUST = ("verified", "claimed")
NO_LIMIT = ("", "0", "none", "unlimited", "off")
"""What a host writes for "no limit" (an empty list too)."""


def env_name(setting_name: str) -> str:
    """The environment variable of a host setting: ``max_rounds`` -> ``FEDCORE_MAX_ROUNDS``."""
    return ENV_PREFIX + setting_name.upper()


class LimitError(FedcoreError):
    """A run refused by a host limit; ``limit`` is the setting's name."""

    def __init__(self, limit: str, message: str):
        self.limit = limit
        super().__init__(f"{message} (host limit {limit}, {env_name(limit)})")


class HostUnavailable(FedcoreError):
    """The run needs something this host does not have (a GPU, a dataset's files offline)."""


class NoLimitOr(OptionalOf):
    """None (no limit) or a value ``inner`` accepts."""

    def describe(self) -> str:
        return self.inner.describe() + " (0 or none: no limit)"


@dataclass(frozen=True)
class Names:
    """Names (datasets, models, e-mails): a TOML list, or comma separated in a variable."""

    def accepts(self, v: Any) -> bool:
        return isinstance(v, tuple) and all(isinstance(x, str) and x for x in v)

    def describe(self) -> str:
        return "must be names, comma separated"


COUNT = NoLimitOr(Interval(int, 0, None))
SECONDS = NoLimitOr(Interval(float, 0, None))
CPUS = max(1, os.cpu_count() or 1)
_SHARED, _BOUNDS = "shared", "bounds"


def limit(shared: Any, constraint: Any, what: str, *, unlimited: Any = None, bounds: str = "") -> Any:
    """A host setting, declared once: the dashboard's default ``shared``, its constraint, what it
    bounds in words, ``unlimited`` (what the CLI has, and what 0 / none mean) and, for a bound
    on one field of the run's config, that field's path (checked by :func:`check_limits`)."""
    declared = setting(unlimited, constraint, what)
    return field(default=unlimited, metadata={**declared.metadata, _SHARED: shared, _BOUNDS: bounds})


@dataclass(frozen=True)
class HostLimits:
    """The host's settings, each declared once (:func:`limit`); ``None`` means unlimited. Each is
    set by the variable :func:`env_name` gives it, or its key in a limits file (module doc)."""

    max_running: Optional[int] = limit(CPUS, COUNT, "jobs (runs, sweeps, audits) training at once")
    max_active: Optional[int] = limit(40, COUNT, "queued + running jobs, all visitors together")
    max_active_per_owner: Optional[int] = limit(3, COUNT, "queued + running jobs of one visitor")
    max_sweep_runs: Optional[int] = limit(1000, COUNT, "runs of one frontier sweep")
    max_rounds: Optional[int] = limit(2000, COUNT, "rounds of one run", bounds="rounds")
    max_clients: Optional[int] = limit(1000, COUNT, "clients of one run", bounds="num_clients")
    max_train_samples: Optional[int] = limit(60_000, COUNT, "training samples a run uses")
    max_local_epochs: Optional[int] = limit(50, COUNT, "local epochs per round", bounds="local.epochs")
    max_local_steps: Optional[int] = limit(5000, COUNT, "local steps per round", bounds="local.steps")
    max_model_params: Optional[int] = limit(12_000_000, COUNT, "parameters of the model for its dataset")
    max_run_seconds: Optional[float] = limit(1800.0, SECONDS, "wall-clock seconds a run may train")
    datasets: Optional[tuple[str, ...]] = limit(None, NoLimitOr(Names()), "datasets offered (none set: all)")
    models: Optional[tuple[str, ...]] = limit(None, NoLimitOr(Names()), "models offered (none set: all)")
    owner_grace_s: Optional[float] = limit(120.0, SECONDS, "seconds a run outlives its owner's page")
    visibility: str = limit("private", Choice(VISIBILITIES), "who may list every run", unlimited="private")
    admins: tuple[str, ...] = limit((), Names(), "signed-in e-mails that may stop or delete any run",
                                    unlimited=())
    email_trust: str = limit("verified", Choice(EMAIL_TRUST), "when a sign-in's e-mail counts (admins): verified = "
                             "only with email_verified true; claimed = also when the provider sends no such claim",
                             unlimited="verified")
    worker_nice: int = limit(10, Interval(int, 0, None), "nice increment of the workers", unlimited=0)
    worker_threads: Optional[int] = limit(1, COUNT, "torch threads per worker")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            check(f"host setting {f.name}", getattr(self, f.name), constraint_of(self, f.name))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: Optional["HostLimits"] = None,
                     source: str = "host settings") -> "HostLimits":
        """``base`` with ``values`` (strings as in environment variables, or TOML values) applied."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [key for key in values if key not in names]
        if unknown:
            raise FedcoreError(f"{source}: unknown host setting {unknown[0]!r}; known: " + ", ".join(names))
        changes = {key: parse_setting(key, raw, source) for key, raw in values.items()}
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
        from_env = {n: env[env_name(n)] for n in names if env_name(n) in env}
        return cls.from_mapping(from_env, limits, source="environment") if from_env else limits


def parse_setting(name: str, raw: Any, source: str = "host settings") -> Any:
    """The value of host setting ``name`` from a variable's text or a TOML value, read by its
    declared constraint (names: a list or comma separated; numbers: :data:`NO_LIMIT` words and 0
    give the setting's unlimited value) and checked against it.

    >>> parse_setting("max_rounds", "500"), parse_setting("max_rounds", "0"), parse_setting("datasets", "digits, mnist")
    (500, None, ('digits', 'mnist'))
    >>> parse_setting("max_rounds", "-3", "environment")
    Traceback (most recent call last):
    ...
    fedcore.errors.ConfigError: environment: host setting max_rounds: got -3; must be an integer >= 0 (0 or none: no limit)
    """
    constraint = constraint_of(HostLimits, name)
    unlimited = HostLimits.__dataclass_fields__[name].default
    kind = getattr(constraint, "inner", constraint)
    if isinstance(kind, Names):
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        value = tuple(str(i).strip() for i in items if str(i).strip()) or unlimited
    elif isinstance(kind, Interval):
        text = str(raw).strip().lower()
        try:
            number = float(text)
            value = int(number) if kind.type is int and number.is_integer() else number
        except ValueError:
            value = unlimited if text in NO_LIMIT else shorten(raw)
        value = unlimited if value == 0 else value
    else:
        value = str(raw).strip().lower()
    check(f"{source}: host setting {name}", value, constraint)
    return value


def read_toml(path: Path) -> dict:
    """The settings of a limits file: its ``[limits]`` table, else its top-level keys."""
    import tomllib

    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise FedcoreError(f"{LIMITS_ENV}={path}: cannot read the limits file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise FedcoreError(f"{LIMITS_ENV}={path}: not a limits file (not text; expected TOML)") from None
    except tomllib.TOMLDecodeError as exc:
        raise FedcoreError(f"{LIMITS_ENV}={path}: not valid TOML ({shorten(str(exc), 200)})") from None
    if not isinstance(data, dict) or not isinstance(data.get("limits", data), dict):
        raise FedcoreError(f"{LIMITS_ENV}={path}: its [limits] is not a table")
    return data.get("limits", data)


SHARED_DEFAULTS = HostLimits(**{f.name: f.metadata[_SHARED] for f in dataclasses.fields(HostLimits)})
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
    for name, key in (("datasets", "dataset"), ("models", "model")):
        offered, value = getattr(limits, name), getattr(cfg, key)
        if offered is not None and value not in offered:
            raise LimitError(name, f"{key}: {value!r} is not offered on this server; offered: " + ", ".join(offered))
    for f in dataclasses.fields(limits):
        if f.metadata[_BOUNDS]:
            value = functools.reduce(getattr, f.metadata[_BOUNDS].split("."), cfg)
            _at_most(f.metadata[_BOUNDS], value, getattr(limits, f.name), f.name)
    facts = dataset_facts(cfg.dataset)
    if facts is not None:
        total = facts.train_size
        samples = min(cfg.train_size, total) if cfg.train_size else total
        _at_most("training samples" + ("" if cfg.train_size else f" (all of {cfg.dataset}; set train_size)"),
                 samples, limits.max_train_samples, "max_train_samples")
        if limits.max_model_params is not None:
            from ..models import model_parameters

            params = model_parameters(cfg.model, facts.input_shape, facts.num_classes)
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


@lru_cache(maxsize=1)
def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def dataset_available(name: str) -> bool:
    """Whether ``name`` can load here: bundled, downloadable, or its files are present."""
    from ..data.root import data_root, downloads_allowed

    facts = dataset_facts(name)
    if facts is None or not facts.files or downloads_allowed(None):
        return True
    return any((data_root() / f).exists() for f in facts.files)


def offered_datasets(limits: HostLimits, names) -> list[str]:
    """Of ``names``, those the host offers and can load (for pickers)."""
    return [n for n in names if (limits.datasets is None or n in limits.datasets) and dataset_available(n)]
