"""Client-side privacy mechanisms. Importing this package registers all of them."""
from . import none  # noqa: F401
from . import dp_sgd, gaussian, laplace, ldp_sign, two_point  # noqa: F401
from . import hw_gaussian  # noqa: F401
from . import uldp_gaussian  # noqa: F401
from .base import Mechanism, Upload
from .registry import MECHANISMS

__all__ = ["MECHANISMS", "Mechanism", "Upload"]
