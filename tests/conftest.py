"""Shared fixtures."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    """A fresh run store for the module's pages (``FEDCORE_STORE``); its job manager is closed after."""
    path = tmp_path_factory.mktemp("store")
    old = os.environ.get("FEDCORE_STORE")
    os.environ["FEDCORE_STORE"] = str(path)
    yield path
    from pages.components import server

    server.job_manager(str(path)).close()
    if old is None:
        os.environ.pop("FEDCORE_STORE", None)
    else:
        os.environ["FEDCORE_STORE"] = old
