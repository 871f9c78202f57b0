"""Which mechanism / aggregator / model combinations make sense, checked at config time.

Each rule is a sentence a person can act on; ``check_compatibility`` raises the first
violated one as a ``ConfigError``. (Batch norm against per-sample clipping needs the built
model: :func:`fedcore.engine.setup.prepare` checks it.)
"""
from __future__ import annotations

from .errors import ConfigError


def check_compatibility(cfg) -> None:
    """Reject impossible combinations in ``cfg`` (a :class:`~fedcore.config.RunConfig`).

    The rules read the mechanism's traits under its options (``traits_for``): LDP-FL's
    two-point shuffles only with ``shuffle`` on, HW-DPFL clips per sample only with
    ``clip_gradients``.
    """
    from .catalog import AGGREGATORS, MECHANISMS

    pc = cfg.privacy
    mech = MECHANISMS.get(pc.mechanism)
    traits = mech.traits_for(mech.parse_options(pc.mechanism_options, "privacy.mechanism_options"))
    agg = AGGREGATORS.get(pc.aggregator)
    if traits.shuffled and agg.needs_linkable:
        raise ConfigError("privacy.aggregator", pc.aggregator,
                          f"needs to know which client sent which update, but {pc.mechanism} shuffles the "
                          "uploads anonymously, so no value can be tied to a client; use 'mean'"
                          + (", or privacy.mechanism_options.shuffle=false" if "shuffle" in
                             {f for f in mech.Options.__dataclass_fields__} else ""))
    if traits.upload_kind == "sign" and not agg.accepts_sign:
        why = getattr(agg, "sign_incompatibility", "")
        usable = [n for n in AGGREGATORS.names() if AGGREGATORS.get(n).accepts_sign
                  and not (traits.shuffled and AGGREGATORS.get(n).needs_linkable)]
        raise ConfigError("privacy.aggregator", pc.aggregator,
                          f"cannot combine sign uploads from {pc.mechanism}"
                          + (f" ({why})" if why else "") + "; use one of: " + ", ".join(usable))
    for extra in getattr(mech, "compat_rules", ()) + getattr(agg, "compat_rules", ()):
        extra(cfg)
