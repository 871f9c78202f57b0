"""The mechanism registry; each mechanism module registers itself here, and is named below
so that checking a config imports only the mechanism it names."""
from ..registry import Registry

MECHANISMS = Registry("mechanism", modules={f"fedcore.mechanisms.{name}": (name,) for name in (
    "none", "dp_sgd", "gaussian", "laplace", "ldp_sign", "two_point", "hw_gaussian", "uldp_gaussian")})
