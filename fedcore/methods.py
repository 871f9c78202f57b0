"""Named methods: one-click recipes composed from a mechanism and an aggregator.

A method is a mapping of config overrides (dotted names, as ``--set`` takes them). Setting
``RunConfig.method`` and calling :func:`apply_method` fills in those settings; fields the
user set explicitly in the same call win (the CLI applies ``--set`` after the method).
"""
from __future__ import annotations

from .registry import Registry

METHODS = Registry("method")


def register_method(name: str, *, summary: str, paper: str, overrides: dict) -> None:
    """Register a recipe ``name`` = ``overrides``."""
    METHODS.register(name, summary=summary, paper=paper)(dict(overrides))


register_method("fedavg", summary="Federated averaging without privacy.",
                paper="McMahan et al. 2017",
                overrides={"privacy.mechanism": "none", "privacy.aggregator": "fedavg"})


def method_overrides(name: str) -> dict:
    """The overrides of method ``name`` (empty for no method)."""
    return dict(METHODS.get(name)) if name else {}


def apply_method(config, name: str | None = None, extra: dict | None = None):
    """Return ``config`` with method ``name`` (default ``config.method``) applied, then ``extra``."""
    name = config.method if name is None else name
    overrides = {**method_overrides(name), "method": name, **(extra or {})}
    return config.with_overrides(overrides)
