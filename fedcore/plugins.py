"""Your own datasets and models, seen by every process: the modules ``FEDCORE_PLUGINS`` names.

A plugin is a plain Python module that registers entries the way fedcore's own modules do::

    # mylab/fl_data.py
    from fedcore.data import DATASETS, Dataset, DatasetFacts

    @DATASETS.register("my_table", summary="My CSV, 'label' column", facts=DatasetFacts(800, (12,), 3, 200))
    def load(root, download):
        return Dataset("my_table", x_train, y_train, x_test, y_test, num_classes=3, input_shape=(12,))

``FEDCORE_PLUGINS=mylab.fl_data`` (comma-separated module names, importable from the working
folder or ``PYTHONPATH``) makes the CLI, the dashboard's pickers, the job workers and Ray's tasks
import it: the dataset and model registries call :func:`load_plugins` before they answer a name
they lack, and spawned workers
and Ray's local workers inherit the setting. In a notebook, :func:`use_plugins` imports modules
now and adds them to the setting, so the processes it starts see them too. ``examples/`` holds a
CSV table, an image folder and a custom ``nn.Module`` (README, "From Python").
"""
from __future__ import annotations

import importlib
import os

from .errors import FedcoreError

ENV = "FEDCORE_PLUGINS"
PLUGIN_KINDS = ("dataset", "model")
"""The registries that load the plugins before answering a name they lack; a plugin may register any
kind (a mechanism, a preset), loaded then with the first dataset or model looked up."""
_loaded: set[str] = set()


def plugin_modules() -> list[str]:
    """The module names ``FEDCORE_PLUGINS`` holds, in order, blanks dropped."""
    return [m.strip() for m in os.environ.get(ENV, "").split(",") if m.strip()]


def load_plugins() -> None:
    """Import every plugin module not imported yet by this function; a module that cannot be
    imported is one line naming it and why (``FedcoreError``), never a traceback."""
    for name in plugin_modules():
        if name in _loaded:
            continue
        _loaded.add(name)           # first: a plugin that reads a registry while it loads does not loop
        try:
            importlib.import_module(name)
        except Exception as exc:    # the plugin's own code: any failure is the setting's
            _loaded.discard(name)
            raise FedcoreError(f"{ENV}: cannot import plugin {name!r} ({type(exc).__name__}: {exc}); "
                               "it must be importable from the working folder or PYTHONPATH") from None


def use_plugins(*modules: str) -> None:
    """Import ``modules`` now and add them to ``FEDCORE_PLUGINS`` for the processes started later
    (the sweep's and the dashboard's workers, Ray's local workers), e.g.
    ``fedcore.use_plugins("examples.tabular_csv")`` from the repository's folder.
    """
    names = plugin_modules()
    os.environ[ENV] = ",".join(names + [m for m in modules if m not in names])
    load_plugins()
