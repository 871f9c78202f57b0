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


def apply_method(config, name: str | None = None, extra: dict | None = None, preset: str | None = None):
    """Return ``config`` with method ``name`` (default ``config.method``) applied, then ``extra``.

    With ``preset``, the preset's run-scale settings for that method come between the recipe and
    ``extra`` (:func:`fedcore.presets.preset_method_settings`: on ``demo``, picking ``hw_dpfl``
    also sets the rounds and local steps at which it trains on digits). The CLI, the sweep and
    the Playground's one-click picker all pass the preset they started from.

    If ``extra`` changes the recipe's mechanism or aggregator, the result is no longer that
    method and is labelled custom (see :func:`consistent_method`).
    """
    name = config.method if name is None else name
    if name:
        METHODS.check("method", name, empty_ok=True)
    from .presets import preset_method_settings

    tuned = preset_method_settings(preset, name) if preset and name else {}
    overrides = {**_undo(config, name, preset), **method_overrides(name), "method": name, **tuned, **(extra or {})}
    return consistent_method(config.with_overrides(overrides))


def _undo(config, name: str, preset: str | None) -> dict:
    """Overrides that take back what ``config``'s own method (and its preset settings) set, when
    another method ``name`` replaces it: the preset's values (the defaults without one), and empty
    options for a mechanism or aggregator the new recipe changes, so that picking hw_dpfl after
    dp_fedavg carries neither dp_fedavg's ``noise='auto'`` nor its Poisson sampling at 0.1."""
    from .config import RunConfig, flatten
    from .presets import AFTER_METHOD, PRESETS, preset_method_settings

    old = config.method
    if not old or old == name or old not in METHODS:
        return {}
    base = flatten(RunConfig().to_dict())  # the defaults under the preset's own settings
    if preset and preset in PRESETS:
        base.update({k: v for k, v in PRESETS.get(preset).items() if k not in ("method", AFTER_METHOD)})
    set_by_old = {**method_overrides(old), **(preset_method_settings(preset, old) if preset else {})}
    undo = {key: base[key] for key in set_by_old if key in base}
    recipe = method_overrides(name)
    for part in ("mechanism", "aggregator"):
        if recipe.get(f"privacy.{part}", getattr(config.privacy, part)) != getattr(config.privacy, part) \
                or f"privacy.{part}_options" in set_by_old:
            undo[f"privacy.{part}_options"] = {}
    return undo


IDENTITY = ("privacy.mechanism", "privacy.aggregator")
"""The recipe fields that make a method what it is; other fields may be tuned freely."""


def consistent_method(config):
    """``config``, labelled custom (``method=""``) when its mechanism or aggregator is not
    its method's: a link that swaps fedavg's mechanism for Gaussian noise is not fedavg.

    >>> from fedcore.resolve import preset_config
    >>> cfg = preset_config("demo").with_overrides({"privacy.mechanism": "gaussian"})
    >>> cfg.method, consistent_method(cfg).method
    ('fedavg', '')
    """
    if not config.method or config.method not in METHODS:
        return config
    from .config import flatten

    flat = flatten(config.to_dict())
    recipe = method_overrides(config.method)
    if any(key in recipe and flat.get(key) != recipe[key] for key in IDENTITY):
        return config.replace(method="")
    return config
