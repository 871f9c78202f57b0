"""A run store that cannot be used (FEDCORE_STORE names a path under a file) is one clear message
on every page that needs it, the Playground first, and the pages that read none still work."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.mark.parametrize("page", [None, "pages/history.py", "pages/frontier.py", "pages/compare.py",
                                  "pages/mechanisms.py"])
def test_an_unusable_store_is_one_message_not_a_blank_page(page, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FEDCORE_STORE", str(blocker / "store"))
    at = AppTest.from_file(APP, default_timeout=60)
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception
    errors = " ".join(str(e.value) for e in at.error)
    if page == "pages/mechanisms.py":
        assert "run store" not in errors and at.title  # it needs no store: it still works
    else:
        assert "The run store cannot be used" in errors and str(tmp_path) not in errors
