"""Every registry in one place (the CLI's ``list`` and the dashboard's pickers read it)."""
from .aggregators import AGGREGATORS
from .data import DATASETS
from .mechanisms import MECHANISMS
from .methods import METHODS
from .models import MODELS
from .partition import PARTITIONERS
from .presets import PRESETS
from . import recipes  # noqa: F401  (registers the papers' methods)
from .reproduce import presets as _paper_presets  # noqa: F401  (registers the papers' presets)

REGISTRIES = {
    "datasets": DATASETS,
    "models": MODELS,
    "partitioners": PARTITIONERS,
    "mechanisms": MECHANISMS,
    "aggregators": AGGREGATORS,
    "methods": METHODS,
    "presets": PRESETS,
}

__all__ = ["AGGREGATORS", "DATASETS", "MECHANISMS", "METHODS", "MODELS", "PARTITIONERS",
           "PRESETS", "REGISTRIES"]
