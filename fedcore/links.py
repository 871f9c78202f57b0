"""A config as a shareable link: a preset name plus the few fields that differ from it.

The dashboard writes :func:`config_to_params` into the page URL and rebuilds the config
with :func:`config_from_params`, so a copied link reopens the same experiment. Values
are JSON (``rounds=30``, ``privacy.epsilon=[1,5,10]``,
``privacy.mechanism_options={"clip":2}``); dotted names are those of ``--set``.

>>> from fedcore.resolve import preset_config
>>> cfg = preset_config("demo").with_overrides({"rounds": 30})
>>> config_to_params(cfg, "demo")
{'preset': 'demo', 'rounds': '30'}
>>> config_from_params({"preset": "demo", "rounds": "30"}) == cfg
True
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Optional

from .config import RunConfig, json_or_raw, flatten, unflatten  # noqa: F401  (the one dotted-name codec)
from .errors import ConfigError

LESSON_PARAMS = ("hide", "lock")
"""A lesson link's parameters: comma-separated names of settings the Playground does not draw
(``hide``) or draws read-only (``lock``); :func:`lesson_from_params`, :func:`setting_fields`."""
VIEW_PARAMS = ("present", *LESSON_PARAMS)
"""Parameters that change how the Playground shows a config, not which config it is (``present=1``:
the presentation layout)."""
RESERVED = ("preset", "run", "runs", *VIEW_PARAMS)
"""Query-parameter names that are not config fields."""


def config_overrides(cfg: RunConfig, base: RunConfig) -> dict[str, Any]:
    """The dotted fields whose value in ``cfg`` differs from ``base``."""
    mine, theirs = flatten(cfg.to_dict()), flatten(base.to_dict())
    return {k: v for k, v in mine.items() if theirs.get(k) != v}


def link_base(preset: str, method: str) -> RunConfig:
    """What a link or a CLI line starts from: the preset, with ``method`` applied the way the
    CLI and the Playground apply it (the recipe and the preset's run-scale settings for it,
    :func:`fedcore.methods.apply_method`) when it is not the preset's own method."""
    from .methods import apply_method
    from .resolve import preset_config

    cfg = preset_config(preset)
    return apply_method(cfg, method, preset=preset) if method and method != cfg.method else cfg


def differences(cfg: RunConfig, preset: str) -> dict[str, Any]:
    """The fields a link or CLI line names: ``method`` first when it is not the preset's,
    then every field that differs from :func:`link_base` (so a value set back to the
    preset's, e.g. ``rounds``, is named even where the method's settings change it)."""
    from .resolve import preset_config

    out = {"method": cfg.method} if cfg.method != preset_config(preset).method else {}
    return {**out, **config_overrides(cfg, link_base(preset, cfg.method))}


def config_to_params(cfg: RunConfig, preset: str = "demo") -> dict[str, str]:
    """Query parameters: ``preset`` plus each field of :func:`differences` as compact JSON."""
    params = {"preset": preset}
    for key, value in differences(cfg, preset).items():
        params[key] = json.dumps(value, separators=(",", ":"))
    return params


def config_from_params(params: Mapping[str, Any], default_preset: str = "demo",
                       dropped: Optional[list] = None) -> RunConfig:
    """Rebuild the config of :func:`config_to_params`. A name that is no field (nor an option of the
    component the link picks) raises ``ConfigError``; with a ``dropped`` list it is left out instead and
    appended there as ``name=value``, and the rest of the link is kept.

    >>> gone = []
    >>> config_from_params({"preset": "demo", "rounds": "30", "colour": "red"}, dropped=gone).rounds, gone
    (30, ['colour=red'])
    """
    from .methods import consistent_method
    from .resolve import preset_config
    from .resolve import resolve

    preset = params.get("preset") or default_preset
    overrides = {}
    for key, raw in params.items():
        if key in RESERVED:
            continue
        overrides[key] = json_or_raw(raw) if isinstance(raw, str) else raw  # bare: dataset=mnist
    method = overrides.get("method")
    cfg = link_base(preset, method) if isinstance(method, str) else preset_config(preset)
    while True:
        try:
            return resolve(consistent_method(cfg.with_overrides(overrides))) if overrides else cfg
        except ConfigError as exc:
            if dropped is None or exc.field not in overrides or "unknown" not in str(exc):
                raise
            dropped.append(f"{exc.field}={params[exc.field]}")
            del overrides[exc.field]


def cli_command(cfg: RunConfig, preset: str = "demo") -> str:
    """The ``python -m fedcore run`` line that trains ``cfg`` headlessly.

    Strings are passed bare (``--set partition.kind=dirichlet``), everything else as JSON.

    >>> from fedcore.resolve import preset_config
    >>> cli_command(preset_config("demo").with_overrides({"rounds": 5, "partition.kind": "shards"}))
    'python -m fedcore run --preset demo --set rounds=5 --set partition.kind=shards'
    """
    import shlex

    sets = []
    for key, value in differences(cfg, preset).items():
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        sets.append("--set " + shlex.quote(f"{key}={text}"))
    return " ".join(["python -m fedcore run --preset", shlex.quote(preset), *sets])


# --- lesson links: settings a teacher hides or locks ---------------------------------------------
SETTING_ALIASES = {"clients": "num_clients", "eps": "privacy.epsilon", "ε": "privacy.epsilon",
                   "batch": "local.batch_size"}
"""Short names a teacher types that are neither a field nor the unique last part of one."""


def setting_fields(name: str) -> tuple[str, ...]:
    """The dotted config fields a lesson link's ``name`` stands for; empty when it names none.

    ``name`` is a field (``privacy.epsilon``), the unique last part of one (``epsilon``,
    ``rounds``, ``lr``), an alias of :data:`SETTING_ALIASES`, or a section (``local``: every
    ``local.*``). A component stands for its options too, since they belong to it: hiding the
    aggregator picker and leaving its options form on the page would make no sense.

    >>> setting_fields("aggregator")
    ('privacy.aggregator', 'privacy.aggregator_options')
    >>> setting_fields("partition"), setting_fields("clients"), setting_fields("ε")
    (('partition.kind', 'partition.options'), ('num_clients',), ('privacy.epsilon',))
    >>> setting_fields("partiton")
    ()
    """
    fields = list(flatten(RunConfig().to_dict()))
    name = SETTING_ALIASES.get(name, name)
    tails = [f for f in fields if f.rpartition(".")[2] == name]
    field = name if name in fields else tails[0] if len(tails) == 1 else None
    if field is not None:
        return tuple(f for f in fields if f in (field, field + "_options"))
    return tuple(f for f in fields if f.startswith(name + "."))


def setting_names() -> list[str]:
    """The short names :func:`setting_fields` reads: every field's unique last part, the
    aliases and the sections (a field's full dotted name works too)."""
    fields = list(flatten(RunConfig().to_dict()))
    tails = [f.rpartition(".")[2] for f in fields]
    sections = dict.fromkeys(f.partition(".")[0] for f in fields if "." in f)
    return [*(t for t in tails if tails.count(t) == 1), *SETTING_ALIASES, *sections]


def lesson_from_params(params: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{"hide": names, "lock": names}`` of a link: each comma-separated list trimmed, lower
    case, ``-`` and spaces read as ``_`` (``Data split`` is ``data_split``), repeats dropped.

    >>> lesson_from_params({"hide": "Partition, aggregator,,partition", "rounds": "3"})
    {'hide': ('partition', 'aggregator'), 'lock': ()}
    """
    def names(raw: Any) -> tuple[str, ...]:
        items = raw if isinstance(raw, (list, tuple)) else str(raw or "").split(",")
        cleaned = ("_".join(str(item).strip().lower().replace("-", " ").split()) for item in items)
        return tuple(dict.fromkeys(n for n in cleaned if n))

    return {key: names(params.get(key)) for key in LESSON_PARAMS}


def lesson_to_params(lesson: Mapping[str, Any]) -> dict[str, str]:
    """The query parameters of :func:`lesson_from_params`'s result (none for an empty list).

    >>> lesson_to_params(lesson_from_params({"hide": "partition,aggregator", "lock": "method"}))
    {'hide': 'partition,aggregator', 'lock': 'method'}
    """
    return {key: ",".join(lesson[key]) for key in LESSON_PARAMS if lesson.get(key)}
