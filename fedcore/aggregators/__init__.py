"""Server-side aggregation rules; :data:`AGGREGATORS` imports each one's module on first use."""
from .base import Aggregate, Aggregator
from .registry import AGGREGATORS

__all__ = ["AGGREGATORS", "Aggregate", "Aggregator"]
