"""docs/quickstart.ipynb runs top to bottom (nbclient) on the bundled digits: the API, a plot, a CSV
of your own, the attack at one ε and MLflow. Skipped only where the notebook tools are absent
(requirements-dev.txt installs them)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_quickstart_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("mlflow")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    # the kernel draws inline whatever backend this test process was left with (a browser test's Agg)
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(ROOT / "docs" / "quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "ε set     1: accuracy" in out and "my_cancer at ε" in out and "re-identified" in out
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert (tmp_path / "mlflow.db").exists()       # MLFLOW_TRACKING_URI honoured: nothing in the checkout
