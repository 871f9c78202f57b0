"""Every caveat on screen (issue 29): the Playground's settings say what a preset's headline ε does not
prove before it runs (ULDP-FED's decaying clip; HW-DPFL per step on shuffled batches), and the Papers
page marks the stored rows whose headline is not proven for what ran or spends more than its target."""
from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest
from test_papers_page import papers_page as offline_mnist  # noqa: F401 (the fixture: offline, MNIST's files present)

ROOT = Path(__file__).resolve().parents[1]


def page_text(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "warning", "info") for e in at.get(kind))


def playground(**query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception
    return at


def test_a_uldp_ddp_preset_shows_its_caveat_before_it_runs(offline_mnist):
    text = page_text(playground(preset="uldp_mnist_ddp"))
    assert "Caveat" in text and "may exceed its figure" in text


def test_an_hw_dpfl_per_step_preset_is_proven_on_poisson_batches_and_caveated_on_shuffled_ones(offline_mnist):
    assert "Caveat" not in page_text(playground(preset="hw_dpfl_mnist_noniid"))
    options = {"placement": "step", "noise": "level", "sigma": 1.0, "grad_bound": 1.0, "batching": "shuffle"}
    text = page_text(playground(preset="hw_dpfl_mnist_noniid", **{"privacy.mechanism_options": json.dumps(options)}))
    assert "Caveat" in text and "assumes Poisson sampling" in text


def test_the_papers_page_marks_caveated_and_over_target_rows(offline_mnist):
    at = offline_mnist()
    text = page_text(at)
    # HW-DPFL's stored per-step rows were retrained on Poisson batches (2026-11-26): nothing to caveat there
    assert "may exceed its figure" in text and "assumes Poisson sampling" not in text
    assert "spending more than their target (not equal privacy): DDP" in text
    assert not any(big in text for big in ("e+20", "e+19", "× 10²⁰", "× 10¹⁹"))  # clip-only rows left out of the range
    tables = "\n".join(df.value.to_csv() for df in at.dataframe)
    assert "× its target 10" in tables and "(unequal privacy)" in tables
