"""The code's structure, checked on every test run (CI runs pytest): no module imports
another module's private name, no import circles in ``fedcore`` or ``pages``, and resolving a
config of any registered component imports no torch."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedcore.config import flatten

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fedcore", "pages")
PENDING: set[str] = set()
"""Known violations in files other work in progress owns; each line goes once its importer is fixed."""


def private_imports(package: str) -> set[str]:
    """``from X import _name`` statements (lazy ones inside functions included) where X is
    a module of this project."""
    found = set()
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if node.level == 0 and module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    where = path.relative_to(ROOT).as_posix()
                    found.add(f"{where}: from {'.' * node.level}{module} import {alias.name}")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_a_private_name_of_another(package):
    found = private_imports(package)
    assert found - PENDING == set(), "give the name a public one in its home module"
    assert {p for p in PENDING if p.startswith(package + "/")} <= found, "fixed: drop it from PENDING"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circles(package):
    out = subprocess.run([sys.executable, "scripts/import_cycles.py", package], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("import circles: 0; modules in circles: 0"), out


def config_naming(field: str, name: str):
    """A valid config whose ``field`` is ``name``: the demo under the first method whose recipe names
    it (whose other settings it needs, e.g. the uldp aggregator), else the demo with ``name`` set."""
    from fedcore.catalog import METHODS
    from fedcore.methods import apply_method, method_overrides
    from fedcore.resolve import preset_config, resolve

    demo = preset_config("demo")
    method = next((m for m in METHODS.names() if method_overrides(m).get(field) == name), "")
    return resolve(apply_method(demo, method, preset="demo") if method else demo.with_overrides({field: name}))


def registered(field: str, registry: str) -> list:
    from fedcore import catalog

    return [pytest.param(field, name, id=f"{field}={name}") for name in getattr(catalog, registry).names()]


@pytest.mark.parametrize("field, name", registered("privacy.mechanism", "MECHANISMS")
                         + registered("privacy.aggregator", "AGGREGATORS") + registered("partition.kind", "PARTITIONERS"))
def test_resolving_a_config_of_every_registered_component_loads_no_torch(field, name):
    """What resolve() reads of a component (its options, traits, rules) loads no torch, scipy or
    dp-accounting: the implementation is imported when a run builds it."""
    cfg = config_naming(field, name)
    assert flatten(cfg.to_dict())[field] == name
    code = ("import json, sys\nfrom fedcore.config import RunConfig\nfrom fedcore.resolve import resolve\n"
            "resolve(RunConfig.from_dict(json.loads(sys.argv[1])))\n"
            "print(sorted(m for m in ('torch', 'scipy', 'dp_accounting') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(cfg.to_dict())], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_each_registry_names_the_module_of_every_entry():
    """A registry imports a module on first use of one of its names (``Registry(modules=...)``):
    each module registers exactly the names the table gives it."""
    from fedcore.catalog import AGGREGATORS, DATASETS, MECHANISMS, MODELS

    for registry in (AGGREGATORS, DATASETS, MECHANISMS, MODELS):
        declared = dict(registry._modules)
        found = {e.name: e.obj.__module__ for e in registry.entries() if e.obj.__module__ in declared.values()}
        assert declared and found == declared
