"""The mechanism registry; each mechanism module registers itself here, and is named below
so that checking a config imports only the mechanism it names. A mechanism whose work needs
torch registers its options from a ``<name>_spec`` module that loads none (its ``implementation``
is imported when a run builds it)."""
from ..registry import Registry

MECHANISMS = Registry("mechanism", modules={"fedcore.mechanisms.none": ("none",), **{
    f"fedcore.mechanisms.{name}_spec": (name,) for name in (
        "dp_sgd", "gaussian", "laplace", "ldp_sign", "two_point", "hw_gaussian", "uldp_gaussian")}})
