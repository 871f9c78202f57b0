"""Option dataclasses shared by mechanisms and aggregators.

A mechanism or aggregator declares ``Options``, a dataclass of its tunable settings with
the papers' defaults; ``parse_options`` turns the config's ``*_options`` mapping into an
instance and reports unknown names or bad values as a ``ConfigError`` naming the field.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
import typing
from dataclasses import dataclass

from .config import type_hints
from .constraints import check_fields
from .errors import ConfigError


@dataclass(frozen=True)
class NoOptions:
    """For components without settings."""

    def validate(self, prefix: str) -> None:
        pass


class Configurable:
    """Mixin: ``cls.Options`` + ``cls.parse_options(mapping, prefix)``.

    ``implementation``: ``"module:Class"`` of the subclass that does the work, when it lives in a
    module of its own so that this class (what resolving a config reads: its options and what they
    imply) loads no torch. Building this class builds that subclass, imported on first use.
    """

    Options: typing.ClassVar[type] = NoOptions
    implementation: typing.ClassVar[str] = ""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls.implementation_class())

    @classmethod
    def implementation_class(cls) -> type:
        """The class that runs: ``implementation`` where it subclasses ``cls``, else ``cls`` itself."""
        if not cls.implementation:
            return cls
        module, _, name = cls.implementation.partition(":")
        runs = getattr(importlib.import_module(module), name)
        return runs if issubclass(runs, cls) else cls

    @classmethod
    def parse_options(cls, options: dict, prefix: str = "options"):
        return parse_options(cls.Options, options, prefix)


def parse_options(options_cls: type, options: dict, prefix: str = "options"):
    """``options_cls(**options)``, checked: unknown names, types, declared constraints, then
    the class's own ``validate(prefix)`` for rules that join two options."""
    if not isinstance(options, dict):
        raise ConfigError(prefix, options, "must be a mapping of option names to values")
    hints = type_hints(options_cls)
    for key in options:
        if key not in hints:
            known = ", ".join(hints) or "(none)"
            raise ConfigError(f"{prefix}.{key}", options[key], f"unknown option; known: {known}")
    kwargs = {}
    for key, value in options.items():
        if hints[key] is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        kwargs[key] = value
    opts = options_cls(**kwargs)
    check_fields(opts, prefix)
    for f in dataclasses.fields(opts):
        value, expected = getattr(opts, f.name), hints[f.name]
        if expected in (int, float, str, bool) and not _isinstance(value, expected):
            raise ConfigError(f"{prefix}.{f.name}", value, f"must be of type {expected.__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{prefix}.{f.name}", value, "must be a finite number")
    if hasattr(opts, "validate"):
        opts.validate(prefix)
    return opts


def _isinstance(value, expected) -> bool:
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)
