"""``python scripts/gpu_tests.py tests.test_graphs [tests.other ...]``: run test modules' CUDA tests where
pytest may be missing (the device image has torch, not pytest): every ``test_*`` function whose name says
``gpu`` is called in turn; exit 1 at the first failure, 0 when all pass (or none can run here)."""
import importlib
import sys
import traceback
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
try:
    import pytest  # noqa: F401
except ImportError:   # just enough of pytest for a module to import
    shim = types.ModuleType("pytest")

    class _Mark:
        def __getattr__(self, name):
            return lambda *a, **k: (lambda f: f)

    shim.mark = _Mark()
    shim.fixture = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
    sys.modules["pytest"] = shim

import torch  # noqa: E402

if not torch.cuda.is_available():
    print("no CUDA device: nothing to run")
    raise SystemExit(0)
for module in map(importlib.import_module, sys.argv[1:]):
    for name in sorted(n for n in dir(module) if n.startswith("test_") and "gpu" in n):
        try:
            getattr(module, name)()
        except Exception:   # noqa: BLE001
            traceback.print_exc()
            print(f"FAILED {name}")
            raise SystemExit(1)
        print(f"passed {name}")
