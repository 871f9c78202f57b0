"""The model registry; each model module registers its factory here."""
from fedcore.registry import Registry

MODELS = Registry("model")
