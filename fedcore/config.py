"""The one validated description of a run.

``RunConfig`` is used by the dashboard, the CLI (``--set section.field=value``), the
presets and the result cache (``config_hash``). Every value is checked when the object is
built; a bad value raises :class:`~fedcore.errors.ConfigError` naming the field, the
value and the allowed range, e.g.::

    >>> RunConfig(rounds=0)
    Traceback (most recent call last):
    ...
    fedcore.errors.ConfigError: rounds: got 0; must be an integer in [1, 100000]

Names (dataset, mechanism, ...), component options and their compatibility are checked by
:func:`fedcore.resolve.resolve`, which needs the registries. Checks that need the dataset (more clients than samples, an impossible partition) run
when the engine loads the data, and raise the same error type.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any

from .constraints import Choice, Interval, Mapping, PerClient, Text, check_fields, setting, shorten
from .errors import ConfigError

DEVICES = ("auto", "cpu", "cuda")
OPTIMIZERS = ("sgd", "momentum")
SAMPLINGS = ("fixed", "poisson")
SECTIONS = ("partition", "local", "privacy")
"""Config fields that hold a section of their own (dotted as ``section.field``)."""
MAX_SEED = 2**32 - 1
MAX_PLAN_ELEMENTS = 2**26
"""Largest batch plan (clients x local steps x batch) a round may build: about 1.6 GB of
index, mask and random keys. ``local.steps=10**6`` asked for 8 GB; this says so instead."""

_NAME = Text(100)
_EPS = Interval(float, 0, 1e6, closed="right", suggested=(0.1, 20.0), step=0.1)
_DELTA = Interval(float, 0, 1, closed="neither", step=1e-6)


@dataclass(frozen=True)
class PartitionConfig:
    """How the training set is split across clients (METHODS section 6).

    ``kind`` picks the partitioner; ``options`` holds its settings, declared by the
    partitioner's own ``Options`` (checked by :func:`fedcore.resolve.resolve`).
    ``--set partition.alpha=0.3`` is shorthand for ``partition.options.alpha``.
    """

    kind: str = setting("iid", _NAME, "partitioner (see `python -m fedcore list`)")
    options: dict = setting({}, Mapping(), "the partitioner's options")

    def validate(self, prefix: str = "partition") -> None:
        check_fields(self, prefix)


LEGACY_PARTITION_FIELDS = {"dirichlet": ("alpha", "min_size"), "shards": ("shards_per_client",),
                           "kclass": ("classes_per_client", "size_cv"),
                           "mixed": ("iid_fraction", "classes_per_client")}
"""Run records written before partitioners had options kept every parameter flat under
``partition``; reading one keeps the parameters its kind used (the others had no effect)."""


def _migrate_partition(data: dict) -> dict:
    legacy = {"alpha", "min_size", "shards_per_client", "classes_per_client", "iid_fraction", "size_cv"}
    if not legacy & set(data) or "options" in data:
        return data
    used = LEGACY_PARTITION_FIELDS.get(data.get("kind", "iid"), ())
    out = {k: v for k, v in data.items() if k not in legacy}
    out["options"] = {k: data[k] for k in used if k in data}
    return out


@dataclass(frozen=True)
class LocalConfig:
    """Local training on each client (METHODS section 0): E epochs or U steps of SGD.

    ``steps > 0`` overrides ``epochs``: each step then draws a batch uniformly with
    replacement from the client's data (the "U local iterations" reading of KDP-FL).
    """

    epochs: int = setting(1, Interval(int, 1, 10_000, suggested=(1, 100)), "local epochs E")
    steps: int = setting(0, Interval(int, 0, 1_000_000), "U local steps instead of epochs (0 = epochs)")
    batch_size: int = setting(32, Interval(int, 1, 1_000_000, suggested=(1, 10_000)), "batch size B")
    lr: float = setting(0.1, Interval(float, 0, 100, closed="right", step=0.01), "local learning rate")
    optimizer: str = setting("sgd", Choice(OPTIMIZERS), "local optimizer")
    momentum: float = setting(0.0, Interval(float, 0, 1, closed="left", step=0.05), "momentum")
    weight_decay: float = setting(0.0, Interval(float, 0, 1, step=1e-4), "weight decay")

    def validate(self, prefix: str = "local") -> None:
        check_fields(self, prefix)


@dataclass(frozen=True)
class PrivacyConfig:
    """Budgets, the client-side mechanism and the server-side aggregator.

    ``epsilon`` and ``delta`` hold one value (broadcast to every client) or one value
    per client. ``mechanism_options`` / ``aggregator_options`` are checked against the
    option dataclass that the chosen mechanism / aggregator registers (in
    :func:`fedcore.resolve.resolve`, which knows the registries).
    """

    epsilon: tuple[float, ...] = setting((1.0,), PerClient(_EPS), "privacy budget ε per client")
    delta: tuple[float, ...] = setting((1e-5,), PerClient(_DELTA), "δ per client")
    mechanism: str = setting("none", _NAME, "client-side mechanism")
    mechanism_options: dict = setting({}, Mapping(), "the mechanism's options")
    aggregator: str = setting("fedavg", _NAME, "server rule")
    aggregator_options: dict = setting({}, Mapping(), "the aggregator's options")
    server_lr: float = setting(1.0, Interval(float, 0, 1e3, closed="right", step=0.1),
                               "server step eta_s in W <- W + eta_s f(uploads)")

    def __post_init__(self):
        for name in ("epsilon", "delta"):
            v = getattr(self, name)
            if _is_num(v):
                object.__setattr__(self, name, (float(v),))
            elif isinstance(v, (list, tuple)):
                object.__setattr__(self, name, tuple(float(x) if _is_num(x) else x for x in v))

    def validate(self, num_clients: int, prefix: str = "privacy") -> None:
        check_fields(self, prefix)
        for name in ("epsilon", "delta"):
            values = getattr(self, name)
            if len(values) not in (1, num_clients):
                raise ConfigError(f"{prefix}.{name}", list(values)[:8],
                                  f"must hold one value or one per client ({num_clients} values)")

    def epsilons(self, num_clients: int) -> list[float]:
        """Per-client epsilon list, broadcasting a single value."""
        return list(self.epsilon) * num_clients if len(self.epsilon) == 1 else list(self.epsilon)

    def deltas(self, num_clients: int) -> list[float]:
        """Per-client delta list, broadcasting a single value."""
        return list(self.delta) * num_clients if len(self.delta) == 1 else list(self.delta)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run. Same config + same seed = same results.

    ``participation`` is the fraction of clients per round: ``sampling="fixed"`` takes
    ``round(participation * num_clients)`` clients without replacement (at least one; a
    fraction that rounds to none is refused),
    ``"poisson"`` includes each client independently with that probability (ULDP-FED).
    ``train_size`` / ``test_size`` subsample the data (0 = all), as several papers do.

    Building a ``RunConfig`` checks every value against its declared constraint (this
    module imports neither torch nor the registries); :func:`fedcore.resolve.resolve`
    then checks the names, the components' options and their compatibility.
    """

    dataset: str = setting("digits", _NAME, "dataset (digits is bundled and works offline)")
    model: str = setting("logreg", _NAME, "model")
    num_clients: int = setting(10, Interval(int, 1, 100_000, suggested=(1, 1000)), "number of clients N")
    rounds: int = setting(20, Interval(int, 1, 100_000, suggested=(1, 500)), "communication rounds T")
    participation: float = setting(1.0, Interval(float, 0, 1, closed="right", suggested=(0.01, 1.0), step=0.01),
                                   "fraction of clients per round q")
    sampling: str = setting("fixed", Choice(SAMPLINGS),
                            "fixed: exactly round(q N) clients; poisson: each client with probability q")
    partition: PartitionConfig = field(default_factory=PartitionConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    method: str = setting("", _NAME, "a named recipe (empty = custom)")
    train_size: int = setting(0, Interval(int, 0, 100_000_000), "training samples (0 = all)")
    test_size: int = setting(0, Interval(int, 0, 100_000_000), "test samples (0 = all)")
    eval_every: int = setting(1, Interval(int, 1, 100_000), "evaluate every k rounds")
    seed: int = setting(0, Interval(int, 0, MAX_SEED), "seed of the split, sampling, training and noise")
    device: str = setting("auto", Choice(DEVICES), "auto = CUDA when present")

    def __post_init__(self):
        for name, cls in (("partition", PartitionConfig), ("local", LocalConfig), ("privacy", PrivacyConfig)):
            v = getattr(self, name)
            if isinstance(v, dict):
                object.__setattr__(self, name, _build(cls, v, name))
            elif not isinstance(v, cls):
                raise ConfigError(name, shorten(v), "must be a mapping of its fields")
        self.validate()

    def validate(self) -> None:
        """Every field against its constraint, then the rules that join two fields."""
        check_fields(self, "")
        self.partition.validate()
        self.local.validate()
        self.privacy.validate(self.num_clients)
        if self.sampling == "fixed" and round(self.participation * self.num_clients) < 1:
            raise ConfigError("participation", self.participation,
                              f"selects {self.participation * self.num_clients:g} of {self.num_clients} "
                              f"clients per round, which rounds to none; use at least "
                              f"{0.5 / self.num_clients:.3g} or sampling=poisson")
        per_round = max(1, round(self.participation * self.num_clients))
        if self.local.steps and per_round * self.local.steps * self.local.batch_size > MAX_PLAN_ELEMENTS:
            raise ConfigError("local.steps", self.local.steps,
                              f"{per_round} clients x {self.local.steps} steps x batch {self.local.batch_size} "
                              f"exceeds {MAX_PLAN_ELEMENTS:,} samples per round; use fewer steps")

    @property
    def clients_per_round(self) -> float:
        """Clients offered per round: exactly for ``fixed``, in expectation for ``poisson``."""
        if self.sampling == "fixed":
            return float(max(1, round(self.participation * self.num_clients)))
        return self.participation * self.num_clients

    # --- serialisation -------------------------------------------------------------
    def to_dict(self) -> dict:
        return _plain(dataclasses.asdict(self))

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        return _build(cls, data, "")

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        return cls.from_dict(json.loads(text))

    def config_hash(self) -> str:
        """Stable 16-hex-digit hash of the canonical JSON form: the cache key of a run."""
        canon = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:16]

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    def with_overrides(self, overrides: dict[str, Any]) -> "RunConfig":
        """Apply ``{"section.field": value}`` overrides; string values are parsed to the
        field's type, and a bad one names its field.

        >>> RunConfig().with_overrides({"partition.kind": "dirichlet", "rounds": "5"}).rounds
        5
        >>> RunConfig().with_overrides({"privacy.epsilon": "abc"})
        Traceback (most recent call last):
        ...
        fedcore.errors.ConfigError: privacy.epsilon: got 'abc'; must be numbers separated by commas, e.g. 1,5,10
        """
        flat = flatten(self.to_dict())
        for key, raw in overrides.items():
            key = str(key)
            ftype, option = field_type(key)
            if option is not None:  # privacy.mechanism_options.clip, partition.alpha
                name = key.rpartition(".")[2]
                flat[option] = {**(flat.get(option) or {}), name: parse_value(raw, None, key)}
            else:
                flat[key] = parse_value(raw, ftype, key)
        return RunConfig.from_dict(unflatten(flat))


# --- the dotted-name codec (the CLI's --set, the dashboard's widgets and links) -------------
def flatten(config: dict) -> dict[str, Any]:
    """``{"partition": {"alpha": 1}}`` -> ``{"partition.alpha": 1}`` (option dicts stay whole).

    >>> flatten({"rounds": 3, "local": {"lr": 0.1}})
    {'rounds': 3, 'local.lr': 0.1}
    """
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if key in SECTIONS and isinstance(value, dict):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    return flat


def unflatten(flat: dict[str, Any]) -> dict:
    """Inverse of :func:`flatten`."""
    config: dict[str, Any] = {}
    for key, value in flat.items():
        section, dot, sub = key.partition(".")
        if dot:
            node = config.setdefault(section, {})
            if not isinstance(node, dict):
                raise ConfigError(section, shorten(node), "is a section; set its fields as section.field")
            node[sub] = value
        else:
            if isinstance(config.get(key), dict) and key in SECTIONS:
                raise ConfigError(key, shorten(value), "is a section; set its fields as section.field")
            config[key] = value
    return config


@functools.lru_cache(maxsize=None)
def type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, resolved once per class (every link, widget and preset
    resolution asks; the answer is shared, so callers only read it)."""
    return typing.get_type_hints(cls)


def field_type(key: str) -> tuple[Any, str | None]:
    """The type of dotted field ``key`` and, for a component option
    (``privacy.mechanism_options.clip``), the options field that holds it."""
    parts = key.split(".")
    cls: Any = RunConfig
    for i, part in enumerate(parts):
        hints = type_hints(cls)
        path = ".".join(parts[: i + 1])
        if cls is PartitionConfig and part not in hints and i == len(parts) - 1:
            return None, "partition.options"  # shorthand: partition.alpha = partition.options.alpha
        if part not in hints:
            raise ConfigError(path, "", "unknown field; known: " + ", ".join(hints)) from None
        t = hints[part]
        if i == len(parts) - 1:
            return t, None
        if dataclasses.is_dataclass(t):
            cls = t
        elif t is dict and i == len(parts) - 2:
            return None, path
        else:
            raise ConfigError(path, ".".join(parts[i + 1:]), "is not a section; set it directly, e.g. "
                              f"--set {path}=VALUE")
    return None, None


def parse_value(raw: Any, ftype: Any, name: str = "value") -> Any:
    """Parse a ``--set`` / link string into the field's type (numbers, lists, JSON).

    Lists of numbers are written ``1,5,10`` or ``[1,5,10]``; ``nan``, ``inf`` and empty
    items are refused, naming the field.
    """
    if not isinstance(raw, str):
        return raw
    if ftype is str:
        return raw
    if typing.get_origin(ftype) is tuple or ftype is tuple:
        text = raw.strip().removeprefix("[").removesuffix("]")
        try:
            values = [float(part) for part in text.split(",")]
        except ValueError:
            values = None
        if values is None or not all(v == v and abs(v) != float("inf") for v in values):
            raise ConfigError(name, shorten(raw), "must be numbers separated by commas, e.g. 1,5,10")
        return [int(v) if v == int(v) and "." not in part and "e" not in part.lower() else v
                for v, part in zip(values, text.split(","))]
    if ftype is bool:
        low = raw.strip().lower()
        if low not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise ConfigError(name, shorten(raw), "must be true or false")
        return low in ("1", "true", "yes", "on")
    return json_or_raw(raw)


def json_or_raw(text: str) -> Any:
    """``text`` parsed as strict JSON (no NaN / Infinity), else ``text`` itself."""
    try:
        return json.loads(text, parse_constant=refuse_json_constant)
    except (json.JSONDecodeError, ValueError, RecursionError):
        return text


def refuse_json_constant(name: str):
    """``json.loads(..., parse_constant=refuse_json_constant)`` rejects NaN and Infinity."""
    raise ValueError(f"{name} is not a number here")


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def _build(cls, data: Any, prefix: str):
    """Construct dataclass ``cls`` from a dict, naming unknown keys and wrong types."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise ConfigError(prefix or "config", shorten(data), "must be a mapping of field names to values")
    if cls is PartitionConfig:
        data = _migrate_partition(data)
    hints = type_hints(cls)
    unknown = sorted(set(map(str, data)) - set(hints))
    if unknown:
        name = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ConfigError(name, shorten(data.get(unknown[0])), "unknown field; known: " + ", ".join(hints))
    kwargs = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else key
        if dataclasses.is_dataclass(hints[key]):
            value = _build(hints[key], value, name)
        elif typing.get_origin(hints[key]) is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a wrong type reached a comparison
        raise ConfigError(prefix or "config", shorten(data), f"has a value of the wrong type ({exc})") from None
