"""Client-side privacy mechanisms. Importing this package registers all of them."""
from . import none  # noqa: F401
from .base import Mechanism, Upload
from .registry import MECHANISMS

__all__ = ["MECHANISMS", "Mechanism", "Upload"]
