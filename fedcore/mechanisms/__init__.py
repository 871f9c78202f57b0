"""Client-side privacy mechanisms; :data:`MECHANISMS` imports each one's module on first use."""
from .base import Mechanism, Upload
from .registry import MECHANISMS

__all__ = ["MECHANISMS", "Mechanism", "Upload", "caveat_of"]


def caveat_of(privacy: dict) -> str:
    """What the headline ε does not prove for a run whose config's ``privacy`` section is ``privacy``
    (a stored record's: :meth:`Mechanism.caveat_for` its mechanism and options; "" = a rigorous bound
    for what ran, and for no mechanism)."""
    from ..errors import ConfigError

    name = (privacy or {}).get("mechanism") or "none"
    if name not in MECHANISMS.names():
        raise ConfigError("privacy.mechanism", name, "is not a known mechanism")
    mech = MECHANISMS.get(name)
    return mech.caveat_for(mech.parse_options((privacy or {}).get("mechanism_options") or {},
                                              "privacy.mechanism_options"))
