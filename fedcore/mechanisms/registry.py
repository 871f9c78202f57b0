"""The mechanism registry; each mechanism module registers itself here."""
from ..registry import Registry

MECHANISMS = Registry("mechanism")
