"""What a session remembers, and the server's shared handles (:mod:`.server`).

The :class:`~fedcore.runner.Jobs` and the event cache are one per server
(``st.cache_resource``, :mod:`.server`). Session state holds ids and the Playground's settings only:
the run on screen (``pg.run``), the compact config the widgets edit (``pg.flat``), the
lesson link's hidden and locked settings (``pg.lesson``) and the query strings this session
wrote (``pg.urls``). Event data is never copied into a session.
"""
from __future__ import annotations

import copy
import json
from typing import Optional

import streamlit as st

from fedcore.config import RunConfig
from fedcore.errors import FedcoreError
from fedcore.methods import consistent_method
from fedcore.resolve import preset_config, resolve
from fedcore.links import (LESSON_PARAMS, config_from_params, config_to_params, flatten, lesson_from_params,
                                  lesson_to_params, unflatten)

from .plain import flash, flashed, plain  # noqa: F401  (state.flashed: the pages read notices through it)
from .server import forget_events, manager, run  # noqa: F401  (the pages' state.manager(), ...)
from .shown import show_run, shown_run  # noqa: F401  (the pages' state.show_run(), ...)

PLAYGROUND = "pages/playground.py"
DEFAULT_PRESET = "demo"
WIDGET_PREFIX = "w."


# --- the Playground's config ------------------------------------------------------------
def reset_widgets() -> None:
    """Drop every config widget's state so the widgets re-read ``pg.flat``."""
    for key in [k for k in st.session_state if str(k).startswith(WIDGET_PREFIX)]:
        del st.session_state[key]


def load_config(cfg: RunConfig, preset: Optional[str] = None) -> None:
    """Put ``cfg`` into the Playground's widgets."""
    st.session_state["pg.flat"] = flatten(cfg.to_dict())
    if preset is not None:
        st.session_state["pg.preset"] = preset
    reset_widgets()


def playground_flat() -> dict:
    """The dotted-name config the Playground's widgets edit (loaded from the URL once)."""
    sync_from_url()
    if "pg.flat" not in st.session_state:
        load_config(preset_config(DEFAULT_PRESET), DEFAULT_PRESET)
    lesson = st.session_state.get("pg.lesson")
    if lesson is not None and "link" not in lesson:  # the config the lesson link opened, whichever way it loaded
        lesson["link"] = copy.deepcopy(st.session_state["pg.flat"])
        lesson["preset"] = current_preset()
    return st.session_state["pg.flat"]


def lesson() -> dict:
    """The lesson link of this session: ``{"hide": names, "lock": names, "link": flat}``, the
    names as the link wrote them (:func:`~fedcore.links.lesson_from_params`; the
    Playground's widgets resolve them) and ``link`` the config it opened, whose values the
    hidden and locked settings keep. Empty lists when the page was not opened by one."""
    return st.session_state.get("pg.lesson") or {key: () for key in LESSON_PARAMS}


def current_preset() -> str:
    return st.session_state.get("pg.preset", DEFAULT_PRESET)


def build_config(flat: dict) -> tuple[Optional[RunConfig], Optional[str]]:
    """``(config, None)`` or ``(None, the ConfigError message naming the field)``."""
    try:
        return resolve(consistent_method(RunConfig.from_dict(unflatten(flat)))), None
    except (FedcoreError, KeyError) as exc:
        return None, str(exc.args[0] if isinstance(exc, KeyError) else exc)


def current_config() -> RunConfig:
    """The Playground's config, or the default preset's when it is invalid or unset."""
    cfg, _ = build_config(st.session_state.get("pg.flat") or flatten(preset_config(current_preset()).to_dict()))
    return cfg or preset_config(DEFAULT_PRESET)


URL_MEMORY = 64
"""How many of its own query strings a session remembers (see :func:`sync_from_url`)."""


def _signature(params: dict) -> str:
    return json.dumps(dict(sorted(params.items())))


def _remember_url(params: dict) -> None:
    seen = st.session_state.setdefault("pg.urls", [])
    sig = _signature(params)
    if sig in seen:
        seen.remove(sig)
    seen.append(sig)
    del seen[:-URL_MEMORY]


def sync_from_url() -> None:
    """If the URL names a config or run this session has not seen, load it.

    An empty query string (navigating from another page) keeps the session's settings,
    and so does any query string this session wrote itself: a widget change made before
    the browser received the previous run's URL arrives with that older URL, and loading
    it would undo the change (quick slider steps snapped back).
    """
    params = st.query_params.to_dict()
    if not params or _signature(params) in st.session_state.get("pg.urls", ()):
        return
    _remember_url(params)
    st.session_state["pg.present"] = params.pop("present", None) == "1"  # the presentation layout
    st.session_state["pg.lesson"] = lesson_from_params(params)  # its "link" is taken once the config is loaded
    for key in LESSON_PARAMS:
        params.pop(key, None)
    if not params:
        return
    if set(params) <= {"run"}:  # a run's own link: its settings, not the demo's
        record = manager().store.get_job(params["run"])
        try:
            if record is not None:
                load_config(RunConfig.from_dict(record.requested or record.config))
        except FedcoreError as exc:
            flash("pg.url_error", f"the linked run's settings could not be loaded ({exc})")
        show_run(params["run"])  # the page says so when no such run is here
        return
    dropped: list[str] = []
    try:
        cfg = config_from_params(params, DEFAULT_PRESET, dropped)
    except Exception as exc:  # noqa: BLE001  (anything a link can trigger becomes a warning)
        if not isinstance(exc, (FedcoreError, KeyError)):
            from .host import LOG

            LOG.warning("a link's settings raised", exc_info=exc)  # the host's log gets the traceback
        flash("pg.url_error", str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc))
        return
    load_config(cfg, params.get("preset", DEFAULT_PRESET))
    if dropped:
        flash("pg.url_dropped", ", ".join(dropped))
    if params.get("run"):
        show_run(params["run"])


def write_url(cfg: Optional[RunConfig]) -> None:
    """Mirror the current config (and run on screen) into the query string."""
    if cfg is None:
        return
    params = config_to_params(cfg, current_preset())
    if shown_run():
        params["run"] = shown_run()
    if st.session_state.get("pg.present"):
        params["present"] = "1"
    params.update(lesson_to_params(lesson()))  # a student's reload keeps the lesson
    if _signature(params) != _signature(st.query_params.to_dict()):
        st.query_params.from_dict(params)
    _remember_url(params)


def open_in_playground(run_id: str) -> None:
    """Switch to the Playground showing ``run_id`` with its config in the widgets."""
    record = manager().store.get_job(run_id)
    if record is None:
        st.error(f"run {plain(run_id)} no longer exists")
        return
    cfg = RunConfig.from_dict(record.requested or record.config)
    load_config(cfg)
    show_run(run_id)
    params = {**config_to_params(cfg, current_preset()), "run": run_id, **lesson_to_params(lesson())}
    _remember_url(params)
    st.switch_page(PLAYGROUND, query_params=params)


def start_run(cfg: RunConfig, *, reuse: bool = True, match: bool = False) -> Optional[str]:
    """Start (or replay from the cache) ``cfg`` as this viewer's run (``match``: spending
    exactly its ε in total, :meth:`~fedcore.runner.jobs.Jobs.start`); shows the error (a host
    limit, ...) as plain text and returns None if it cannot."""
    from .host import viewer

    try:
        return manager().start(cfg, reuse=reuse, owner=viewer().owner, match=match)
    except (FedcoreError, KeyError) as exc:
        st.error(plain(exc.args[0] if isinstance(exc, KeyError) else exc, 400))
        return None
