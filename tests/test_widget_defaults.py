"""Every Playground setting's widget carries its current value as its own default (issue 38 §3).

Streamlit's browser falls back to a widget's default when it mounts a widget without the value
the server set (a rerun overtook that message: three tabs of one browser pressed at once), and
sends the default back as the visitor's pick. The one-visitor browser test failed twice that way:
a selectbox's first option (``method = ''``) and a slider's minimum (participation 0.01). So the
default the browser gets must be the value the settings hold, in every run, not only the first.
The same reruns must not hide a one-off notice (a link's "could not be loaded") before it is seen.
"""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def _playground(**query) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _mismatches(at: AppTest, prefixes: tuple = ("w.", "pg.")) -> list[str]:
    """Each settings widget (key starting with one of ``prefixes``) whose default in the page is not its value."""
    bad = []
    for kind in ("slider", "number_input", "selectbox", "radio", "toggle", "checkbox", "select_slider"):
        for w in at.get(kind):
            if not str(w.key or "").startswith(prefixes):
                continue
            proto = w.proto
            if kind in ("selectbox", "radio"):
                default, value = (proto.default if proto.HasField("default") else None), w.index
            elif kind == "slider":
                default, value = list(proto.default), [w.value]
            elif kind == "select_slider":
                values = w.value if isinstance(w.value, (tuple, list)) else [w.value]   # one value or a range
                default, value = [proto.options[int(i)] for i in proto.default], [w.format_func(v) for v in values]
            else:
                default, value = proto.default, w.value
            if default != value:
                bad.append(f"{kind} {w.key}: default {default!r}, value {value!r}")
    return bad


def test_the_settings_widgets_default_to_their_values_in_the_runs_after_the_first(store_dir):
    at = _playground(preset="demo", participation="0.5", method="fedavg", rounds="7")
    assert not at.exception
    at.run()  # a later run: the values are no longer new to the session
    sliders = {w.key: w for w in at.slider}
    assert sliders["w.participation"].value == 0.5 and list(sliders["w.participation"].proto.default) == [0.5]
    assert _mismatches(at) == []


def test_the_frontiers_widgets_default_to_the_values_its_link_set(store_dir):
    # the full suite saw an audited frontier's link draw its audit while the toggle showed off
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/frontier.py")
    for k, v in {"preset": "demo", "methods": "pldp_b", "eps": "1,3", "seeds": "1", "audit": "1", "match": "target"}.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception
    at.run()
    assert at.toggle(key="fr.audit").value is True and at.toggle(key="fr.audit").proto.default is True
    assert _mismatches(at, ("fr.",)) == []


def test_a_links_error_shows_in_the_next_runs_however_long_they_take(store_dir, monkeypatch):
    """A link whose settings cannot be loaded says so in the runs after it (the identity rerun
    included) even when they come later than the notice's time (a busy server): the notice lasts
    :data:`~pages.components.plain.FLASH_RUNS` script runs as well as ``FLASH_S`` seconds."""
    from pages.components import plain

    at = _playground(preset="demo", seed="9" * 40)
    warned = lambda: any("could not be loaded" in str(w.value) for w in at.warning)  # noqa: E731
    assert warned()
    monkeypatch.setattr(plain, "FLASH_S", 0.0)        # every later run "comes too late"
    shown = []
    for _ in range(plain.FLASH_RUNS + 1):
        at.run()
        shown.append(warned())
    assert shown[:plain.FLASH_RUNS - 1] == [True] * (plain.FLASH_RUNS - 1) and shown[-1] is False, shown
