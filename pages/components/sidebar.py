"""The Playground's sidebar: the experiment form the page draws (:func:`experiment_form`).

Its first config (:func:`student_default`), the preset loader and the one-click method recipes,
then the folded groups of :data:`~pages.components.form.SECTIONS` (clients and rounds, privacy,
data and model, data split, local training) with the registries' pickers and their captions;
the Privacy group's budgets come from :mod:`.budget_editor`. Every widget goes through the form
layer (:mod:`.form`), so a lesson link hides or locks it.
"""
from __future__ import annotations

import functools

import streamlit as st

from fedcore.accounting.headline import THREAT_MODEL_NAMES, threat_model_text
from fedcore.accounting.words import plain_threat_text
from fedcore.catalog import AGGREGATORS, DATASETS, MECHANISMS, METHODS, MODELS, PARTITIONERS, PRESETS
from fedcore.config import OPTIMIZERS, SAMPLINGS, RunConfig
from fedcore.errors import ConfigError, FedcoreError
from fedcore.links import flatten
from fedcore.methods import apply_method
from fedcore.presets import preset_method_settings
from fedcore.registry import Registry
from fedcore.reproduce.estimate import preset_seconds, rough_label
from fedcore.resolve import preset_config
from fedcore.runner.limits import offered_datasets

from . import state
from .budget_editor import budgets
from .form import (PLAIN, PRESET, SECTIONS, bind, component_options, keyed, current_lesson, hides, hold_lesson, lesson_banner,
                   lesson_drawn, number, student_mode, student_toggle)
from .plain import flash

CUSTOM = "(custom)"
"""The method picker's entry for no one-click recipe (mechanism and aggregator picked by hand)."""
STUDENT_METHOD = "dp_fedavg"
STUDENT_EPSILON = 10.0
"""The Playground's first config: the demo with DP-FedAvg spending ε = 10 over the whole run
(about 0.5 accuracy against 0.93 without privacy on digits, in a few seconds: the cost of
privacy shows on the first Run; ``assets/first_screen_frontier.json``)."""


def student_default() -> RunConfig:
    """The demo with a private method (see :data:`STUDENT_METHOD`)."""
    cfg = apply_method(preset_config(state.DEFAULT_PRESET), STUDENT_METHOD, preset=state.DEFAULT_PRESET)
    return cfg.with_overrides({"privacy.epsilon": [STUDENT_EPSILON]})


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
            seed = st.session_state["pg.flat"].get("seed", 0)   # another preset, the same seed
            state.load_config(preset_config(name).replace(seed=seed), name)
        except (FedcoreError, KeyError) as exc:
            flash("pg.url_error", f"preset {name!r} could not be loaded: {exc}")
            return
        state.show_run(None)

    if st.session_state.get("pg.preset_pick") not in presets:
        st.session_state["pg.preset_pick"] = state.current_preset()
    presets = sorted(presets, key=lambda n: (PRESETS.entry(n).paper != "", n != "demo", PRESETS.entry(n).paper, n))
    keyed(st.selectbox, "Preset", presets, key="pg.preset_pick", on_change=load_preset, format_func=preset_label,
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
    chosen = keyed(st.selectbox, "Method (one-click recipe)", methods, key=key, on_change=pick_method, disabled=disabled,
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
        component_options(flat, "partition.options", PARTITIONERS.get(kind), f"popt.{kind}", kind,
                          "how the data is split among the clients")


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
    for name, label, registry, prefix, words in (
            ("mechanism", "Mechanism (client side)", MECHANISMS, "mopt", "how each client adds its noise"),
            ("aggregator", "Aggregator (server side)", AGGREGATORS, "aopt", "how the server combines the uploads")):
        field, options = f"privacy.{name}", f"privacy.{name}_options"
        picked = bind(st.selectbox, flat, field, label, options=registry.names(), on_change=_mark_custom(field, options))
        intro = None if hides(field) else (lambda r=registry, p=picked: entry_caption(r, p))
        component_options(flat, options, registry.get(picked), f"{prefix}.{picked}", picked, words, intro)
        if name == "mechanism" and not hides(field):
            threat_caption(picked, flat.get(options) or {})


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


def privacy(flat: dict) -> None:
    """The Privacy group: the budgets, then the mechanism and the aggregator."""
    budgets(flat)
    mechanism_and_aggregator(flat)


# --- the whole sidebar ----------------------------------------------------------------------
SECTION_DRAWS = {"Clients and rounds": federation, "Privacy": privacy, "Data and model": data_and_model,
                 "Data split": partition, "Local training": local_training}
"""What draws each group of :data:`~pages.components.form.SECTIONS`, by its title."""


def experiment_form(flat: dict) -> None:
    """The Playground's sidebar: plain words, the preset and the method, then the groups of
    :data:`~pages.components.form.SECTIONS`, each widget under the lesson link (hidden, locked or
    editable)."""
    hold_lesson(flat)
    st.header("Experiment")
    lesson_banner()
    lesson_drawn(PLAIN, lambda lock: student_toggle(**lock))
    preset_and_method(flat)
    lesson = current_lesson()
    for section in SECTIONS:
        if not lesson.hides(*section.settings):
            with st.expander(section.title, expanded=section.expanded):
                SECTION_DRAWS[section.title](flat)
