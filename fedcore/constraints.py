"""Declarative constraints on settings, in the style of scikit-learn's
``_parameter_constraints``: one place says what a field may hold, and both validation and
the dashboard's widgets read it.

A dataclass field declares its constraint with :func:`setting`::

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Options:
    ...     clip: float = setting(2.0, Interval(float, 0, None, closed="neither"), "L2 clip C")
    >>> check_fields(Options(clip=-1.0), "opts")
    Traceback (most recent call last):
    ...
    fedcore.errors.ConfigError: opts.clip: got -1.0; must be a number > 0

``Interval.suggested`` is only a hint for a slider's range: a widget never clamps a stored
value to it (outside the hint it shows a number input instead).
This module imports neither torch nor any registry.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from .errors import ConfigError

_META = "constraint"
_HELP = "help"


@dataclass(frozen=True)
class Interval:
    """A number of ``type`` (``int`` or ``float``) between ``low`` and ``high`` (None = unbounded).

    ``closed``: ``"both"``, ``"left"``, ``"right"`` or ``"neither"``. Floats must be finite.
    ``suggested``: ``(lo, hi)`` range a slider may offer; ``step``: a widget step hint.
    """

    type: type
    low: Optional[float]
    high: Optional[float]
    closed: str = "both"
    suggested: Optional[tuple[float, float]] = None
    step: Optional[float] = None

    def accepts(self, v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        if self.type is int and not isinstance(v, int):
            return False
        if isinstance(v, float) and not math.isfinite(v):
            return False
        if self.low is not None and (v < self.low or (v == self.low and self.closed in ("right", "neither"))):
            return False
        if self.high is not None and (v > self.high or (v == self.high and self.closed in ("left", "neither"))):
            return False
        return True

    def describe(self) -> str:
        kind = "an integer" if self.type is int else "a number"
        num = _number
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            return f"must be {kind} in {'[' if lo_in else '('}{num(self.low)}, {num(self.high)}{']' if hi_in else ')'}"
        if self.low is not None:
            return f"must be {kind} {'>=' if lo_in else '>'} {num(self.low)}"
        if self.high is not None:
            return f"must be {kind} {'<=' if hi_in else '<'} {num(self.high)}"
        return f"must be {kind}" + (" (finite)" if self.type is float else "")


def _number(x: float) -> str:
    """``4294967295``, ``100000``, ``0.5``, ``1e-05``: exact for integers, short otherwise."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Choice:
    """One of a fixed tuple of values (strings, usually)."""

    options: tuple

    def accepts(self, v: Any) -> bool:
        return isinstance(v, type(self.options[0])) and v in self.options if self.options else False

    def describe(self) -> str:
        return "must be one of: " + ", ".join(map(str, self.options))


@dataclass(frozen=True)
class Boolean:
    def accepts(self, v: Any) -> bool:
        return isinstance(v, bool)

    def describe(self) -> str:
        return "must be true or false"


@dataclass(frozen=True)
class Text:
    """Free text up to ``max_len`` characters (names checked elsewhere, e.g. registry names)."""

    max_len: int = 200

    def accepts(self, v: Any) -> bool:
        return isinstance(v, str) and len(v) <= self.max_len

    def describe(self) -> str:
        return f"must be text of at most {self.max_len} characters"


@dataclass(frozen=True)
class OptionalOf:
    """None (``automatic``) or a value the inner constraint accepts."""

    inner: Any

    def accepts(self, v: Any) -> bool:
        return v is None or self.inner.accepts(v)

    def describe(self) -> str:
        return self.inner.describe() + ", or null (automatic)"


@dataclass(frozen=True)
class PerClient:
    """One value, or one per client, each accepted by ``inner`` (e.g. per-client ε)."""

    inner: Any

    def accepts(self, v: Any) -> bool:
        return isinstance(v, tuple) and len(v) >= 1 and all(self.inner.accepts(x) for x in v)

    def describe(self) -> str:
        return "must hold one value or one per client, each " + self.inner.describe().removeprefix("must be ")


@dataclass(frozen=True)
class Mapping:
    """A mapping of option names to values (checked by the component that owns them)."""

    def accepts(self, v: Any) -> bool:
        return isinstance(v, dict) and all(isinstance(k, str) for k in v)

    def describe(self) -> str:
        return "must be a mapping of option names to values, e.g. {\"clip\": 2}"


Constraint = Any  # Interval | Choice | Boolean | Text | OptionalOf | PerClient | Mapping


def setting(default: Any, constraint: Constraint, help: str = "", **kw) -> Any:
    """A dataclass field with a declared constraint (and a one-line help text)."""
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata={_META: constraint, _HELP: help}, **kw)
    return field(default=default, metadata={_META: constraint, _HELP: help}, **kw)


def constraint_of(cls_or_obj: Any, name: str) -> Optional[Constraint]:
    """The declared constraint of field ``name`` (None when it declares none)."""
    for f in dataclasses.fields(cls_or_obj):
        if f.name == name:
            return f.metadata.get(_META)
    return None


def help_of(cls_or_obj: Any, name: str) -> str:
    for f in dataclasses.fields(cls_or_obj):
        if f.name == name:
            return f.metadata.get(_HELP, "")
    return ""


def check(name: str, value: Any, constraint: Constraint) -> None:
    """Raise :class:`ConfigError` naming ``name`` unless ``constraint`` accepts ``value``.

    A :class:`PerClient` value names the first bad element, e.g. ``privacy.epsilon[2]``.
    """
    if isinstance(constraint, PerClient) and isinstance(value, tuple) and value:
        for i, x in enumerate(value):
            if not constraint.inner.accepts(x):
                raise ConfigError(f"{name}[{i}]", shorten(x), constraint.inner.describe())
        return
    if not constraint.accepts(value):
        raise ConfigError(name, shorten(value), constraint.describe())


FINITE = "must be a finite number (not infinity or NaN)"
"""What a float setting given infinity or NaN is told (``clip=Infinity`` is a float, but not one
any setting takes)."""
_NON_FINITE_WORDS = frozenset({"inf", "infinity", "nan"})


def spells_non_finite(value: Any) -> bool:
    """``value`` is a float infinity or NaN, or text spelling one (``Infinity``, ``-inf``,
    ``NaN``: the ``--set`` / link parser keeps those as text, refusing JSON's constants).

    >>> spells_non_finite("Infinity"), spells_non_finite(float("nan")), spells_non_finite("2.0")
    (True, True, False)
    """
    if isinstance(value, float):
        return not math.isfinite(value)
    return isinstance(value, str) and value.strip().lower().lstrip("+-") in _NON_FINITE_WORDS


def check_fields(obj: Any, prefix: str) -> None:
    """Check every field of dataclass instance ``obj`` that declares a constraint; a float
    field without one still refuses infinity and NaN (:data:`FINITE`), also when spelled as
    text.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Options:
    ...     clip: float = 2.0
    >>> check_fields(Options(clip="Infinity"), "opts")
    Traceback (most recent call last):
    ...
    fedcore.errors.ConfigError: opts.clip: got 'Infinity'; must be a finite number (not infinity or NaN)
    """
    for f in dataclasses.fields(obj):
        c = f.metadata.get(_META)
        name = f"{prefix}.{f.name}" if prefix else f.name
        if c is not None:
            check(name, getattr(obj, f.name), c)
        elif f.type in (float, "float") and spells_non_finite(getattr(obj, f.name)):
            raise ConfigError(name, shorten(getattr(obj, f.name)), FINITE)


def shorten(value: Any, limit: int = 60) -> Any:
    """The value as an error shows it: long values are cut (a 5000-digit integer, a blob)."""
    text = repr(value)
    if len(text) <= limit:
        return value
    return _Cut(text[: limit - 1] + "…")


class _Cut(str):
    def __repr__(self) -> str:
        return str(self)
