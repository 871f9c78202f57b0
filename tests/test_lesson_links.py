"""Lesson links (issue 32, item 8): a teacher's link hides or locks Playground settings.

``?hide=partition,aggregator&lock=method`` leaves the hidden settings off the page and draws the
locked ones read-only; the names survive reruns, the URL the page keeps and a student's reload;
the run the link starts has exactly the link's config, seed included (its config hash); a name
the page does not know is a warning, echoed as plain text. Driven headlessly with AppTest.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.links import config_from_params
from test_app import APP, TIMEOUT, by_label, qp, texts, wait_until_done
from test_links_plain import PAYLOAD, markdown_texts, markup_in

LINK = {"preset": "demo", "method": "dp_fedavg", "privacy.epsilon": "[10.0]", "rounds": "3", "seed": "7",
        "hide": "partition,aggregator", "lock": "method,rounds"}
"""The issue's example, on a short private run with a seed that is not the preset's."""
ONLY_EPSILON = "plain,preset,method,clients_and_rounds,match,delta,mechanism,aggregator,data,split,local"
"""Every setting of the sidebar but ε: a student sees the ε input and Run."""
OWN_EXPANDERS = {"Keep my runs"}
"""Sidebar groups that are not the experiment's form (sign-in, :mod:`pages.components.host`)."""


def open_link(params: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def link_of(at: AppTest) -> dict:
    """The query parameters the page wrote into its URL."""
    return {key: qp(at, key) for key in at.query_params}


def form_widgets(at: AppTest) -> dict:
    """``{label: disabled}`` of every input in the sidebar's experiment form."""
    out = {}

    def walk(node):
        if type(node).__name__ == "Expander" and node.label in OWN_EXPANDERS:
            return
        proto = getattr(node, "proto", None)
        if hasattr(proto, "disabled") and isinstance(getattr(node, "label", None), str):
            out[node.label] = bool(proto.disabled)
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at.sidebar)
    return out


def expanders(at: AppTest) -> set:
    return {e.label for e in at.sidebar.get("expander")} - OWN_EXPANDERS


@pytest.fixture(scope="module")
def lesson(store_dir):
    """The Playground opened from :data:`LINK`."""
    at = open_link(LINK)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_lesson_link_hides_some_settings_and_locks_others(lesson):
    widgets = form_widgets(lesson)
    assert "Partition" not in widgets and "Aggregator (server side)" not in widgets
    assert "Data split" not in expanders(lesson) and "Privacy" in expanders(lesson)
    assert not any("uldp options" in text for text in markdown_texts(lesson))     # the aggregator's form too
    assert widgets["Method (one-click recipe)"] and widgets["Rounds"]               # locked: read-only
    assert widgets["Mechanism (client side)"]               # what the locked method sets is locked with it
    assert not widgets["ε for every client"] and not widgets["Clients"]             # the rest stays editable
    assert "Set by the lesson link" in texts(lesson)
    assert not by_label(lesson.button, "Run").disabled


def test_the_lesson_survives_reruns_and_a_students_reload(lesson):
    written = link_of(lesson.run())
    assert (written["hide"], written["lock"], written["seed"]) == (LINK["hide"], LINK["lock"], "7")
    assert "Partition" not in form_widgets(lesson) and form_widgets(lesson)["Rounds"]
    reloaded = open_link(written)                                          # a new session, the kept URL
    widgets = form_widgets(reloaded)
    assert "Partition" not in widgets and widgets["Method (one-click recipe)"] and widgets["Rounds"]
    assert config_from_params(link_of(reloaded)).config_hash() == config_from_params(LINK).config_hash()


def test_the_run_a_lesson_link_starts_has_the_links_config(lesson, store_dir):
    from pages.components import state

    by_label(lesson.button, "Run").click().run()
    assert not lesson.exception, [e.value for e in lesson.exception]
    record = state.manager().store.get_job_dict(qp(lesson, "run"))
    linked = config_from_params(LINK)
    assert record["config_hash"] == linked.config_hash() and linked.seed == 7
    assert record["requested"]["seed"] == 7
    done = wait_until_done(lesson)
    assert "Round 3 / 3 · finished" in done.get("progress")[0].proto.text
    assert qp(done, "hide") == LINK["hide"]                                   # the run's link keeps the lesson


def test_locked_settings_keep_the_links_values_when_the_preset_or_method_changes(store_dir):
    at = open_link({"preset": "demo", "rounds": "3", "seed": "7", "lock": "rounds,seed"})
    by_label(at.selectbox, "Method (one-click recipe)").select("hw_dpfl").run()   # on the demo: 80 rounds
    assert not at.exception and by_label(at.selectbox, "Method (one-click recipe)").value == "hw_dpfl"
    assert by_label(at.slider, "Rounds").value == 3 and qp(at, "rounds") == "3"
    preset = by_label(at.selectbox, "Preset")
    other = next(option for option in preset.options if not option.startswith("demo "))
    preset.select(other).run()                                                 # replaces the whole config
    assert not at.exception
    assert by_label(at.number_input, "Seed").value == 7 and qp(at, "seed") == "7"


def test_a_student_sees_only_epsilon_and_run_and_the_page_still_works(store_dir):
    at = open_link({"preset": "demo", "method": "dp_fedavg", "seed": "7", "hide": ONLY_EPSILON})
    assert not at.exception, [e.value for e in at.exception]
    assert set(form_widgets(at)) == {"Privacy budget ε", "ε for every client"}
    assert expanders(at) == {"Privacy"}
    by_label(at.number_input, "ε for every client").set_value(2.0).run()        # a student's one setting
    assert not at.exception and qp(at, "privacy.epsilon") == "[2.0]" and qp(at, "hide") == ONLY_EPSILON
    assert not by_label(at.button, "Run").disabled
    assert any("--set seed=7" in code.value for code in at.code)               # the Config tab, hidden seed


def test_an_unknown_name_is_a_warning_in_plain_text_and_the_rest_applies(store_dir):
    at = open_link({"preset": "demo", "hide": f"partiton,aggregator,{PAYLOAD}"})
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 1 and "partiton" in warnings[0] and "partition" in warnings[0]
    assert not [p for text in markdown_texts(at) for p in markup_in(text)]
    widgets = form_widgets(at)
    assert "Partition" in widgets and "Aggregator (server side)" not in widgets


def test_the_readmes_lesson_links_work_as_it_says(store_dir):
    readme = (Path(APP).parent / "README.md").read_text(encoding="utf-8")
    assert f"hide={ONLY_EPSILON}" in readme                        # the list the test above checks
    example = re.search(r"http://localhost:8501/\?(\S*hide=\S*?)\.?\n", readme).group(1)
    at = open_link(dict(parse_qsl(example)))
    assert not at.exception, [e.value for e in at.exception]
    widgets = form_widgets(at)
    assert "Partition" not in widgets and widgets["Method (one-click recipe)"] and not at.sidebar.warning


def test_every_name_the_warning_offers_stands_for_settings():
    from pages.components import form

    assert all(form.lesson_settings(name) for name in form.lesson_names())
    lesson = form.read_lesson(("data_split",), ("method",))
    assert lesson.hide == frozenset({"partition.kind", "partition.options"})
    assert lesson.locks("privacy.aggregator") and not lesson.locks("privacy.epsilon")


def test_a_preset_change_keeps_the_seed_without_a_lock(store_dir):
    """Issue 54 §5: picking another preset replaces the experiment, not the seed a link set."""
    at = open_link({"preset": "demo", "seed": "7"})
    preset = by_label(at.selectbox, "Preset")
    preset.select(next(o for o in preset.options if o.startswith("attack_digits"))).run()
    assert not at.exception
    assert by_label(at.number_input, "Seed").value == 7 and qp(at, "seed") == "7"


def test_a_locked_method_on_another_preset_brings_none_of_the_old_presets_options(store_dir):
    at = open_link({"preset": "attack_digits", "lock": "method"})
    preset = by_label(at.selectbox, "Preset")
    preset.select(next(o for o in preset.options if o.startswith("demo "))).run()
    assert not at.exception and by_label(at.selectbox, "Method (one-click recipe)").value == "dp_fedavg"
    assert not any(k.startswith("privacy.mechanism_options") and "local" in qp(at, k) for k in at.query_params)


def test_an_unknown_field_in_a_link_is_named_and_ignored_and_the_rest_is_kept(store_dir):
    at = open_link({"preset": "demo", "rounds": "7", "seed": "3", "colour": "red"})
    assert not at.exception
    assert by_label(at.slider, "Rounds").value == 7 and qp(at, "seed") == "3"
    assert "colour=red" in texts(at) and "ignored" in texts(at)
    assert "colour" not in at.query_params


def test_a_link_drops_an_option_its_mechanism_does_not_have_and_keeps_the_rest():
    gone = []
    cfg = config_from_params({"preset": "demo", "method": "dp_fedavg", "rounds": "4",
                              "privacy.mechanism_options.zzz": "1"}, dropped=gone)
    assert cfg.rounds == 4 and cfg.method == "dp_fedavg" and gone == ["privacy.mechanism_options.zzz=1"]
    with pytest.raises(Exception, match="unknown"):
        config_from_params({"preset": "demo", "colour": "red"})
