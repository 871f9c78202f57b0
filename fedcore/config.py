"""The one validated description of a run.

``RunConfig`` is used by the dashboard, the CLI (``--set section.field=value``), the
presets and the result cache (``config_hash``). Every value is checked when the object is
built; a bad value raises :class:`~fedcore.errors.ConfigError` naming the field, the
value and the allowed range, e.g.::

    >>> RunConfig(rounds=0)
    Traceback (most recent call last):
    ...
    fedcore.errors.ConfigError: rounds: got 0; must be an integer >= 1

Checks that need the dataset (more clients than samples, an impossible partition) run
when the engine loads the data, and raise the same error type.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError

DEVICES = ("auto", "cpu", "cuda")
OPTIMIZERS = ("sgd", "momentum")
SAMPLINGS = ("fixed", "poisson")


def _check(cond: bool, name: str, value: Any, allowed: str) -> None:
    if not cond:
        raise ConfigError(name, value, allowed)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _int_at_least(name: str, v: Any, low: int) -> None:
    _check(_is_int(v) and v >= low, name, v, f"must be an integer >= {low}")


def _num_between(name: str, v: Any, low: float, high: float, *, open_low=True, open_high=False) -> None:
    ok_low = (v > low) if open_low else (v >= low)
    ok_high = (v < high) if open_high else (v <= high)
    lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
    _check(_is_num(v) and ok_low and ok_high, name, v, f"must be a number in {lo}{low}, {high}{hi}")


def _one_of(name: str, v: Any, choices) -> None:
    _check(v in choices, name, v, "must be one of: " + ", ".join(map(str, choices)))


@dataclass(frozen=True)
class PartitionConfig:
    """How the training set is split across clients (METHODS section 6).

    ``kind`` picks the partitioner; the other fields are its parameters (each
    partitioner reads only the ones it needs).
    """

    kind: str = "iid"
    alpha: float = 0.5
    min_size: int = 10
    shards_per_client: int = 2
    classes_per_client: int = 2
    iid_fraction: float = 0.8
    size_cv: float = 0.55

    def validate(self, prefix: str = "partition") -> None:
        from .catalog import PARTITIONERS

        _one_of(f"{prefix}.kind", self.kind, PARTITIONERS.names())
        _num_between(f"{prefix}.alpha", self.alpha, 0, 1e6)
        _int_at_least(f"{prefix}.min_size", self.min_size, 0)
        _int_at_least(f"{prefix}.shards_per_client", self.shards_per_client, 1)
        _int_at_least(f"{prefix}.classes_per_client", self.classes_per_client, 1)
        _num_between(f"{prefix}.iid_fraction", self.iid_fraction, 0, 1, open_low=False)
        _num_between(f"{prefix}.size_cv", self.size_cv, 0, 10, open_low=False)


@dataclass(frozen=True)
class LocalConfig:
    """Local training on each client (METHODS section 0): E epochs or U steps of SGD.

    ``steps > 0`` overrides ``epochs``: each step then draws a batch uniformly with
    replacement from the client's data (the "U local iterations" reading of KDP-FL).
    """

    epochs: int = 1
    steps: int = 0
    batch_size: int = 32
    lr: float = 0.1
    optimizer: str = "sgd"
    momentum: float = 0.0
    weight_decay: float = 0.0

    def validate(self, prefix: str = "local") -> None:
        _int_at_least(f"{prefix}.epochs", self.epochs, 1)
        _int_at_least(f"{prefix}.steps", self.steps, 0)
        _int_at_least(f"{prefix}.batch_size", self.batch_size, 1)
        _num_between(f"{prefix}.lr", self.lr, 0, 100)
        _one_of(f"{prefix}.optimizer", self.optimizer, OPTIMIZERS)
        _num_between(f"{prefix}.momentum", self.momentum, 0, 1, open_low=False, open_high=True)
        _num_between(f"{prefix}.weight_decay", self.weight_decay, 0, 1, open_low=False)


@dataclass(frozen=True)
class PrivacyConfig:
    """Budgets, the client-side mechanism and the server-side aggregator.

    ``epsilon`` and ``delta`` hold one value (broadcast to every client) or one value
    per client. ``mechanism_options`` / ``aggregator_options`` are checked against the
    option dataclass that the chosen mechanism / aggregator registers.
    """

    epsilon: tuple[float, ...] = (1.0,)
    delta: tuple[float, ...] = (1e-5,)
    mechanism: str = "none"
    mechanism_options: dict = field(default_factory=dict)
    aggregator: str = "fedavg"
    aggregator_options: dict = field(default_factory=dict)
    server_lr: float = 1.0

    def __post_init__(self):
        for name in ("epsilon", "delta"):
            v = getattr(self, name)
            if _is_num(v):
                object.__setattr__(self, name, (float(v),))
            elif isinstance(v, (list, tuple)):
                object.__setattr__(self, name, tuple(float(x) if _is_num(x) else x for x in v))

    def validate(self, num_clients: int, prefix: str = "privacy") -> None:
        from .catalog import AGGREGATORS, MECHANISMS

        for name, high in (("epsilon", 1e6), ("delta", 1.0)):
            values = getattr(self, name)
            _check(len(values) in (1, num_clients), f"{prefix}.{name}", list(values),
                   f"must hold one value or one per client ({num_clients} values)")
            for i, v in enumerate(values):
                _num_between(f"{prefix}.{name}[{i}]", v, 0, high, open_high=(name == "delta"))
        _one_of(f"{prefix}.mechanism", self.mechanism, MECHANISMS.names())
        _one_of(f"{prefix}.aggregator", self.aggregator, AGGREGATORS.names())
        _num_between(f"{prefix}.server_lr", self.server_lr, 0, 1e3)
        for kind, reg, opts in (("mechanism", MECHANISMS, self.mechanism_options),
                                ("aggregator", AGGREGATORS, self.aggregator_options)):
            _check(isinstance(opts, dict), f"{prefix}.{kind}_options", opts, "must be a mapping")
            reg.get(getattr(self, kind)).parse_options(opts, f"{prefix}.{kind}_options")

    def epsilons(self, num_clients: int) -> list[float]:
        """Per-client epsilon list, broadcasting a single value."""
        return list(self.epsilon) * num_clients if len(self.epsilon) == 1 else list(self.epsilon)

    def deltas(self, num_clients: int) -> list[float]:
        """Per-client delta list, broadcasting a single value."""
        return list(self.delta) * num_clients if len(self.delta) == 1 else list(self.delta)


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run. Same config + same seed = same results.

    ``participation`` is the fraction of clients per round: ``sampling="fixed"`` takes
    ``max(1, round(participation * num_clients))`` clients without replacement,
    ``"poisson"`` includes each client independently with that probability (ULDP-FED).
    ``train_size`` / ``test_size`` subsample the data (0 = all), as several papers do.
    """

    dataset: str = "digits"
    model: str = "logreg"
    num_clients: int = 10
    rounds: int = 20
    participation: float = 1.0
    sampling: str = "fixed"
    partition: PartitionConfig = field(default_factory=PartitionConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    method: str = ""
    train_size: int = 0
    test_size: int = 0
    eval_every: int = 1
    seed: int = 0
    device: str = "auto"

    def __post_init__(self):
        for name, cls in (("partition", PartitionConfig), ("local", LocalConfig), ("privacy", PrivacyConfig)):
            v = getattr(self, name)
            if isinstance(v, dict):
                object.__setattr__(self, name, _build(cls, v, name))
        self.validate()

    def validate(self) -> None:
        from .catalog import DATASETS, METHODS, MODELS

        _one_of("dataset", self.dataset, DATASETS.names())
        _one_of("model", self.model, MODELS.names())
        _int_at_least("num_clients", self.num_clients, 1)
        _check(self.num_clients <= 100_000, "num_clients", self.num_clients, "must be <= 100000")
        _int_at_least("rounds", self.rounds, 1)
        _check(self.rounds <= 100_000, "rounds", self.rounds, "must be <= 100000")
        _num_between("participation", self.participation, 0, 1)
        _one_of("sampling", self.sampling, SAMPLINGS)
        _check(self.method == "" or self.method in METHODS, "method", self.method,
               "must be empty or one of: " + ", ".join(METHODS.names()))
        _int_at_least("train_size", self.train_size, 0)
        _int_at_least("test_size", self.test_size, 0)
        _int_at_least("eval_every", self.eval_every, 1)
        _int_at_least("seed", self.seed, 0)
        _one_of("device", self.device, DEVICES)
        self.partition.validate()
        self.local.validate()
        self.privacy.validate(self.num_clients)
        from .compat import check_compatibility

        check_compatibility(self)

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
        """Apply ``{"section.field": value}`` overrides; string values are parsed.

        >>> RunConfig().with_overrides({"partition.kind": "dirichlet", "rounds": "5"}).rounds
        5
        """
        data = self.to_dict()
        for key, raw in overrides.items():
            parts = key.split(".")
            node, ftype = data, RunConfig
            for i, part in enumerate(parts):
                path = ".".join(parts[: i + 1])
                if ftype is dict:
                    if i == len(parts) - 1:
                        node[part] = parse_value(raw, None)
                    else:
                        node = node.setdefault(part, {})
                    continue
                hints = typing.get_type_hints(ftype)
                if part not in hints:
                    raise ConfigError(path, raw, "unknown field; known: " + ", ".join(hints))
                if i == len(parts) - 1:
                    node[part] = parse_value(raw, hints[part])
                else:
                    ftype = hints[part] if dataclasses.is_dataclass(hints[part]) else dict
                    if ftype is not dict and not dataclasses.is_dataclass(ftype):
                        raise ConfigError(path, raw, "is not a section")
                    node = node[part]
        return RunConfig.from_dict(data)


def parse_value(raw: Any, ftype: Any) -> Any:
    """Parse a ``--set`` string into the field's type (numbers, lists, JSON)."""
    if not isinstance(raw, str):
        return raw
    origin = typing.get_origin(ftype)
    if ftype is str:
        return raw
    if origin is tuple or ftype is tuple:
        text = raw.strip()
        if not text.startswith("["):
            text = "[" + text + "]"
        return _json_or_raw(text)
    if ftype is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    return _json_or_raw(raw)


def _json_or_raw(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def _build(cls, data: Any, prefix: str):
    """Construct dataclass ``cls`` from a dict, naming unknown keys in the error."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise ConfigError(prefix or cls.__name__, data, "must be a mapping")
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        name = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ConfigError(name, data[unknown[0]], "unknown field; known: " + ", ".join(hints))
    kwargs = {}
    for key, value in data.items():
        if dataclasses.is_dataclass(hints[key]) and isinstance(value, dict):
            value = _build(hints[key], value, f"{prefix}.{key}" if prefix else key)
        elif typing.get_origin(hints[key]) is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a wrong type reached a comparison
        raise ConfigError(prefix or cls.__name__, data, f"has a value of the wrong type ({exc})") from None
