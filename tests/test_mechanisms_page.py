"""The Mechanisms page (pages/mechanisms.py), run headless as a standalone script."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore import teaching

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "mechanisms.py")


def open_page(**query) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def figures(at: AppTest) -> dict:
    """Each Plotly chart's figure (parsed spec) by its element key."""
    charts = at.get("plotly_chart")
    return {json.loads(c.proto.spec)["layout"]["uirevision"]: json.loads(c.proto.spec) for c in charts}


def trace_names(figure: dict) -> list:
    return [t.get("name") for t in figure["data"]]


def page_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.fixture(scope="module")
def page():
    return open_page()


def test_page_opens_on_two_point_with_both_charts_and_the_reading(page):
    assert not page.exception and not page.error
    assert page.selectbox(key="mech.name").value == "two_point"
    figs = figures(page)
    assert set(figs) == {"mech-output", "mech-error", "mech-audit"}   # mech-audit: the audited-privacy section
    assert trace_names(figs["mech-output"])[:2] == ["empirical (20,000 draws)", "analytic"]
    assert {"analytic", "current ε = 1"} <= set(trace_names(figs["mech-error"]))
    assert page.subheader[0].value == "What ε = 1 means here"
    assert "e^ε = e^1 = **2.72**" in page_text(page)
    assert "Pure ε-LDP" in page_text(page)


def test_two_point_chart_shows_the_two_outputs_with_their_probabilities(page):
    law = teaching.output_law("two_point", page.slider(key="mech.two_point.w").value, 1.0)
    bars = figures(page)["mech-output"]["data"][:2]
    empirical, analytic = bars
    assert analytic["x"] == pytest.approx(list(law.points))
    assert analytic["y"] == pytest.approx(list(law.probs))
    assert empirical["y"] == pytest.approx(list(law.probs), abs=0.02)     # 20,000 draws
    assert sum(empirical["y"]) == pytest.approx(1.0)


@pytest.mark.parametrize("name", list(teaching.SCALAR_DEMOS))
def test_every_mechanism_renders_its_law_curve_and_guarantee(name):
    at = open_page()
    at.selectbox(key="mech.name").set_value(name).run()
    assert not at.exception and not at.error
    figs = figures(at)
    assert {"mech-output", "mech-error"} <= set(figs)   # + "mech-audit" where a one-release audit applies
    demo = teaching.SCALAR_DEMOS[name]
    assert [s.label for s in at.select_slider].count("δ") == (1 if demo.needs_delta else 0)
    assert ("(ε, δ)-LDP" if demo.needs_delta else "Pure ε-LDP") in page_text(at)
    lo, hi = teaching.clip_range(name)
    w = at.slider(key=f"mech.{name}.w")
    assert (w.min, w.max) == pytest.approx((lo, hi)) and lo <= w.value <= hi
    y_title = figs["mech-error"]["layout"]["yaxis"]["title"]["text"]
    assert y_title == ("P(wrong sign)" if name == "ldp_sign" else "variance (log scale)")


def test_epsilon_slider_updates_the_worked_numbers():
    at = open_page()
    at.select_slider(key="mech.eps").set_value(10.0).run()
    assert at.subheader[0].value == "What ε = 10 means here"
    assert "**2.2e+04**" in page_text(at)                      # e^10 = 22026
    at.select_slider(key="mech.eps").set_value(0.1).run()
    assert "**1.11**" in page_text(at)                        # e^0.1
    assert "current ε = 0.1" in trace_names(figures(at)["mech-error"])


def test_epsilon_outside_the_offered_range_cannot_be_chosen():
    at = open_page()
    eps = at.select_slider(key="mech.eps")
    assert [float(o) for o in eps.options] == list(teaching.EPSILON_CHOICES)
    assert min(teaching.EPSILON_CHOICES) > 0
    eps.set_value(0.0).run()                                    # not an option: the slider keeps a valid value
    assert at.select_slider(key="mech.eps").value in teaching.EPSILON_CHOICES
    assert not at.exception and not at.error


def test_an_invalid_epsilon_reaching_the_page_is_shown_as_an_error(monkeypatch):
    monkeypatch.setattr(teaching, "EPSILON_CHOICES", (0.0,) + teaching.EPSILON_CHOICES)
    at = open_page()
    at.select_slider(key="mech.eps").set_value(0.0).run()
    assert not at.exception
    assert len(at.error) == 1 and "epsilon must be a finite number > 0" in at.error[0].value
    assert not at.get("plotly_chart")


def test_samples_and_seed_reach_the_mechanism():
    at = open_page()
    at.select_slider(key="mech.n").set_value(1000).run()
    first = figures(at)["mech-output"]["data"][0]
    assert first["name"] == "empirical (1,000 draws)"
    at.number_input(key="mech.seed").set_value(7).run()
    assert figures(at)["mech-output"]["data"][0]["y"] != first["y"]    # another seed, other draws


def test_clip_setting_moves_the_w_range_and_keeps_w_inside():
    at = open_page()
    at.slider(key="mech.two_point.w").set_value(0.07).run()
    at.number_input(key="mech.two_point.radius").set_value(0.02).run()
    w = at.slider(key="mech.two_point.w")
    assert (w.min, w.max) == pytest.approx((-0.02, 0.02)) and -0.02 <= w.value <= 0.02
    assert not at.exception and not at.error


def test_link_opens_the_named_mechanism_and_ignores_unknown_ones():
    assert open_page(mechanism="laplace").selectbox(key="mech.name").value == "laplace"
    at = open_page(mechanism="nonsense")
    assert at.selectbox(key="mech.name").value == "two_point" and not at.exception


def test_a_mechanism_without_a_scalar_law_is_listed_but_never_borrows_another_law():
    at = open_page(mechanism="dp_sgd")
    assert at.selectbox(key="mech.name").value == "dp_sgd" and not at.exception
    assert "supplies no one-number law" in at.info[0].value
    assert not at.get("plotly_chart")
    with pytest.raises(teaching.NoScalarDemo, match="dp_sgd.*supplies no one-number demo"):
        teaching.output_law("dp_sgd", 0.1, 1.0)


def test_uldp_page_warns_that_the_exact_delta_exceeds_the_claim():
    at = open_page(mechanism="uldp_gaussian")
    assert len(at.warning) == 1 and "more than the claimed" in at.warning[0].value
