"""The second half of validation: names, component options and compatibility.

:class:`~fedcore.config.RunConfig` checks every value against its declared constraint and
imports nothing heavy. :func:`resolve` needs the registries: it checks that the dataset,
model, partitioner, mechanism, aggregator and method exist, parses the mechanism's and
aggregator's options (their own declared constraints) and applies the compatibility rules.
Every entry point (CLI, dashboard, links, presets, job manager, engine) calls it.

>>> from fedcore.config import RunConfig
>>> resolve(RunConfig(dataset="imagenet"))
Traceback (most recent call last):
...
fedcore.errors.ConfigError: dataset: got 'imagenet'; must be one of: cifar10, covertype, digits, fashion_mnist, mnist
"""
from __future__ import annotations

from .config import RunConfig
from .errors import ConfigError

_RESOLVED: set[str] = set()


def resolve(cfg: RunConfig) -> RunConfig:
    """Return ``cfg`` once its names, options and combination are known to be valid."""
    key = cfg.config_hash()
    if key in _RESOLVED:
        return cfg
    from .catalog import AGGREGATORS, DATASETS, MECHANISMS, METHODS, MODELS, PARTITIONERS
    from .compat import check_compatibility

    for name, value, registry in (("dataset", cfg.dataset, DATASETS), ("model", cfg.model, MODELS),
                                  ("partition.kind", cfg.partition.kind, PARTITIONERS),
                                  ("privacy.mechanism", cfg.privacy.mechanism, MECHANISMS),
                                  ("privacy.aggregator", cfg.privacy.aggregator, AGGREGATORS)):
        check_name(name, value, registry)
    if cfg.method:
        check_name("method", cfg.method, METHODS, empty_ok=True)
    from .partition import partitioner_options

    partitioner_options(cfg.partition.kind, cfg.partition.options)
    for kind, registry in (("mechanism", MECHANISMS), ("aggregator", AGGREGATORS)):
        component = registry.get(getattr(cfg.privacy, kind))
        component.parse_options(getattr(cfg.privacy, f"{kind}_options"), f"privacy.{kind}_options")
    check_compatibility(cfg)
    _RESOLVED.add(key)
    return cfg


def check_name(field: str, value: str, registry, empty_ok: bool = False) -> None:
    """``value`` must be registered in ``registry`` (see :meth:`fedcore.registry.Registry.check`)."""
    registry.check(field, value, empty_ok)


def preset_config(name: str) -> RunConfig:
    """The validated :class:`RunConfig` of preset ``name`` (``python -m fedcore list`` shows them).

    >>> preset_config("demo").rounds
    20
    """
    from .catalog import PRESETS
    from .methods import apply_method

    PRESETS.check("preset", name)
    from .presets import AFTER_METHOD

    overrides = dict(PRESETS.get(name))
    method = overrides.pop("method", "")
    after = overrides.pop(AFTER_METHOD, {})
    cfg = RunConfig().with_overrides(overrides)
    return resolve(apply_method(cfg, method, extra=after) if method else cfg.with_overrides(after))
