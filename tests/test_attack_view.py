"""The Playground's attack view (AppTest): after a run, the attacker its threat model implies is
named, with what it received, and each client's image is shown beside the reconstruction."""
from __future__ import annotations

import json

import pytest

from test_app import app, by_label, figure_spec, texts, wait_until_done

FEDSGD = {"local.steps": "1", "local.batch_size": "1", "rounds": "3"}


@pytest.mark.parametrize("method,who", [
    ("fedavg", "The server sees each client's exact update: nothing is noised."),
    ("ldp_fl", "Anyone, the server included, sees each client's noised upload."),
    ("dp_fedavg", "An outsider sees only the noised average of all uploads"),
    pytest.param("kdp_fl", "after every training step was clipped and noised (DP-SGD)",
                 marks=pytest.mark.slow),   # ~8 s of DP-SGD: in the full suite only
])
def test_the_attacker_of_each_threat_model_is_named(store_dir, method, who):
    at = app(preset="demo", method=method, **FEDSGD)
    assert not at.exception
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    shown = texts(at)
    assert "What the attacker sees" in [h.value for h in at.subheader]
    assert who in shown
    assert "each pair is the client's image (left) and what the attacker reconstructs" in shown
    if method == "dp_fedavg":  # central: the trusted server is the other attacker, one click away
        radio = by_label(at.radio, "Attacker")
        radio.set_value("trusted_server").run()
        assert "The trusted server sees each client's exact update" in texts(at)


TERMS_OF_ART = ("headline", "LiRA", "RMIA", "e^ε")
"""What Plain words keep out of the attack sections (issue 40 §4); one click away with them off."""


def walk(node):
    """Every element under ``node`` of an AppTest tree, in page order."""
    children = getattr(node, "children", None)
    if children is None:
        yield node
        return
    for child in children.values():
        yield from walk(child)


def section_texts(at, start: str, ends: tuple = ("Where your run landed",)) -> list[str]:
    """The texts of the page from the subheader ``start`` up to an element starting one of ``ends``."""
    out, inside = [], False
    for e in walk(at.main):
        value = getattr(e, "value", None)
        if not isinstance(value, str):
            continue
        if e.type == "subheader" and value == start:
            inside = True
        elif inside and value.lstrip("*").startswith(ends):
            break
        if inside:
            out.append(value)
    return out


def success_chart(at):
    return next((c for c in at.get("plotly_chart")
                 if any(t.get("name") == "attacker found the image" for t in figure_spec(c)["data"])), None)


def test_presentation_draws_the_attack_view_level_with_the_accuracy_chart(store_dir):
    at = app(preset="attack_digits", present="1")
    assert not at.exception
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    assert not at.exception and not at.title                        # the presentation layout
    assert "image left, the attacker's rebuild right" in texts(at)
    chart = success_chart(at)
    level = [c for c in at.columns if chart in list(walk(c))]
    assert level, "the success chart is not in a column"
    row = next(r for r in walk_blocks(at.main) if any(c is level[-1] for c in r.children.values()))
    beside = [e for c in row.children.values() if c is not level[-1] for e in walk(c) if e.type == "plotly_chart"]
    assert beside and "accuracy" in json.dumps(figure_spec(beside[0])["layout"]).lower()   # level with accuracy


def walk_blocks(node):
    """Every block under ``node`` with children."""
    children = getattr(node, "children", None)
    if children is not None:
        yield node
        for child in children.values():
            yield from walk_blocks(child)


def test_with_plain_words_the_attack_view_uses_no_term_of_art_and_says_its_caps_as_odds(store_dir):
    from fedcore.accounting.words import odds_sentence

    at = app(preset="attack_digits", rounds="3")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    section = section_texts(at, "What the attacker sees")
    assert section and success_chart(at) is not None
    joined = "\n".join(section)
    for term in TERMS_OF_ART:
        assert term not in joined, term
    assert "The bars and the ✓/✗ come from two different attackers." in joined
    assert "**The dark tick as odds:**" in joined and "right at most" in joined
    assert "In odds:" in texts(at) and odds_sentence(1.0, 1e-5).endswith("73.1 % of the time after seeing this")
    accuracy = float(next(m.value for m in at.metric if m.label == "Test accuracy"))
    assert (accuracy <= 0.13) == ("is no better than a blind guess (0.10 with 10 classes)" in texts(at)), accuracy
    by_label(at.toggle, "Plain words").set_value(False).run()
    assert "e^ε" in "\n".join(section_texts(at, "What the attacker sees"))   # the exact terms, one click away


def test_the_readme_presentation_and_lesson_links_keep_their_values_and_spend_a_finite_epsilon(store_dir):
    """The README's presentation link trains with privacy (a finite ε spent, issue 40); its lesson link's
    seed is the seed that trains (§7)."""
    import re
    from pathlib import Path

    from test_app import qp
    from pages.components import state

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    link = re.search(r"http://localhost:8501/\?(preset=\w+&present=1)", readme).group(1)
    at = app(**dict(part.split("=") for part in link.split("&")))
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    spent = next(m.value for m in at.metric if m.label == "ε spent, whole run")
    assert spent != "∞" and float(spent.replace(",", "").rstrip("*")) > 0
    lesson = re.search(r"http://localhost:8501/\?(preset=demo&method=\w+&seed=7&[^\s.]+)", readme).group(1)
    at = app(**dict(part.split("=") for part in lesson.split("&")))
    by_label(at.button, "Run").click().run()
    assert state.manager().store.get_job_dict(qp(at, "run"))["config"]["seed"] == 7
