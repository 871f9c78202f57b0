"""The aggregator registry; each aggregator module registers itself here."""
from ..registry import Registry

AGGREGATORS = Registry("aggregator")
