"""The form layer: Streamlit inputs generated from the config's declared fields and options,
and the lesson link's hold on them.

Every widget edits one dotted config field of the Playground's ``flat`` dict (see
:mod:`pages.components.state`); its range comes from the field's validation so most bad
settings cannot be entered at all, and the rest are reported by ``RunConfig`` naming the
field (:func:`bind`, :func:`number`). Component option forms are built from each class's
``Options`` dataclass (:func:`options_form`), so a new mechanism shows up with its settings
without touching the dashboard.

A lesson link (``?hide=partition,aggregator&lock=method``) hides or locks settings: every widget
is drawn through :func:`lesson_drawn`, which leaves out a hidden one and disables a locked one
(with a lock note); the sidebar's groups (:data:`SECTIONS`, the groups table) are left out when
it hides all their settings. Hidden and locked settings keep the link's values
(:func:`hold_lesson`). Also here: the "Plain words" mode the captions read (:func:`student_mode`).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from typing import Any, Callable, Optional

import streamlit as st

from fedcore.config import LocalConfig, PartitionConfig, PrivacyConfig, RunConfig, type_hints
from fedcore.constraints import Choice, Interval, OptionalOf, constraint_of, help_of
from fedcore.links import setting_fields, setting_names

from . import state
from .plain import plain

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
        flat[field] = keyed(widget, label, key=key, on_change=on_change, **kw, **lock)
        return flat[field]

    return lesson_drawn(field, draw, flat.get(field))


def keyed(widget: Callable, label: str, *args, key: str, **kw) -> Any:
    """``widget(label, *args, key=key, **kw)`` with the key's current value as the widget's own default.

    Streamlit's browser falls back to a widget's *default* when it mounts the widget without the
    value the server set for it (a rerun overtook the message that carried the value: three tabs
    of one browser pressed at once, issue 38 §3), and then sends that default back as if the user
    had picked it: a selectbox's first option, a slider's minimum (the ``method = ''`` and the
    participation 0.01 of the one-visitor test's failures). With the current value as the
    default, that fallback is the value itself. (Streamlit logs that the widget "was created with
    a default value but also had its value set via the Session State API": switched off in
    ``.streamlit/config.toml``, ``global.disableWidgetStateDuplicationWarning``.)
    """
    if key in st.session_state:
        kw.update(_as_default(widget, args, kw, st.session_state[key]))
    return widget(label, *args, key=key, **kw)


def _as_default(widget: Callable, args: tuple, kw: dict, value: Any) -> dict:
    """The keyword that makes ``value`` ``widget``'s default; none when it cannot be one."""
    name = getattr(widget, "__name__", "")
    options = list(args[0] if args else kw.get("options", ()))
    if name in ("selectbox", "radio"):
        return {"index": options.index(value)} if value in options else {}
    if name in ("segmented_control", "pills", "multiselect"):
        return {"default": value}
    if name == "select_slider":
        return {"value": value} if value in options else {}
    if name == "number_input" and is_number(value) and isinstance(kw.get("step"), (int, float)):
        return {"value": type(kw["step"])(value)} if isinstance(kw["step"], float) or value == int(value) else {}
    if name == "slider" and not (is_number(value) and kw.get("min_value", value) <= value <= kw.get("max_value", value)):
        return {}
    return {} if value is None else {"value": value}


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
        fits = lo_hi is not None and is_number(value) and lo_hi[0] <= value <= lo_hi[1]
        st.session_state[mode_key] = "slider" if slider and fits else "number"
    if key not in st.session_state:
        st.session_state[key] = value if not is_number(value) or is_int else float(value)
    step = getattr(constraint, "step", None) or (1 if is_int else 0.01)
    kw.setdefault("help", help_text or None)
    if st.session_state[mode_key] == "slider":
        lo, hi = constraint.suggested
        value = keyed(st.slider, label, min_value=int(lo) if is_int else float(lo),
                          max_value=int(hi) if is_int else float(hi),
                          step=int(step) if is_int else float(step), key=key, **kw)
    else:
        if is_int:
            value = keyed(st.number_input, label, step=int(step), key=key, **kw)
        else:
            kw.setdefault("format", "%g")
            value = keyed(st.number_input, label, step=float(step), key=key, **kw)
    store[field] = value
    return value


def is_number(v: Any) -> bool:
    """Whether ``v`` is a number a widget can hold (a bool is not)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --- option forms from Options dataclasses -------------------------------------------------
def component_options(flat: dict, field: str, cls, key: str, name: str, words: str = "", intro=None) -> None:
    """A component's options form editing ``flat[field]`` (unless a lesson link hides it). With Plain words on
    the form, and ``intro`` (the component's own caption, in its paper's symbols), sit behind one *Advanced*
    button that says in ``words`` what they tune: a student sees no internal name until they ask."""
    def draw(lock: dict) -> None:
        if not student_mode() or not dataclasses.fields(cls.Options):
            if intro:
                intro()
            flat[field] = options_form(cls, flat.get(field) or {}, key, name, disabled=bool(lock))
            return
        with st.popover(f"Advanced: {words or 'its settings'}", icon=":material/tune:", width="stretch"):
            if intro:
                intro()
            flat[field] = options_form(cls, flat.get(field) or {}, key, name, disabled=bool(lock))

    lesson_drawn(field, draw)


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
        if keyed(st.checkbox, f"{label}: automatic", key=auto_key, disabled=disabled):
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
        return keyed(st.checkbox, label, key=key, help=help_text or None, disabled=disabled)
    if t is str:
        choices = option_choices(cls, name)
        if choices:
            if st.session_state[key] not in choices:
                choices = [st.session_state[key], *choices]  # shown, and named by the validation
            return keyed(st.selectbox, label, choices, key=key, help=help_text or None, disabled=disabled)
        return keyed(st.text_input, label, key=key, help=help_text or None, disabled=disabled)
    st.caption(f"{label} = {plain(repr(value))} (set via the URL or CLI)")
    return value


# --- plain words: how the captions speak ----------------------------------------------------
STUDENT_KEY = "pg.student"


def student_mode() -> bool:
    """Plain words first (the default): "the server can't see your data", numbers as 13,000."""
    return bool(st.session_state.get(STUDENT_KEY, True))


def student_toggle(disabled: bool = False) -> bool:
    """The "Plain words" switch (on by default)."""
    if STUDENT_KEY not in st.session_state:
        st.session_state[STUDENT_KEY] = True
    keyed(st.toggle, "Plain words", key=STUDENT_KEY, disabled=disabled,
              help="Student mode: who is trusted in everyday words, numbers written out. Off: the exact terms "
                   "(threat model, headline ε, accountants) everywhere.")
    return student_mode()


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
    ``_``, e.g. ``data_split``, or by one of ``aliases``) and the settings it draws (what draws
    it: :data:`pages.components.sidebar.SECTION_DRAWS`). A group whose settings a lesson link all
    hides is left out."""
    title: str
    settings: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    expanded: bool = False

    @property
    def name(self) -> str:
        return "_".join(self.title.lower().split())


SECTIONS = (
    Section("Clients and rounds", ("num_clients", "rounds", "participation", "sampling", "seed"), ("federation",)),
    Section("Privacy", ("privacy.epsilon", MATCH, "privacy.delta", *RECIPE), expanded=True),
    Section("Data and model", ("dataset", "model", "train_size", "test_size"), ("data",)),
    Section("Data split", setting_fields("partition"), ("split",)),
    Section("Local training", (*setting_fields("local"), "privacy.server_lr"), ("local", "training")),
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
    preset = state.current_preset()
    if link.get("method") and "method" in lesson.hide | lesson.lock and preset != state.lesson().get("preset", preset):
        # the locked method as it reads on this preset: none of the old preset's tuning of its options
        from fedcore.links import flatten
        from fedcore.methods import apply_method
        from fedcore.resolve import preset_config

        recipe = flatten(apply_method(preset_config(preset), link["method"], preset=preset).to_dict())
        link = {**link, **{f: recipe.get(f, {} if f.endswith("_options") else "") for f in RECIPE}}
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
