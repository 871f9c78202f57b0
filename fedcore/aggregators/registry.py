"""The aggregator registry; each aggregator module registers itself here, and is named below
so that checking a config imports only the aggregator it names."""
from ..registry import Registry

AGGREGATORS = Registry("aggregator", modules={
    "fedcore.aggregators.mean": ("mean", "fedavg"),
    "fedcore.aggregators.hellinger": ("hellinger",),
    "fedcore.aggregators.kalman": ("kalman",),
    "fedcore.aggregators.probabilistic": ("probabilistic",),
    "fedcore.aggregators.weighted": ("weighted",),
    "fedcore.aggregators.uldp": ("uldp",),
})
