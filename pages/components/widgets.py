"""Config widgets, generated from fedcore's registries and option dataclasses.

Every widget edits one dotted config field of the Playground's ``flat`` dict (see
:mod:`pages.components.state`); its range comes from the field's validation so most bad
settings cannot be entered at all, and the rest are reported by ``RunConfig`` naming the
field. Mechanism / aggregator option forms are built from each class's ``Options``
dataclass, so a new mechanism shows up with its settings without touching the dashboard.

A lesson link (``?hide=partition,aggregator&lock=method``) hides or locks settings: every widget
is drawn through :func:`lesson_drawn`, which leaves out a hidden one and disables a locked one
(with a lock note), and the sidebar's groups (:data:`SECTIONS`) are left out when it hides all
their settings. Hidden and locked settings keep the link's values (:func:`hold_lesson`).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from typing import Any, Callable, Optional

import pandas as pd
import streamlit as st

from fedcore.accounting.headline import THREAT_MODEL_NAMES, threat_model_text
from fedcore.accounting.words import epsilon_unit, people, plain_threat_text
from fedcore.catalog import AGGREGATORS, DATASETS, MECHANISMS, METHODS, MODELS, PARTITIONERS, PRESETS
from fedcore.config import (OPTIMIZERS, SAMPLINGS, LocalConfig, PartitionConfig, PrivacyConfig, RunConfig,
                            type_hints)
from fedcore.constraints import Choice, Interval, OptionalOf, constraint_of, help_of
from fedcore.errors import ConfigError, FedcoreError
from fedcore.methods import apply_method
from fedcore.presets import preset_method_settings
from fedcore.resolve import preset_config
from fedcore.registry import Registry
from fedcore.budgets import TIER_PRESETS, tiered_epsilons
from fedcore.reproduce.estimate import preset_seconds, rough_label
from fedcore.runner.limits import offered_datasets
from fedcore.links import flatten, setting_fields, setting_names

from . import state
from .plain import flash, plain

CUSTOM = "(custom)"
EPSILON_HELP = ("ε bounds how much one client's data can change what the server sees: every output is at "
                "most e^ε times more likely with it than without it. Smaller ε = more privacy = more noise. "
                "What the run actually spends, for its threat model, is the headline ε on the right.")
EPSILON = constraint_of(PrivacyConfig, "epsilon").inner
DELTA = constraint_of(PrivacyConfig, "delta").inner
MAX_CLIENT_SLIDERS = 6
"""Up to this many clients, each gets a full-width ε slider."""
MAX_CLIENT_INPUTS = 20
"""Up to this many clients (more than :data:`MAX_CLIENT_SLIDERS`), each gets a compact number
input, two per row (a slider that narrow is 90 pixels wide, too short to set); more get an
editable table."""


# --- binding a widget to a config field ----------------------------------------------------
SECTION_TYPES = {"": RunConfig, "partition": PartitionConfig, "local": LocalConfig, "privacy": PrivacyConfig}


def bind(widget: Callable, flat: dict, field: str, label: str, *, on_change=None, **kw) -> Any:
    """Render ``widget`` (an ``st.*`` input) editing ``flat[field]``; returns its value.

    A picker whose options do not hold the stored value shows it as an extra option
    rather than replacing it (the config then names the problem). A lesson link may hide it
    (the stored value is returned) or lock it (:func:`lesson_drawn`).
    """
    key = state.WIDGET_PREFIX + field
    if "options" in kw and flat.get(field) not in kw["options"]:
        kw["options"] = [flat.get(field), *kw["options"]]

    def draw(lock: dict) -> Any:
        if key not in st.session_state:
            st.session_state[key] = flat.get(field)
        flat[field] = widget(label, key=key, on_change=on_change, **kw, **lock)
        return flat[field]

    return lesson_drawn(field, draw, flat.get(field))


def number(flat: dict, field: str, label: str, *, slider: bool = False, **kw) -> Any:
    """A number field, read from its declared constraint.

    ``slider``: a slider over the constraint's suggested range while the stored value lies
    inside it; otherwise (a preset's ε = 0.05, a link's 100 000 rounds) a number input, so a
    stored value is never clamped. Number inputs have no bounds: a typed value outside the
    constraint reaches the config, which names it and disables Run.
    """
    section, _, name = field.rpartition(".")
    cls = SECTION_TYPES[section]
    return lesson_drawn(field, lambda lock: number_widget(flat, field, label, constraint_of(cls, name),
                                                          help_of(cls, name), slider=slider, **kw, **lock),
                        flat.get(field))


def number_widget(store: dict, field: str, label: str, constraint, help_text: str = "", *,
                  slider: bool = False, key: Optional[str] = None, **kw) -> Any:
    key = key or state.WIDGET_PREFIX + field
    value = store.get(field)
    is_int = getattr(constraint, "type", float) is int
    mode_key = key + ".mode"
    if mode_key not in st.session_state:
        lo_hi = getattr(constraint, "suggested", None)
        fits = lo_hi is not None and _is_number(value) and lo_hi[0] <= value <= lo_hi[1]
        st.session_state[mode_key] = "slider" if slider and fits else "number"
    if key not in st.session_state:
        st.session_state[key] = value if not _is_number(value) or is_int else float(value)
    step = getattr(constraint, "step", None) or (1 if is_int else 0.01)
    kw.setdefault("help", help_text or None)
    if st.session_state[mode_key] == "slider":
        lo, hi = constraint.suggested
        value = st.slider(label, min_value=int(lo) if is_int else float(lo),
                          max_value=int(hi) if is_int else float(hi),
                          step=int(step) if is_int else float(step), key=key, **kw)
    else:
        if is_int:
            value = st.number_input(label, step=int(step), key=key, **kw)
        else:
            kw.setdefault("format", "%g")
            value = st.number_input(label, step=float(step), key=key, **kw)
    store[field] = value
    return value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def entry_caption(registry: Registry, name: str) -> None:
    """One line under a picker: the entry's summary and its paper."""
    if name in registry:
        e = registry.entry(name)
        paper = e.paper if not student_mode() else e.paper.split(" (seed")[0]  # "ULDP-FED", not "(seed 004)"
        st.caption(_literal(e.summary) + (f"  \n*Paper:* {_literal(paper)}" if paper else ""))


def _literal(text: str) -> str:
    """``text`` shown as written in markdown: ``C0*exp(-beta*k)`` keeps its asterisks."""
    return "".join("\\" + c if c in "*_`[]<>#|~" else c for c in text)


# --- preset and recipe ---------------------------------------------------------------------
def preset_and_method(flat: dict) -> None:
    """Preset loader and one-click method recipes (either hidden or locked by a lesson link)."""
    lesson_drawn(PRESET, lambda lock: preset_picker(**lock))
    lesson_drawn("method", lambda lock: method_picker(flat, **lock))


def preset_picker(disabled: bool = False) -> None:
    """The preset loader: picking one replaces the whole config."""
    presets = PRESETS.names()

    def load_preset():
        name = st.session_state["pg.preset_pick"]
        try:
            state.load_config(preset_config(name), name)
        except (FedcoreError, KeyError) as exc:
            flash("pg.url_error", f"preset {name!r} could not be loaded: {exc}")
            return
        state.show_run(None)

    if st.session_state.get("pg.preset_pick") not in presets:
        st.session_state["pg.preset_pick"] = state.current_preset()
    presets = sorted(presets, key=lambda n: (PRESETS.entry(n).paper != "", n != "demo", PRESETS.entry(n).paper, n))
    st.selectbox("Preset", presets, key="pg.preset_pick", on_change=load_preset, format_func=preset_label,
                 disabled=disabled,
                 help="Load a whole experiment, grouped by paper. 'offline' presets use the bundled "
                      "digits data; the others need their dataset (downloaded on first use). "
                      "'~3 min': a rough duration on a 2-core CPU (much less on a GPU).")
    entry_caption(PRESETS, st.session_state["pg.preset_pick"])


def method_picker(flat: dict, disabled: bool = False) -> None:
    """The one-click recipes: a method sets the mechanism, the aggregator and their options, and
    the preset's run-scale settings for it."""
    methods = [CUSTOM] + METHODS.names()

    def pick_method():
        # Callbacks of one rerun run one after another: an earlier one (a preset load, a
        # mechanism pick) may have reset the widgets or replaced the settings already.
        name = st.session_state.get(state.WIDGET_PREFIX + "method")
        if name is None:
            return
        name = "" if name == CUSTOM else name
        flat = st.session_state["pg.flat"]
        cfg, _ = state.build_config(flat)
        try:
            new = apply_method(cfg, name, preset=state.current_preset()) if cfg is not None and name else None
        except ConfigError:
            new = None
        if new is not None:
            flat.clear()
            flat.update(flatten(new.to_dict()))
        else:
            flat["method"] = name
        state.reset_widgets()

    key = state.WIDGET_PREFIX + "method"
    if key not in st.session_state:
        st.session_state[key] = flat.get("method") or CUSTOM
    chosen = st.selectbox("Method (one-click recipe)", methods, key=key, on_change=pick_method, disabled=disabled,
                          help="A paper's mechanism + aggregator with its settings; "
                               "'(custom)' = pick them yourself below.")
    flat["method"] = "" if chosen == CUSTOM else chosen
    if chosen != CUSTOM:
        entry_caption(METHODS, chosen)
        tuned = preset_method_settings(state.current_preset(), chosen)
        if tuned:
            st.caption(f"On the `{state.current_preset()}` preset this method trains at: "
                       + ", ".join(f"{k} = {v}" for k, v in tuned.items()) + ".")


def preset_label(name: str) -> str:
    """``[paper] name · offline · ~1 s`` (or the dataset it needs, and a rough CPU duration):
    the picker groups by paper."""
    entry = PRESETS.entry(name)
    dataset = entry.obj.get("dataset", "digits")
    paper = entry.paper.split(" (")[0] if entry.paper else ""
    where = "offline" if dataset == "digits" else f"needs {dataset}"
    took = preset_durations().get(name, "")
    return (f"[{paper}] " if paper else "") + f"{name} · {where}" + (f" · {took}" if took else "")


@functools.lru_cache(maxsize=1)
def preset_durations() -> dict[str, str]:
    """Each preset's rough duration on a 2-core CPU (:mod:`fedcore.reproduce.estimate`)."""
    return {name: rough_label(seconds) for name, seconds in preset_seconds().items()}


# --- sections ------------------------------------------------------------------------------
def data_and_model(flat: dict) -> None:
    """Dataset and model pickers: only what this server offers and can load (a link's other
    value stays visible as an extra option, and the page names the problem)."""
    from . import host

    limits = host.limits()
    datasets = offered_datasets(limits, DATASETS.names())
    bind(st.selectbox, flat, "dataset", "Dataset", options=datasets,
         help="digits is bundled and works offline; the others are downloaded on first use.")
    if not hides("dataset"):
        hidden = [n for n in DATASETS.names() if n not in datasets]
        if hidden:
            st.caption("Not offered on this server (a host setting, or not downloaded on an offline host): "
                       + ", ".join(hidden) + ".")
        entry_caption(DATASETS, flat["dataset"])
    models = [m for m in MODELS.names() if limits.models is None or m in limits.models]
    bind(st.selectbox, flat, "model", "Model", options=models)
    if not hides("model"):
        entry_caption(MODELS, flat["model"])
    c1, c2 = st.columns(2)
    with c1:
        number(flat, "train_size", "Train samples (0 = all)")
    with c2:
        number(flat, "test_size", "Test samples (0 = all)")


def federation(flat: dict) -> None:
    number(flat, "num_clients", "Clients", help="Each client gets a share of the training set (see the data split).")
    number(flat, "rounds", "Rounds", slider=True)
    number(flat, "participation", "Participation (fraction of clients per round)", slider=True)
    c1, c2 = st.columns(2)
    with c1:
        bind(st.selectbox, flat, "sampling", "Sampling", options=list(SAMPLINGS),
             help="fixed: exactly round(q N) clients; poisson: each client with probability q.")
    with c2:
        number(flat, "seed", "Seed")


def partition(flat: dict) -> None:
    """The partitioner picker and its options form (from the partitioner's ``Options``)."""
    kind = bind(st.selectbox, flat, "partition.kind", "Partition", options=PARTITIONERS.names(),
                on_change=_new_component("partition.kind", "partition.options"))
    if not hides("partition.kind"):
        entry_caption(PARTITIONERS, kind)
    if kind in PARTITIONERS:
        component_options(flat, "partition.options", PARTITIONERS.get(kind), f"popt.{kind}", kind)


def local_training(flat: dict) -> None:
    c1, c2 = st.columns(2)
    with c1:
        number(flat, "local.epochs", "Local epochs")
        number(flat, "local.batch_size", "Batch size")
        bind(st.selectbox, flat, "local.optimizer", "Optimizer", options=list(OPTIMIZERS))
        number(flat, "local.weight_decay", "Weight decay")
    with c2:
        number(flat, "local.steps", "Local steps (0 = epochs)")
        number(flat, "local.lr", "Learning rate")
        number(flat, "local.momentum", "Momentum")
        number(flat, "privacy.server_lr", "Server step", help="eta_s in W <- W + eta_s * f(uploads)")


def _new_component(field: str, options_field: str):
    """on_change of a partitioner picker: the new component starts from its own defaults."""

    def callback():
        value = st.session_state.get(state.WIDGET_PREFIX + field)
        if value is None:  # an earlier callback of this rerun reset the widgets
            return
        flat = st.session_state["pg.flat"]
        flat[field] = value
        flat[options_field] = {}

    return callback


def _mark_custom(field: str, options_field: str):
    """on_change of a mechanism / aggregator picker: new options, no recipe."""
    new = _new_component(field, options_field)

    def callback():
        new()
        st.session_state["pg.flat"]["method"] = ""
        st.session_state.pop(state.WIDGET_PREFIX + "method", None)

    return callback


def mechanism_and_aggregator(flat: dict) -> None:
    for name, label, registry, prefix in (("mechanism", "Mechanism (client side)", MECHANISMS, "mopt"),
                                          ("aggregator", "Aggregator (server side)", AGGREGATORS, "aopt")):
        field, options = f"privacy.{name}", f"privacy.{name}_options"
        picked = bind(st.selectbox, flat, field, label, options=registry.names(), on_change=_mark_custom(field, options))
        if not hides(field):
            entry_caption(registry, picked)
        component_options(flat, options, registry.get(picked), f"{prefix}.{picked}", picked)
        if name == "mechanism" and not hides(field):
            threat_caption(picked, flat.get(options) or {})


def component_options(flat: dict, field: str, cls, key: str, name: str) -> None:
    """A component's options form editing ``flat[field]`` (unless a lesson link hides it)."""
    def draw(lock: dict) -> None:
        flat[field] = options_form(cls, flat.get(field) or {}, key, name, disabled=bool(lock))

    lesson_drawn(field, draw)


def threat_caption(mech: str, options: dict) -> None:
    """Who is trusted under this mechanism and these options, in words."""
    if mech not in MECHANISMS:
        return
    cls = MECHANISMS.get(mech)
    try:
        parsed = cls.parse_options(options, "privacy.mechanism_options")
    except FedcoreError:
        return  # the config names the bad option
    kind, caveat = cls.threat_model_for(parsed), cls.caveat_for(parsed)
    if caveat:
        st.caption(f"**\\* Caveat: the ε this run spends is not proven for what runs:** {caveat}.")
    if student_mode():
        st.caption(f"**Who is trusted:** {plain_threat_text(kind)}")
        with st.popover("Exact terms", width="content"):
            st.caption(f"**Threat model: {THREAT_MODEL_NAMES.get(kind, kind)}.** {threat_model_text(kind)}")
    else:
        st.caption(f"**Threat model: {THREAT_MODEL_NAMES.get(kind, kind)}.** {threat_model_text(kind)}")


# --- option forms from Options dataclasses -------------------------------------------------
def option_choices(cls, name: str) -> Optional[list[str]]:
    """The allowed values of option ``name``, from its declared :class:`Choice` constraint;
    None when it declares none (free text)."""
    c = constraint_of(cls.Options, name)
    c = c.inner if isinstance(c, OptionalOf) else c
    return list(c.options) if isinstance(c, Choice) else None


def _optional_inner(t) -> Optional[type]:
    if typing.get_origin(t) is typing.Union:
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return None


def options_form(cls, current: dict, key: str, name: str = "", disabled: bool = False) -> dict:
    """Inputs for every field of ``cls.Options`` (read-only when ``disabled``); returns the values
    that differ from the defaults or that ``current`` names (the compact form stored in the
    config: a preset that spells out a default keeps its config hash)."""
    opts_cls = cls.Options
    fields = dataclasses.fields(opts_cls)
    if not fields:
        return {}
    try:
        defaults = opts_cls()
    except TypeError:
        st.caption("This component's options have no defaults; set them via the URL or CLI.")
        return dict(current)
    hints = type_hints(opts_cls)
    out = {}
    with st.container(border=True):
        doc = inspect.cleandoc(opts_cls.__doc__) if opts_cls.__doc__ else None
        st.markdown(f"**{name or cls.__name__} options**", help=doc)
        for f in fields:
            default = getattr(defaults, f.name)
            value = current.get(f.name, default)
            value = _option_input(cls, f.name, hints[f.name], value, f"{state.WIDGET_PREFIX}{key}.{f.name}", disabled)
            if value != default or f.name in current:  # a value the config names stays named
                out[f.name] = value
    return out


def _option_input(cls, name: str, t, value, key: str, disabled: bool = False):
    """One option's input: a picker for a declared choice, a number for a number (its declared
    interval gives the slider hint and step, never a clamp), a checkbox, free text."""
    label = name.replace("_", " ")
    constraint, help_text = constraint_of(cls.Options, name), help_of(cls.Options, name)
    inner = _optional_inner(t)
    if inner in (int, float):
        auto_key = key + ".auto"
        if auto_key not in st.session_state:
            st.session_state[auto_key] = value is None
        if st.checkbox(f"{label}: automatic", key=auto_key, disabled=disabled):
            return None
        value = inner(0) if value is None else value
        t = inner
        constraint = constraint.inner if isinstance(constraint, OptionalOf) else constraint
    if t in (int, float):
        interval = constraint if isinstance(constraint, Interval) else Interval(t, None, None)
        store = {name: t(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value}
        return number_widget(store, name, label, interval, help_text, slider=interval.suggested is not None, key=key,
                             disabled=disabled)
    if key not in st.session_state:
        st.session_state[key] = value
    if t is bool:
        return st.checkbox(label, key=key, help=help_text or None, disabled=disabled)
    if t is str:
        choices = option_choices(cls, name)
        if choices:
            if st.session_state[key] not in choices:
                choices = [st.session_state[key], *choices]  # shown, and named by the validation
            return st.selectbox(label, choices, key=key, help=help_text or None, disabled=disabled)
        return st.text_input(label, key=key, help=help_text or None, disabled=disabled)
    st.caption(f"{label} = {plain(repr(value))} (set via the URL or CLI)")
    return value


# --- budgets -------------------------------------------------------------------------------
BUDGET_MODES = ("Same for all clients", "Per client", "Tiers (paper groups)")


def privacy(flat: dict) -> None:
    """The Privacy group: the budgets, then the mechanism and the aggregator."""
    budgets(flat)
    mechanism_and_aggregator(flat)


def budgets(flat: dict) -> None:
    """Per-client epsilon: one value, a slider per client (<= 20), or tiers + a table; the
    "spend exactly ε" switch between the mode and the values; δ. A lesson link hides or locks
    ε, the switch and δ one by one."""
    eps_field = "privacy.epsilon"
    mode = lesson_drawn(eps_field, lambda lock: _budget_mode(flat, **lock), note=False)
    lesson_drawn(MATCH, lambda lock: match_toggle(flat, **lock))
    lesson_drawn(eps_field, lambda lock: _epsilons(flat, mode, **lock))
    lesson_drawn("privacy.delta", lambda lock: _delta(flat, **lock))


def _budget_mode(flat: dict, disabled: bool = False) -> str:
    """The radio "one ε / per client / tiers" (its first value from the stored ε)."""
    if flat.get("privacy.mechanism") == "none":
        st.caption("The mechanism 'none' adds no noise: budgets are recorded but not used.")
    mode_key = state.WIDGET_PREFIX + "eps_mode"
    if mode_key not in st.session_state:
        one = len(flat.get("privacy.epsilon") or [1.0]) == 1
        st.session_state[mode_key] = BUDGET_MODES[0] if one else BUDGET_MODES[1]
    return st.radio("Privacy budget ε", BUDGET_MODES, key=mode_key, horizontal=False, help=EPSILON_HELP,
                    disabled=disabled)


def _epsilons(flat: dict, mode: str, disabled: bool = False) -> None:
    """The ε values in the budget ``mode``, written to ``flat["privacy.epsilon"]``."""
    n = int(flat.get("num_clients") or 1)
    eps = [float(e) for e in (flat.get("privacy.epsilon") or [1.0])]
    st.markdown(f"[What ε means, on one number →](/mechanisms?mechanism={flat.get('privacy.mechanism') or 'two_point'})")
    if mode == BUDGET_MODES[0]:
        one = {"eps": eps[0]}
        number_widget(one, "eps", "ε for every client", EPSILON, key=state.WIDGET_PREFIX + "eps_all",
                      disabled=disabled)
        flat["privacy.epsilon"] = [one["eps"]]
    else:
        per_client = _resize(eps, n)
        if mode == BUDGET_MODES[2]:
            per_client = _tiers(n, per_client, disabled)
        if mode == BUDGET_MODES[1] and n <= MAX_CLIENT_INPUTS:
            per_client = _client_inputs(per_client, slider=n <= MAX_CLIENT_SLIDERS, disabled=disabled)
        else:
            per_client = _client_table(per_client, disabled)
        flat["privacy.epsilon"] = per_client


def _delta(flat: dict, disabled: bool = False) -> None:
    """One δ for every client (a config with per-client values shows them in a caption)."""
    delta = list(flat.get("privacy.delta") or [1e-5])
    if len(delta) > 1:
        st.caption(f"δ: {len(delta)} per-client values from the loaded config "
                   f"({min(delta):.1e} … {max(delta):.1e}).")
        return
    one = {"delta": delta[0]}
    number_widget(one, "delta", "δ for every client", DELTA, key=state.WIDGET_PREFIX + "delta", format="%.1e",
                  disabled=disabled)
    flat["privacy.delta"] = [one["delta"]]
    if student_mode() and _is_number(one["delta"]) and 0 < one["delta"] < 1:
        st.caption(f"δ = {one['delta']:.10f}".rstrip("0") + f": a 1 in {1 / one['delta']:,.0f} chance, at most, "
                   "that the ε guarantee does not hold.")


def _resize(eps: list[float], n: int) -> list[float]:
    if len(eps) == n:
        return eps
    return (eps + [eps[-1]] * n)[:n] if len(eps) > 1 else eps * n


def _tiers(n: int, current: list[float], disabled: bool = False) -> list[float]:
    key = state.WIDGET_PREFIX + "eps_tiers"
    names = list(TIER_PRESETS)

    def tiers(name: str) -> list[float]:
        return tiered_epsilons(n, TIER_PRESETS[name]["levels"], TIER_PRESETS[name]["fractions"])

    def apply():
        if key not in st.session_state:  # an earlier callback of this rerun reset the widgets
            return
        st.session_state["pg.flat"]["privacy.epsilon"] = tiers(st.session_state[key])
        st.session_state.pop(state.WIDGET_PREFIX + "eps_table", None)

    if key not in st.session_state:  # entering tier mode: start from the first group
        st.session_state[key] = names[0]
        current = tiers(names[0])
        st.session_state.pop(state.WIDGET_PREFIX + "eps_table", None)
    st.selectbox("Tier preset", names, key=key, on_change=apply, disabled=disabled)
    st.caption(TIER_PRESETS[st.session_state[key]]["paper"] + " — edit single clients in the table.")
    return current


LOG_EPSILONS = (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0,
                70.0, 100.0)
"""The per-client ε slider's stops: a log scale from 0.1 to 100 (0.5 and 1 lie apart)."""


def _client_inputs(eps: list[float], slider: bool, disabled: bool = False) -> list[float]:
    """One ε per client: full-width sliders on a log scale (:data:`LOG_EPSILONS`; a client
    whose ε is not one of its stops, a preset's 0.05 or a link's 0.42, gets a number input
    instead, never a rounded slider), else number inputs two per row.

    The stored config is the one source of truth: every run seeds each widget from it, and a
    widget's change is written back to it in its callback (before the run that shows it). So a
    widget that was away (5 sliders, then 12 clients: number inputs, 30: a table, then 10)
    never comes back with a stale or empty value (the "every client's ε shows 0" of issue 24).
    """
    cols = [st.container()] if slider else st.columns(2)
    out = list(eps)
    for i, value in enumerate(eps):
        log = slider and value in LOG_EPSILONS
        key = f"{state.WIDGET_PREFIX}eps.{i}.{'log' if log else 'n'}"
        st.session_state[key] = value
        with cols[i % len(cols)]:
            if log:
                got = st.select_slider(f"ε client {i}", LOG_EPSILONS, key=key, format_func=people, disabled=disabled,
                                       on_change=_set_client_epsilon, args=(i, key), help=EPSILON_HELP)
            else:
                got = st.number_input(f"ε client {i}", key=key, step=0.1, format="%g", disabled=disabled,
                                      on_change=_set_client_epsilon, args=(i, key),
                                      help="Any ε > 0 (the slider's stops run from 0.1 to 100).")
        out[i] = float(got) if _is_number(got) else value
    return out


def _set_client_epsilon(i: int, key: str) -> None:
    """Callback of client ``i``'s ε widget: the new value into the stored config."""
    flat = st.session_state.get("pg.flat")
    value = st.session_state.get(key)
    if flat is None or not _is_number(value):
        return  # an emptied input: the stored value stays
    values = [float(e) for e in (flat.get("privacy.epsilon") or [1.0])]
    n = int(flat.get("num_clients") or 1)
    values = _resize(values, n)
    if i < len(values):
        values[i] = float(value)
        flat["privacy.epsilon"] = values


def _client_table(eps: list[float], disabled: bool = False) -> list[float]:
    key = state.WIDGET_PREFIX + "eps_table"
    if st.session_state.get("pg.eps_rows") != len(eps):  # edits of another size do not apply
        st.session_state.pop(key, None)
        st.session_state["pg.eps_rows"] = len(eps)
    frame = pd.DataFrame({"client": range(len(eps)), "epsilon": eps})
    edited = st.data_editor(
        frame, key=key, hide_index=True, num_rows="fixed", height=240,
        disabled=True if disabled else ["client"], width="stretch",
        column_config={"epsilon": st.column_config.NumberColumn("ε", format="%g")})
    return [float(v) for v in edited["epsilon"]]


# --- teaching: the student's defaults, plain words, equal privacy -----------------------------
STUDENT_METHOD = "dp_fedavg"
STUDENT_EPSILON = 10.0
"""The Playground's first config: the demo with DP-FedAvg spending ε = 10 over the whole run
(about 0.5 accuracy against 0.93 without privacy on digits, in a few seconds: the cost of
privacy shows on the first Run; ``assets/first_screen_frontier.json``)."""
MATCH_KEY = "pg.match"
MATCH_HELP = ("Every method reads ε its own way (per weight per round, per round, the whole run). With this "
              "on, Run first solves the method's own budget so that the whole run spends exactly the ε you "
              "set (within 1 %, never more): the same fair comparison as the Frontier page's equal privacy.")
STUDENT_KEY = "pg.student"


def student_default() -> RunConfig:
    """The demo with a private method (see :data:`STUDENT_METHOD`)."""
    cfg = apply_method(preset_config(state.DEFAULT_PRESET), STUDENT_METHOD, preset=state.DEFAULT_PRESET)
    return cfg.with_overrides({"privacy.epsilon": [STUDENT_EPSILON]})


def student_mode() -> bool:
    """Plain words first (the default): "the server can't see your data", numbers as 13,000."""
    return bool(st.session_state.get(STUDENT_KEY, True))


def student_toggle(disabled: bool = False) -> bool:
    if STUDENT_KEY not in st.session_state:
        st.session_state[STUDENT_KEY] = True
    st.toggle("Plain words", key=STUDENT_KEY, disabled=disabled,
              help="Student mode: who is trusted in everyday words, numbers written out. Off: the exact terms "
                   "(threat model, headline ε, accountants) everywhere.")
    return student_mode()


MATCH_MAX_ROUNDS = 100
"""Equal privacy replays the run's accounting before it starts, in the worker (it says so while it
solves): a few seconds up to this many rounds (LDP-FL: 7 s at 100 rounds, over two minutes at 2000),
so every one-click method on the demo (HW-DPFL: 80 rounds) can spend exactly its ε. Longer runs
start with the ε as the method reads it; ``python -m fedcore sweep --match headline`` matches any length."""


def match_on(flat: Optional[dict] = None) -> bool:
    flat = flat if flat is not None else st.session_state.get("pg.flat") or {}
    return bool(st.session_state.get(MATCH_KEY, True)) and int(flat.get("rounds") or 0) <= MATCH_MAX_ROUNDS


def match_toggle(flat: dict, disabled: bool = False) -> None:
    """"Spend exactly ε in total": the equal-privacy setting, on by default."""
    if MATCH_KEY not in st.session_state:
        st.session_state[MATCH_KEY] = True
    too_long = int(flat.get("rounds") or 0) > MATCH_MAX_ROUNDS
    st.toggle("Spend exactly ε in total", key=MATCH_KEY, help=MATCH_HELP, disabled=too_long or disabled)
    mech = flat.get("privacy.mechanism") or "none"
    if mech == "none":
        return
    if too_long:
        st.caption(f"*Spend exactly ε in total* works up to {MATCH_MAX_ROUNDS} rounds here (solving it replays "
                   "the run's accounting first); for longer runs use `python -m fedcore sweep --match headline`. "
                   f"This method reads your ε **{epsilon_unit(mech)}**.")
    elif match_on(flat):
        st.caption(f"Your ε is what the whole run spends; Run solves this method's own budget "
                   f"({epsilon_unit(mech)}) to match it.")
    else:
        st.caption(f"This method reads your ε **{epsilon_unit(mech)}**; the run's total is shown beside it.")


def matched_note(record: dict) -> Optional[dict]:
    """The equal-privacy note of a run started with "spend exactly ε in total" on
    (:class:`~fedcore.runner.store.EqualPrivacy`): ``target``; once its worker solved the budget
    also ``headline``, ``reached``, ``knob``."""
    return record.get("match")


def start_matched(cfg: RunConfig, *, reuse: bool = True) -> Optional[str]:
    """Start ``cfg``; with "spend exactly ε in total" on, its worker first solves the budget."""
    return state.start_run(cfg, reuse=reuse, match=match_on({"rounds": cfg.rounds}))


def same_settings(record: dict, cfg: RunConfig) -> bool:
    """Whether the run on screen was started from the sidebar's settings ``cfg`` (the config it
    asked for, in the same equal-privacy mode)."""
    exact = match_on({"rounds": cfg.rounds}) and cfg.privacy.mechanism != "none"
    return record["config_hash"] == cfg.config_hash() and bool(matched_note(record)) == exact


# --- lesson links: the sidebar's groups, and settings a teacher hides or locks -----------------
PRESET, MATCH, PLAIN = "preset", "match", "plain"
"""Settings of the page that are not config fields: the preset picker, "spend exactly ε in total"
and "plain words" (a lesson link names them like the config's fields)."""
PAGE_SETTINGS = {PRESET: (PRESET,), MATCH: (MATCH,), "spend_exactly": (MATCH,), PLAIN: (PLAIN,),
                 "plain_words": (PLAIN,)}
RECIPE = ("privacy.mechanism", "privacy.mechanism_options", "privacy.aggregator", "privacy.aggregator_options")
"""What a one-click method sets: a lesson link that hides or locks the method locks these too
(changing one turns the method into "(custom)")."""
LOCK_NOTE = ":material/lock: Set by the lesson link"


@dataclasses.dataclass(frozen=True)
class Section:
    """One folded group of the sidebar: its title (a lesson link names it in lower case with
    ``_``, e.g. ``data_split``, or by one of ``aliases``), what draws it and the settings it
    draws. A group whose settings a lesson link all hides is left out."""
    title: str
    draw: Callable[[dict], None]
    settings: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    expanded: bool = False

    @property
    def name(self) -> str:
        return "_".join(self.title.lower().split())


SECTIONS = (
    Section("Clients and rounds", federation, ("num_clients", "rounds", "participation", "sampling", "seed"),
            ("federation",)),
    Section("Privacy", privacy, ("privacy.epsilon", MATCH, "privacy.delta", *RECIPE), expanded=True),
    Section("Data and model", data_and_model, ("dataset", "model", "train_size", "test_size"), ("data",)),
    Section("Data split", partition, setting_fields("partition"), ("split",)),
    Section("Local training", local_training, (*setting_fields("local"), "privacy.server_lr"), ("local", "training")),
)
"""The sidebar's groups below the preset and the method, in order: clients first (the budgets
read their number), folded so that Privacy is above the fold at 1280x720."""


@dataclasses.dataclass(frozen=True)
class Lesson:
    """What a lesson link does to the form: the settings (dotted config fields, or :data:`PRESET`,
    :data:`MATCH`, :data:`PLAIN`) it hides and locks, and the names it gave that name none."""
    hide: frozenset = frozenset()
    lock: frozenset = frozenset()
    unknown: tuple = ()

    def hides(self, *settings: str) -> bool:
        """Whether every one of ``settings`` is hidden (a group is left out only then)."""
        return all(s in self.hide for s in settings)

    def locks(self, setting: str) -> bool:
        """Whether ``setting`` is drawn read-only (hidden wins over locked)."""
        return setting in self.lock and setting not in self.hide

    @property
    def active(self) -> bool:
        return bool(self.hide or self.lock)


def lesson_settings(name: str) -> tuple[str, ...]:
    """The settings a lesson link's ``name`` stands for: a sidebar group (:data:`SECTIONS`), a
    page setting (:data:`PAGE_SETTINGS`) or config fields
    (:func:`~fedcore.links.setting_fields`); empty when it names none."""
    for section in SECTIONS:
        if name in (section.name, *section.aliases):
            return section.settings
    return PAGE_SETTINGS.get(name) or setting_fields(name)


def lesson_names() -> list[str]:
    """Every name :func:`lesson_settings` reads, for the warning about one it cannot."""
    groups = [n for s in SECTIONS for n in (s.name, *s.aliases)]
    return list(dict.fromkeys([*groups, *PAGE_SETTINGS, *setting_names()]))


@functools.lru_cache(maxsize=64)
def read_lesson(hide: tuple[str, ...], lock: tuple[str, ...]) -> Lesson:
    """The :class:`Lesson` of a link's ``hide`` and ``lock`` names."""
    unknown: list[str] = []

    def settings(names: tuple[str, ...]) -> set[str]:
        out: set[str] = set()
        for name in names:
            found = lesson_settings(name)
            out.update(found)
            if not found:
                unknown.append(name)
        return out

    hidden, locked = settings(hide), settings(lock)
    if "method" in hidden | locked:
        locked.update(RECIPE)
    return Lesson(frozenset(hidden), frozenset(locked), tuple(dict.fromkeys(unknown)))


def current_lesson() -> Lesson:
    """The lesson link this session opened (an empty :class:`Lesson` when none)."""
    names = state.lesson()
    return read_lesson(tuple(names.get("hide", ())), tuple(names.get("lock", ())))


def hides(*settings: str) -> bool:
    return current_lesson().hides(*settings)


def lesson_drawn(setting: str, draw: Callable[[dict], Any], default: Any = None, *, note: bool = True) -> Any:
    """``draw(lock)`` under the lesson link: not called when it hides ``setting`` (``default`` is
    returned instead); when it locks it, ``lock`` is ``{"disabled": True}`` and a lock note
    follows (unless ``note`` is false: a later widget of the same setting carries it)."""
    lesson = current_lesson()
    if lesson.hides(setting):
        return default
    locked = lesson.locks(setting)
    value = draw({"disabled": True} if locked else {})
    if locked and note:
        st.caption(LOCK_NOTE)
    return value


def hold_lesson(flat: dict) -> None:
    """Give every hidden or locked setting the lesson link's value again where a callback
    replaced it (a preset or a method picked, which rewrite many fields): what the link fixes,
    a student's other clicks cannot change. The widgets then re-read the config."""
    lesson, link = current_lesson(), state.lesson().get("link") or {}
    changed = {f: link[f] for f in lesson.hide | lesson.lock if f in link and flat.get(f) != link[f]}
    if changed:
        flat.update(copy.deepcopy(changed))
        state.reset_widgets()


def lesson_banner() -> None:
    """What the lesson link did, in one line; a warning naming what it named that is no setting."""
    lesson = current_lesson()
    if lesson.unknown:
        st.warning("This lesson link names settings the Playground does not know: "
                   f"{plain(', '.join(lesson.unknown))}. They are shown as usual. Names it reads: "
                   + ", ".join(lesson_names()) + " (or a field's dotted name, e.g. privacy.epsilon).",
                   icon=":material/link_off:")
    if lesson.active:
        st.caption(":material/school: Opened from a lesson link: some settings are fixed for this lesson "
                   "(hidden, or shown with :material/lock:).")


def experiment_form(flat: dict) -> None:
    """The Playground's sidebar: plain words, the preset and the method, then the groups of
    :data:`SECTIONS`, each widget under the lesson link (hidden, locked or editable)."""
    hold_lesson(flat)
    st.header("Experiment")
    lesson_banner()
    lesson_drawn(PLAIN, lambda lock: student_toggle(**lock))
    preset_and_method(flat)
    lesson = current_lesson()
    for section in SECTIONS:
        if not lesson.hides(*section.settings):
            with st.expander(section.title, expanded=section.expanded):
                section.draw(flat)
