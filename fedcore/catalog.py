"""Every registry in one place (the CLI's ``list`` and the dashboard's pickers read it)."""
from .aggregators import AGGREGATORS
from .data import DATASETS
from .mechanisms import MECHANISMS
from .methods import METHODS
from .models import MODELS
from .partition import PARTITIONERS
from .presets import PRESETS
from . import recipes  # noqa: F401  (registers the papers' methods)
from . import papers  # noqa: F401  (registers the papers' presets)

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


def method_title(name: str) -> str:
    """Method ``name`` as its paper names it ("LDP-FL", not ``ldp_fl``): its summary up to the
    colon; a name no recipe registers, as it is (a legend or a table never shows a code name
    where a paper's name exists)."""
    return METHODS.entry(name).summary.split(":")[0].rstrip(".") if name in METHODS else name
