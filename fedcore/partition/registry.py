"""The partitioner registry; each partition module registers its function here.

A partitioner is ``fn(labels, num_clients, num_classes, rng, **options) -> Partition`` and
declares its options as a dataclass (``fn.Options``, with :func:`fedcore.constraints.setting`
fields), like mechanisms and aggregators do: the config, the CLI's ``--set partition.NAME``,
the dashboard's form and the validation all read that one declaration.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..options import NoOptions
from ..registry import Registry

PARTITIONERS = Registry("partitioner")


def register_partitioner(name: str, *, summary: str, paper: str = "", options: type = NoOptions) -> Callable:
    """Decorator: register partitioner ``fn`` under ``name`` with its ``Options`` dataclass.

    The options' defaults are declared once, in ``Options``: the decorator gives them to
    ``fn``'s keyword-only parameters of the same names (``def fn(labels, ..., rng, *, alpha)``).
    """

    def decorate(fn: Callable) -> Callable:
        fn.Options = options
        own = set(fn.__code__.co_varnames[fn.__code__.co_argcount:][:fn.__code__.co_kwonlyargcount])
        fn.__kwdefaults__ = {f.name: f.default for f in dataclasses.fields(options) if f.name in own} or None
        return PARTITIONERS.register(name, summary=summary, paper=paper)(fn)

    return decorate
