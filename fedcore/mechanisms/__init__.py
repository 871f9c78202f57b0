"""Client-side privacy mechanisms; :data:`MECHANISMS` imports each one's module on first use."""
from .base import Mechanism, Upload
from .registry import MECHANISMS

__all__ = ["MECHANISMS", "Mechanism", "Upload"]
