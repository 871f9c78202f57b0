"""Which mechanism / aggregator / model combinations make sense, checked at config time.

Each rule is a sentence a person can act on; ``check_compatibility`` raises the first
violated one as a ``ConfigError``. (Batch norm against per-sample clipping needs the built
model: :func:`fedcore.engine.setup.prepare` checks it.)
"""
from __future__ import annotations

from .errors import ConfigError


def check_compatibility(cfg) -> None:
    """Reject impossible combinations in ``cfg`` (a :class:`~fedcore.config.RunConfig`)."""
    from .catalog import AGGREGATORS, MECHANISMS

    mech = MECHANISMS.get(cfg.privacy.mechanism)
    agg = AGGREGATORS.get(cfg.privacy.aggregator)
    if mech.shuffled and agg.needs_linkable:
        raise ConfigError("privacy.aggregator", cfg.privacy.aggregator,
                          f"needs to know which client sent which update, but {cfg.privacy.mechanism} "
                          "shuffles the uploads anonymously; use 'mean'")
    if mech.upload_kind == "sign" and not agg.accepts_sign:
        why = getattr(agg, "sign_incompatibility", "")
        usable = [n for n in AGGREGATORS.names() if AGGREGATORS.get(n).accepts_sign
                  and not (mech.shuffled and AGGREGATORS.get(n).needs_linkable)]
        raise ConfigError("privacy.aggregator", cfg.privacy.aggregator,
                          f"cannot combine sign uploads from {cfg.privacy.mechanism}"
                          + (f" ({why})" if why else "") + "; use one of: " + ", ".join(usable))
    for extra in getattr(mech, "compat_rules", ()) + getattr(agg, "compat_rules", ()):
        extra(cfg)

