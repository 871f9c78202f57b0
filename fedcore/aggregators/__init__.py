"""Server-side aggregation rules. Importing this package registers all of them."""
from . import mean  # noqa: F401
from . import hellinger, kalman, probabilistic, weighted  # noqa: F401
from . import uldp  # noqa: F401
from .base import Aggregate, Aggregator
from .registry import AGGREGATORS

__all__ = ["AGGREGATORS", "Aggregate", "Aggregator"]
