"""Plain words reach past the sidebar's edge (issue 54 §4): with Plain words on, a method's internals (its
mechanism's, aggregator's and partitioner's options and their paper's symbols) sit behind one *Advanced*
button named in words; no option's internal name is drawn outside it."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fedcore.aggregators import AGGREGATORS
from fedcore.mechanisms import MECHANISMS
from fedcore.partition import PARTITIONERS

APP = str(Path(__file__).resolve().parents[1] / "app.py")
SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")
URL = re.compile(r"\]\([^)]*\)")


def option_names() -> set[str]:
    """Every snake_case name a student could meet in an options form: the options and the components."""
    names = set()
    for registry in (MECHANISMS, AGGREGATORS, PARTITIONERS):
        for name in registry.names():
            names.add(name)
            names |= {f.name for f in dataclasses.fields(registry.get(name).Options)}
    return {n for n in names if SNAKE.fullmatch(n)}


def drawn(node, advanced: bool = False):
    """``(text, behind Advanced)`` of every label, message and markdown drawn under ``node`` (help tooltips
    and link targets are one click away, so they are left out)."""
    kind = getattr(node, "type", "")
    if kind == "popover":
        advanced = True
        yield node.proto.popover.label, False   # the button itself is outside
    for attr in ("label", "value"):
        value = getattr(node, attr, None) if attr == "label" or kind in ("markdown", "caption", "info",
                                                                         "warning", "error", "success") else None
        if isinstance(value, str):
            yield URL.sub("]", value), advanced
    children = getattr(node, "children", None)
    for child in (children.values() if isinstance(children, dict) else ()):
        yield from drawn(child, advanced)


@pytest.mark.parametrize("preset", ["uldp_recall_digits", "attack_lesson", ""])
def test_with_plain_words_no_option_name_is_drawn_outside_advanced(preset):
    at = AppTest.from_file(APP, default_timeout=120)
    if preset:   # none: the first screen's private default, DP-FedAvg
        at.query_params["preset"] = preset
    at.run()
    assert not at.exception
    names = option_names()
    texts = list(drawn(at.sidebar))
    outside = sorted({m for text, adv in texts if not adv for m in SNAKE.findall(text) if m in names})
    assert not outside, outside
    behind = {m for text, adv in texts if adv for m in SNAKE.findall(text)}
    assert behind & names, "the exact names are one click away, behind Advanced"
    assert any(t.startswith("Advanced: how each client adds its noise") for t, _ in texts)
