"""The shared-host side of a page: who is looking, the host's limits, safe echoes of a link.

- :func:`viewer`: the signed-in user (``st.login``, when the host configured ``[auth]``),
  else this browser session; admins are the host's ``admins`` e-mails.
- :func:`limits`: the host's :class:`~fedcore.runner.limits.HostLimits` (read once per server).
- :func:`keep_alive`: the owner's page refreshes its run's heartbeat (nobody else's does).
- :func:`plain` (from :mod:`pages.components.plain`, the one plain-text helper): text from a
  link (or an error quoting it) as escaped, truncated plain text, never markdown: no links,
  images, colours or icons can be smuggled into a warning.
"""
from __future__ import annotations

import logging
import time

import streamlit as st

from fedcore.runner.owners import Viewer, can_control

from .plain import ECHO_LIMIT, link_warning, plain  # noqa: F401  (host.plain: the same helper)
from .server import forget_events, limits, manager  # host.limits: the same cached limits

LOG = logging.getLogger("fedcore.dashboard")
TOUCH_EVERY_S = 5.0
"""The owner's page refreshes the heartbeat at most this often (one store write)."""


XSRF_COOKIE = "_streamlit_xsrf"


def _session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "local"


def _browser_key():
    """A stable, non-reversible key of this browser: a hash of the random token in
    Streamlit's XSRF cookie (kept across reloads and reconnects); None without the cookie."""
    import hashlib

    try:
        from streamlit.web.server.starlette.starlette_app_utils import decode_xsrf_token_string

        raw = st.context.cookies.get(XSRF_COOKIE)
        token = decode_xsrf_token_string(raw)[0] if raw else None
    except Exception:  # noqa: BLE001  (another server flavour, XSRF protection off)
        return None
    return hashlib.sha256(b"fedcore-owner:" + token).hexdigest()[:24] if token else None


def sign_in_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001  (no secrets file at all)
        return False


def signed_in_email():
    if not sign_in_configured():
        return None
    info = st.user.to_dict()
    return info.get("email") if info.get("is_logged_in") else None


def viewer() -> Viewer:
    """Who is looking: ``user:<e-mail>`` when signed in, else ``browser:<key>`` (this
    browser's cookie), else ``session:<this page session's id>``."""
    key = _browser_key()
    if key:
        return Viewer.from_identity(signed_in_email(), key, limits().admins, kind="browser")
    return Viewer.from_identity(signed_in_email(), _session_id(), limits().admins)


def may_control(record: dict) -> bool:
    return can_control(record, viewer())


def keep_alive(record: dict) -> None:
    """Refresh the run's heartbeat if this page belongs to its owner (throttled)."""
    if record.get("owner") != viewer().owner:
        return
    beats = st.session_state.setdefault("host.beats", {})
    now = time.monotonic()
    every = min(TOUCH_EVERY_S, (record.get("grace_s") or TOUCH_EVERY_S * 8) / 8)
    if now - beats.get(record["id"], 0.0) >= every:
        manager().store.touch(record["id"])
        beats[record["id"]] = now


def warn_link(message: str, detail) -> None:
    """A warning: ``message`` (our own markdown) plus ``detail`` from the link as plain text
    (:func:`pages.components.plain.link_warning`)."""
    link_warning(message, detail)


def store_banner() -> None:
    """A banner when the run store had to be recreated or replaced (never a traceback)."""
    try:
        problem = manager().store.problem
    except Exception as exc:  # noqa: BLE001
        LOG.exception("run store unavailable")
        st.error(f"The run store cannot be used: {plain(exc)}", icon=":material/database:")
        st.stop()
    if problem:
        st.error(plain(problem, 400), icon=":material/database:")


def sign_in_controls() -> None:
    """Log in / log out in the sidebar when the host configured sign-in."""
    if not sign_in_configured():
        return
    with st.sidebar:
        email = signed_in_email()
        if email:
            st.caption(f"Signed in as {plain(email)}")
            st.button("Log out", on_click=st.logout, key="host.logout")
        else:
            st.caption("Sign in so your runs follow you across tabs and visits.")
            st.button("Log in", on_click=st.login, key="host.login")


def submission_error(cfg):
    """Why this host refuses ``cfg`` (a host limit, no GPU, a dataset missing offline), or None."""
    from fedcore.data.root import public_message
    from fedcore.errors import FedcoreError
    from fedcore.runner.limits import check_submission

    try:
        check_submission(cfg, limits())
    except FedcoreError as exc:
        return public_message(exc)  # a dataset missing here: no server path, no exception text
    return None


def stop_run(run_id: str) -> None:
    """Stop ``run_id`` if this viewer owns it (or is an admin); else say why not."""
    from fedcore.errors import FedcoreError

    try:
        manager().stop(run_id, by=viewer())
    except FedcoreError as exc:
        st.toast(plain(exc))


def delete_run(run_id: str) -> bool:
    """Delete ``run_id`` if this viewer owns it (or is an admin); else show why not."""
    from fedcore.errors import FedcoreError

    try:
        manager().delete(run_id, by=viewer())
    except FedcoreError as exc:
        st.error(plain(exc))
        return False
    forget_events([run_id])
    return True
