"""fedcore: the federated-learning-with-differential-privacy engine behind FL Privacy Lab.

Plain Python (torch, numpy); never imports streamlit. See ``python -m fedcore --help``, and
README "From Python" for the API of :data:`__all__` (:mod:`fedcore.api`, :mod:`fedcore.plugins`):

>>> import fedcore
>>> r = fedcore.run(preset="demo", method="dp_fedavg", epsilon=3)     # doctest: +SKIP
>>> print(r.final_accuracy, r.epsilon_headline)                       # doctest: +SKIP

The names load on first use (PEP 562), so ``import fedcore`` (every ``python -m fedcore``, every
worker) loads no more than before.
"""
import importlib

__version__ = "0.1.0"

__all__ = ["ConfigError", "FedcoreError", "RunResult", "attack", "frontier", "make_config", "reproduce_paper",
           "run", "use_plugins"]
HOMES = {"ConfigError": "errors", "FedcoreError": "errors", "use_plugins": "plugins"}
"""Where each name of ``__all__`` lives: here, or else :mod:`fedcore.api`."""


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module 'fedcore' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fedcore.{HOMES.get(name, 'api')}"), name)


def __dir__():
    return sorted([*globals(), *__all__])
