"""Every option declares its constraint, once (issue 20), checked registry-wide the way
scikit-learn's estimator checks check ``_parameter_constraints``: for every option of every
registered mechanism, aggregator and partitioner, each value its declared constraint refuses
is refused by the CLI (exit 2, one line naming the field), by a Playground link and by the
constraint the option widgets read. An option without a declaration fails."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fedcore.catalog import AGGREGATORS, MECHANISMS, PARTITIONERS
from fedcore.cli import main
from fedcore.constraints import Boolean, Choice, Interval, OptionalOf, Text, constraint_of
from fedcore.errors import ConfigError
from fedcore.links import config_from_params

# (registry, the config field naming the component, the dotted prefix of its options, the
# prefix an error names: a partitioner's option is named by its shorthand, partition.NAME)
COMPONENTS = ((MECHANISMS, "privacy.mechanism", "privacy.mechanism_options", "privacy.mechanism_options"),
              (AGGREGATORS, "privacy.aggregator", "privacy.aggregator_options", "privacy.aggregator_options"),
              (PARTITIONERS, "partition.kind", "partition.options", "partition"))


def options():
    """(kind field, component name, options prefix, Options class, option name) for all."""
    return [(kind, e.name, prefix, e.obj.Options, f.name)
            for registry, kind, prefix, _ in COMPONENTS for e in registry.entries()
            for f in dataclasses.fields(e.obj.Options)]


def invalid_values(c) -> list:
    """Values ``c`` refuses, generated from the declaration: just past each bound, a fraction
    for an integer, a name that is not a choice, text for a flag."""
    if isinstance(c, OptionalOf):
        return invalid_values(c.inner)
    if isinstance(c, Interval):
        step = 1 if c.type is int else 1.0
        out = []
        if c.low is not None:
            out.append(c.type(c.low) if c.closed in ("right", "neither") else c.type(c.low) - step)
        if c.high is not None:
            out.append(c.type(c.high) if c.closed in ("left", "neither") else c.type(c.high) + step)
        if c.type is int:
            out.append((c.low if c.low is not None else 0) + 1.5)
        if c.low is None and c.high is None:
            out.append("Infinity")
        return out
    if isinstance(c, Choice):
        return ["not_" + "_".join(map(str, c.options))]
    if isinstance(c, Boolean):
        return ["maybe"]
    if isinstance(c, Text):
        return ["x" * (c.max_len + 1)]
    raise AssertionError(f"no invalid value generated for constraint {c!r}")


def cases():
    out = []
    for kind, name, prefix, opts, field in options():
        c = constraint_of(opts, field)
        for bad in invalid_values(c) if c is not None else [None]:
            out.append(pytest.param(kind, name, prefix, opts, field, bad, id=f"{name}.{field}={bad!r}"))
    return out


def text(value) -> str:
    """A value as ``--set`` spells it: strings bare, everything else JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def test_every_option_of_every_component_declares_a_constraint():
    missing = [f"{name}.{field}" for _, name, _, opts, field in options() if constraint_of(opts, field) is None]
    assert not missing, "options without a declared constraint: " + ", ".join(missing)
    assert len(options()) >= 50


@pytest.mark.parametrize("kind, name, prefix, opts, field", [pytest.param(*o, id=f"{o[1]}.{o[4]}") for o in options()])
def test_the_declared_default_is_accepted(kind, name, prefix, opts, field):
    c = constraint_of(opts, field)
    assert c is not None, f"{name}.{field} declares no constraint"
    assert c.accepts(getattr(opts(), field)), f"{name}.{field}: its default breaks its own constraint"


@pytest.mark.parametrize("kind, name, prefix, opts, field, bad", cases())
def test_an_invalid_value_is_refused_everywhere_naming_the_field(kind, name, prefix, opts, field, bad, capsys):
    c = constraint_of(opts, field)
    assert c is not None, f"{name}.{field} declares no constraint"
    dotted = f"{prefix}.{field}"
    named = next(n for _, k, _, n in COMPONENTS if k == kind) + "." + field
    # the widgets: the option form reads this constraint for its hints and pickers
    assert not c.accepts(bad)
    inner = c.inner if isinstance(c, OptionalOf) else c
    if isinstance(inner, Choice):
        from pages.components.form import option_choices

        registry = next(r for r, k, *_ in COMPONENTS if k == kind)
        assert bad not in option_choices(registry.get(name), field)
    # the CLI: exit 2, one line naming the field
    capsys.readouterr()
    assert main(["run", "--preset", "demo", "--set", f"{kind}={name}", "--set", f"{dotted}={text(bad)}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{named}: got" in err, err
    # a Playground link (the page rebuilds its config with config_from_params)
    with pytest.raises(ConfigError) as refused:
        config_from_params({"preset": "demo", kind: json.dumps(name), dotted: json.dumps(bad)})
    assert refused.value.field == named


@pytest.mark.parametrize("kind, name, prefix, opts, field", [
    pytest.param(*next(o for o in options() if o[0] == k), id=k) for _, k, _, _ in COMPONENTS])
def test_the_playground_refuses_a_link_with_an_invalid_option(store_dir, kind, name, prefix, opts, field):
    """The same refusal through the page itself (one option per kind: AppTest takes seconds)."""
    from streamlit.testing.v1 import AppTest

    bad = invalid_values(constraint_of(opts, field))[0]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.query_params.update({"preset": "demo", kind: json.dumps(name), f"{prefix}.{field}": json.dumps(bad)})
    at.run()
    named = next(n for _, k, _, n in COMPONENTS if k == kind) + "." + field
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")   # shown as escaped plain text
    assert "the link's settings could not be loaded" in warnings and f"{named}: got" in warnings, warnings
