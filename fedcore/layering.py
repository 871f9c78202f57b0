"""How the CLI layers a configuration: a preset (or the defaults), then a ``--config`` JSON
file, then each ``--set KEY=VALUE`` in order (``--set method=NAME`` applies the method's recipe
first, with the preset's run-scale settings for it, then the other values). Used by ``run``, ``sweep``, ``audit``, ``bench`` and
``reproduce``; it imports no command, so no command module imports another through it.
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import FedcoreError


def build_config(preset: str | None, config_file: str | None, sets: list[str], config: dict | None = None):
    """Preset (or defaults) <- JSON file (or ``config``, the same fields as a dict: :func:`fedcore.run`)
    <- ``--set`` overrides, validated at each step."""
    from .config import RunConfig
    from .methods import apply_method, consistent_method
    from .resolve import preset_config
    from .resolve import resolve

    cfg = preset_config(preset) if preset else RunConfig()
    fields = read_config_file(config_file) if config_file else config
    if fields:
        cfg = RunConfig.from_dict({**cfg.to_dict(), **fields})
    overrides = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep:
            raise FedcoreError(f"--set {item[:60]!r}: expected key=value, e.g. --set rounds=5")
        overrides[key.strip()] = value.strip()
    if "method" in overrides:
        return resolve(apply_method(cfg, overrides.pop("method"), overrides, preset=preset))
    return resolve(consistent_method(cfg.with_overrides(overrides)) if overrides else cfg)


def read_config_file(path: str) -> dict:
    """A ``--config`` file: a strict-JSON object of config fields (no NaN / Infinity)."""
    from .config import refuse_json_constant

    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise FedcoreError(f"--config {path}: not a UTF-8 text file; expected a JSON object of config fields")
    except OSError as exc:
        raise FedcoreError(f"--config {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text, parse_constant=refuse_json_constant)
    except (ValueError, RecursionError) as exc:
        raise FedcoreError(f"--config {path}: not valid JSON ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise FedcoreError(f"--config {path}: holds a JSON {type(data).__name__.replace('NoneType', 'null')}; "
                           "expected an object of config fields, e.g. {\"rounds\": 5}")
    return data


def refuse_unused_epsilon(cfg, sets) -> None:
    """Refuse ``--set privacy.epsilon=...`` on a config that adds no noise (mechanism ``none``): its
    ε would be ignored without a word (``attack`` on fedavg reported a run that spent nothing)."""
    given = [item.partition("=")[2].strip() for item in sets or () if item.partition("=")[0].strip() == "privacy.epsilon"]
    if given and cfg.privacy.mechanism == "none":
        name = cfg.method or "this config"
        raise FedcoreError(f"--set privacy.epsilon={given[-1]}: {name} adds no noise (privacy.mechanism none), so "
                           "no ε applies; drop it or pick a private method, e.g. --set method=dp_fedavg")
