"""Issue 40 §2 and §5 on the Playground (AppTest): after a run, membership inference drawn as researchers
draw it (the ROC on log-log axes inside the region ε allows, LiRA and RMIA, TPR at 0.1 % and 1 % FPR in a
table; with Plain words on, no term of art), and "your run" drawn only on a frontier of its own recipe,
inside its axis."""
from __future__ import annotations

import math

import pytest

from test_app import app, by_label, figure_spec, texts, wait_on, wait_until_done
from test_attack_view import TERMS_OF_ART, section_texts

from pages.components import your_run


def your_run_chart(at):
    return next((c for c in at.get("plotly_chart") if not c.proto.id.endswith("-stacked")
                 and any(t.get("meta") == "your-run" for t in figure_spec(c)["data"])), None)


def marker_inside_its_axis(spec: dict) -> bool:
    (star,) = [t for t in spec["data"] if t.get("meta") == "your-run"]
    axis = spec["layout"]["xaxis" + (star.get("xaxis") or "x")[1:]]
    low, high = axis["range"]
    return low < math.log10(star["x"][0]) < high and 0 <= star["y"][0] <= 1.02


def test_an_attack_digits_run_lands_inside_the_axis_of_its_own_recipes_frontier(store_dir):
    at = app(preset="attack_digits")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    assert not at.exception
    assert your_run.SENTENCE in texts(at)
    chart = your_run_chart(at)
    assert chart is not None, "no 'your run' marker"
    spec = figure_spec(chart)
    assert marker_inside_its_axis(spec)                         # ε 99,400: the axis grew to hold it
    assert "Your clients spent different ε" in texts(at)


def test_a_run_of_another_recipe_is_not_drawn_and_a_sentence_says_why(store_dir):
    at = app(preset="attack_digits", rounds="3")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    assert your_run_chart(at) is None
    shown = texts(at)
    assert "Your run is not drawn on a frontier" in shown and "rounds 3 (frontier: 20)" in shown


def test_the_frontier_of_its_own_recipe_is_found_and_others_say_which_settings_differ():
    from fedcore.resolve import preset_config

    found, why = your_run.own_frontier(preset_config("attack_digits").to_dict())
    assert found is not None and found[0].endswith("attack_digits.json") and not why
    cfg = preset_config("attack_digits").with_overrides({"local.lr": 0.3}).to_dict()
    found, why = your_run.own_frontier(cfg)
    assert found is None and "local.lr 0.3 (frontier: 0.5)" in why


def test_an_off_axis_run_is_marked_by_an_arrow_inside_the_axis():
    from fedcore.sweep.rows import read_frontier

    rows = read_frontier(your_run.ASSETS / "frontier" / "attack_digits.json")
    spec = your_run.figure(rows, "local", None, 0.6, plain=True).to_plotly_json()
    (arrow,) = [t for t in spec["data"] if t.get("meta") == "your-run"]
    low, high = spec["layout"]["xaxis"]["range"]
    assert low < math.log10(arrow["x"][0]) < high and "→" in arrow["text"][0]
    spec = your_run.figure(rows, "local", 3e7, 0.6, plain=True).to_plotly_json()
    assert marker_inside_its_axis(spec)


@pytest.fixture(scope="module")
def membership_run(store_dir):
    """``attack_membership`` trained, then its membership attacked from the Playground (a job)."""
    at = app(preset="attack_membership")
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    by_label(at.button, "Attack membership").click().run()
    return wait_on(at, lambda a: roc_chart(a) is not None, 300, lambda a: texts(a)[-600:])


def roc_chart(at):
    return next((c for c in at.get("plotly_chart")
                 if any(t.get("meta") == "rmia" for t in figure_spec(c)["data"])), None)


def test_with_plain_words_the_membership_section_names_its_rows_for_what_they_measure(membership_run):
    at = membership_run   # Plain words are on by default
    assert not at.exception
    section = "\n".join(section_texts(at, "Who was in the training data?", ends=("Audited privacy",)))
    assert section
    table = at.table[-1].value
    words = section + "\n" + "\n".join(map(str, table.columns)) + "\n" + "\n".join(map(str, table.index))
    spec = figure_spec(roc_chart(at))
    words += "\n" + "\n".join(str(t.get("name")) for t in spec["data"])
    for term in TERMS_OF_ART:
        assert term not in words, term
    assert "members caught (1 in 1,000 others wrongly accused)" in table.columns


def test_the_membership_roc_is_drawn_on_log_axes_inside_the_region_epsilon_allows(membership_run):
    at = membership_run
    assert not at.exception
    by_label(at.toggle, "Plain words").set_value(False).run()
    spec = figure_spec(roc_chart(at))
    assert spec["layout"]["xaxis"]["type"] == "log" and spec["layout"]["yaxis"]["type"] == "log"
    fills = [t for t in spec["data"] if t.get("fill") == "toself"]
    assert fills, "the region ε allows is not shaded"
    curves = {t.get("meta") for t in spec["data"] if t.get("mode") == "lines" and t.get("meta")}
    assert curves == {"membership", "rmia"}
    table = at.table[-1].value
    assert {"TPR at 0.1 % FPR", "TPR at 1 % FPR"} <= set(table.columns)
    assert any(str(v).startswith("LiRA") for v in table.index) and any(str(v).startswith("RMIA")
                                                                            for v in table.index)


def test_the_first_screens_default_run_lands_on_the_demo_frontier(store_dir):
    at = app()
    by_label(at.button, "Run").click().run()
    at = wait_until_done(at)
    chart = your_run_chart(at)
    assert chart is not None, texts(at)[-800:]
    assert marker_inside_its_axis(figure_spec(chart))


def test_the_stored_attack_digits_frontier_is_what_its_command_produces(tmp_path):
    """assets/frontier/attack_digits.json names the command that made it; rerun one of its points (ε = 100,000,
    seed 0) and compare, so the file cannot drift from what the code produces."""
    import json
    import shlex
    import subprocess
    import sys

    stored = json.loads((your_run.ASSETS / "frontier" / "attack_digits.json").read_text())
    words = shlex.split(stored["command"])
    assert words[:4] == ["python", "-m", "fedcore", "sweep"] and stored["spec"]["preset"] == "attack_digits"
    out = tmp_path / "point.json"
    keep = [w for i, w in enumerate(words[4:]) if not (w in ("--out", "--epsilons", "--seeds")
                                                       or words[4:][i - 1] in ("--out", "--epsilons", "--seeds"))]
    subprocess.run([sys.executable, "-m", "fedcore", "sweep", *keep, "--epsilons", "100000", "--seeds", "1",
                    "--no-reference", "--out", str(out)], check=True, capture_output=True, cwd=your_run.ASSETS.parent)
    (new,) = json.loads(out.read_text())["rows"]
    (old,) = [r for r in stored["rows"] if r["epsilon"] == 100000.0 and r["seed"] == 0]
    assert new["threat_model"] == old["threat_model"] == "local"
    assert new["knob"] == pytest.approx(old["knob"], rel=0.02)
    assert abs(new["accuracy"] - old["accuracy"]) <= 0.04, (new["accuracy"], old["accuracy"])


@pytest.mark.parametrize("method", ["pldp_b", "hw_dpfl"])
def test_a_demo_method_off_the_first_screen_lands_on_the_frontier_pages_demo_frontier(method):
    from fedcore.layering import build_config

    found, why = your_run.own_frontier(build_config("demo", None, [f"method={method}"]).to_dict())
    assert found is not None and found[0].endswith("default.json"), why
