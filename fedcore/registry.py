"""Named registries of datasets, models, partitioners, mechanisms and aggregators.

Adding a method is one module with one ``@REGISTRY.register(...)`` line, plus its name in
the registry's table of modules (``Registry(kind, modules={module: names})``): a name is
known (listed, checked) without importing anything, and its module is imported when the
entry is first used, so resolving a config loads only the components it names. A mechanism
whose work needs torch registers its options from a module that loads none and names the
class that runs (``implementation``, :class:`~fedcore.options.Configurable`), so resolving
loads no torch. The CLI's ``list`` command and the dashboard's pickers are generated from
these registries. The dataset and model registries import the modules ``FEDCORE_PLUGINS`` names
before they answer a name they do not hold (:mod:`fedcore.plugins`): your own datasets and models.

>>> from fedcore.registry import Registry
>>> animals = Registry("animal")
>>> @animals.register("cat", summary="Says meow.")
... def make_cat():
...     return "meow"
>>> animals.get("cat")()
'meow'
>>> animals.names()
['cat']
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .plugins import PLUGIN_KINDS, load_plugins


@dataclass(frozen=True)
class Entry:
    """One registered item: its name, the object, a one-line summary, its paper, and facts
    known without building it (a dataset's size and shape; None where a kind has none)."""

    name: str
    obj: Any
    summary: str
    paper: str = ""
    facts: Any = None


class Registry:
    """A name -> object mapping with a summary line and a paper reference per entry.

    ``modules``: each module that registers entries, with the names it registers; it is
    imported on the first :meth:`get` / :meth:`entry` of one of them.
    """

    def __init__(self, kind: str, modules: Optional[dict[str, tuple[str, ...]]] = None):
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._modules = {name: module for module, names in (modules or {}).items() for name in names}

    def register(self, name: str, *, summary: str, paper: str = "", facts: Any = None) -> Callable[[Any], Any]:
        """Decorator registering ``obj`` under ``name``; returns ``obj`` unchanged."""

        def decorate(obj: Any) -> Any:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = Entry(name, obj, summary, paper, facts)
            return obj

        return decorate

    def get(self, name: str) -> Any:
        return self.entry(name).obj

    def entry(self, name: str) -> Entry:
        if name not in self._entries and name not in self._modules and self.kind in PLUGIN_KINDS:
            load_plugins()      # FEDCORE_PLUGINS' datasets and models (fedcore.plugins)
        if name not in self._entries and name in self._modules:
            importlib.import_module(self._modules[name])
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        if self.kind in PLUGIN_KINDS:
            load_plugins()
        return sorted(set(self._entries) | set(self._modules))

    def entries(self) -> list[Entry]:
        return [self.entry(n) for n in self.names()]

    def __contains__(self, name: str) -> bool:
        if name not in self._entries and name not in self._modules and self.kind in PLUGIN_KINDS:
            load_plugins()
        return name in self._entries or name in self._modules

    def check(self, field: str, value, empty_ok: bool = False) -> None:
        """Raise ``ConfigError`` naming ``field`` unless ``value`` is registered (a near miss
        is suggested; a long list of names is not dumped)."""
        if value in self or (empty_ok and value == ""):
            return
        import difflib

        from .errors import ConfigError

        names = self.names()
        close = difflib.get_close_matches(str(value), names, n=3)
        if len(names) <= 12:
            allowed = "must be one of: " + ", ".join(names)
        else:
            allowed = (f"is not a known {self.kind}" + (f"; did you mean {', '.join(close)}?" if close else "")
                       + f" (`python -m fedcore list` shows all {len(names)})")
        if empty_ok:
            allowed = "must be empty or " + allowed.removeprefix("must be ")
        raise ConfigError(field, value, allowed)
