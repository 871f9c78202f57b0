"""The shared-host side of a page: who is looking, the host's limits, safe echoes of a link.

- :func:`viewer`: the signed-in user (``st.login``, when the host configured ``[auth]``),
  else the anonymous visitor the server issued to this Streamlit session (kept in
  ``st.session_state``, server-side: no cookie names it); admins are the host's ``admins``.
- :func:`keep_my_runs`: the visitor's "keep my runs" code, and a field to claim runs with one.
- :func:`limits`: the host's :class:`~fedcore.runner.limits.HostLimits` (read once per server).
- :func:`keep_alive`: the owner's page refreshes its run's heartbeat (nobody else's does); the
  server refreshes it too while any page of the owner is open (:mod:`.presence`, noted by :func:`viewer`).
- :func:`plain` (from :mod:`pages.components.plain`, the one plain-text helper): text from a
  link (or an error quoting it) as escaped, truncated plain text, never markdown: no links,
  images, colours or icons can be smuggled into a warning.
"""
from __future__ import annotations

import logging
import time
from typing import Optional

import streamlit as st

from fedcore.errors import FedcoreError
from fedcore.runner.owners import SignedIn, Viewer, can_control
from fedcore.runner.record import JobRecord

from .plain import flash, flashed, link_warning, plain  # noqa: F401  (host.plain, host.link_warning: the same helpers)
from .server import forget_events, identities, limits, manager, presence  # host.limits: the same cached limits

LOG = logging.getLogger("fedcore.dashboard")
TOUCH_EVERY_S = 5.0
"""The owner's page refreshes the heartbeat at most this often (one store write)."""


IDENTITY_KEY = "host.identity"
"""``st.session_state`` key of this session's anonymous ``(owner, code, checked_at)``."""
RECHECK_S = 2.0
"""How often a session re-checks that its code was not spent by a claim elsewhere."""


def _session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "local"


def _anonymous(recheck: bool = False) -> tuple[str, str]:
    """This session's anonymous ``(owner, code)``: the browser's (:func:`visitor_from_browser`),
    else issued by the server on first use and kept in the session (server-side); re-issued if a
    claim elsewhere spent its code (the page then says its runs moved). The code is re-checked at
    most every :data:`RECHECK_S` (fragments poll), and on every whole-page run (``recheck``): a page
    whose last rerun came within that time of the previous check would otherwise never be told."""
    held = st.session_state.get(IDENTITY_KEY)
    now = time.monotonic()
    try:
        ids = identities()
        if held is not None:
            owner, code, checked = held
            if now - checked < RECHECK_S and not recheck:
                return owner, code
            if ids.valid(owner, code):
                st.session_state[IDENTITY_KEY] = (owner, code, now)
                return owner, code
            st.session_state[MOVED_KEY] = time.monotonic()  # its code was used in another browser
            st.session_state.pop(CLAIMED_KEY, None)
        owner, code = ids.issue()
    except Exception:  # noqa: BLE001  (no registry: this page session alone, no code to keep)
        LOG.exception("anonymous identities unavailable")
        return f"session:{_session_id()}", ""
    st.session_state[IDENTITY_KEY] = (owner, code, now)
    return owner, code


BROWSER_KEY = "host.browser_code"
"""The browser-code component's key: its value is the code this browser keeps (``""``: none yet;
absent until the browser reported)."""
SYNCED_KEY = "host.browser_synced"
MOVED_KEY = "host.moved"
CLAIMED_KEY = "host.claimed"
"""The code this session claimed runs with, until the browser reports it stored (a report of the
browser's earlier code, landing after the claim, made the session that visitor again: the page said
the runs were "yours in this tab" and History listed none)."""
MOVED_SHOWN_S = 60.0
"""How long the page says its runs moved (it reruns at once when the browser stores its new code)."""
_BROWSER = None


def _browser_component():
    global _BROWSER
    if _BROWSER is None:
        import streamlit.components.v1 as components
        from pathlib import Path

        _BROWSER = components.declare_component("browser_key", path=str(Path(__file__).parent / "browser_key"))
    return _BROWSER


def visitor_from_browser() -> None:
    """One browser is one visitor, across reloads and tabs: its "keep my runs" code lives in the
    page origin's localStorage (``browser_key/index.html``: per origin, so a page on another port
    cannot read it, and never sent with a request, unlike a cookie). The session offers its code,
    which a browser with none stores; a browser with another code reports it, and a code the
    server knows makes this session that visitor (nothing is spent). A code that must replace the
    stored one (a claim, or one re-issued after a claim elsewhere spent it) is sent to be stored.

    The browser reports its code once per page (one rerun; :mod:`.press` keeps a click that rerun
    interrupts), and until it has, buttons that start work wait (:func:`visitor_known`). A code
    this session claimed outranks the one the browser held (:data:`CLAIMED_KEY`), which it
    replaces. Called once per script run."""
    reported = st.session_state.get(BROWSER_KEY)
    if reported and reported == st.session_state.get(CLAIMED_KEY):
        del st.session_state[CLAIMED_KEY]  # the browser keeps the claimed code now
    if reported and st.session_state.get(CLAIMED_KEY):
        st.session_state[SYNCED_KEY] = reported  # a claim outranks the browser's earlier code: it is replaced
    elif reported and reported != st.session_state.get(SYNCED_KEY):
        try:
            owner = identities().owner_of(reported)
        except Exception:  # noqa: BLE001  (no registry: the session's own identity)
            owner = None
        if owner is not None:
            st.session_state[IDENTITY_KEY] = (owner, reported, time.monotonic())
        else:  # its code was spent by a claim in another browser (or this server forgot it)
            st.session_state[MOVED_KEY] = time.monotonic()
        st.session_state[SYNCED_KEY] = reported
    _, code = _anonymous(recheck=True)
    replace = code if reported and code and code != reported else ""
    _browser_component()(offer=code, replace=replace, key=BROWSER_KEY, default=None)


def visitor_known() -> bool:
    """Whether this page knows its visitor: signed in, or the browser reported the code it keeps
    (``""``: none it can keep), or no browser is connected to report one (AppTest, bare mode).
    Until then a press that starts work waits (:func:`.press.pressed`): under the fresh identity
    the session was issued, one browser's tabs held several visitors (issue 38 §3)."""
    from .presence import session_alive

    return (st.session_state.get(BROWSER_KEY) is not None or not session_alive(_session_id())
            or signed_in() is not None)


def claim(code: str) -> bool:
    """Take over the runs of a "keep my runs" ``code``: this session becomes their owner,
    the code is spent and a new one issued (shown by :func:`keep_my_runs`)."""
    got = identities().claim((code or "").strip())
    if got is None:
        return False
    st.session_state[IDENTITY_KEY] = (*got, time.monotonic())
    st.session_state[CLAIMED_KEY] = got[1]  # until the browser stores it, its earlier code must not win
    _show_claimed_run(got[0])
    return True


def _show_claimed_run(owner: str) -> None:
    """The Playground shows the claimed owner's newest active run, unless it shows an active run
    already: the claiming page gets the run's controls, Stop included (a page with no run had none)."""
    from fedcore.runner import ACTIVE
    from fedcore.runner.record import RUN

    from .shown import show_run, shown_run

    store = manager().store
    shown = store.get_job(shown_run()) if shown_run() else None
    active = [j for j in store.list_jobs(RUN) if j.owner == owner and j.status in ACTIVE]
    if active and (shown is None or shown.status not in ACTIVE):
        show_run(active[0].id)


def sign_in_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001  (no secrets file at all)
        return False


def signed_in() -> Optional[SignedIn]:
    """The signed-in user from the provider's claims (issuer and subject; the e-mail only when
    verified, :class:`~fedcore.runner.owners.SignedIn`), or None."""
    if not sign_in_configured():
        return None
    info = st.user.to_dict()
    if not info.get("is_logged_in"):
        return None
    try:
        return SignedIn.from_claims(info, limits().email_trust)
    except FedcoreError:
        LOG.warning("sign-in without a subject claim: treated as not signed in")
        return None


def viewer() -> Viewer:
    """Who is looking: ``user:<hash of issuer and subject>`` when signed in, else the anonymous
    ``visitor:<id>`` the server issued to this session (:func:`_anonymous`)."""
    user = signed_in()
    who = user.viewer(limits().admins) if user is not None else Viewer(_anonymous()[0])
    try:
        presence().note(_session_id(), who.owner)  # its jobs live while this session's browser is connected
    except Exception:  # noqa: BLE001  (no store: the page's own polls are all there is)
        LOG.exception("presence unavailable")
    return who


def may_control(record: JobRecord) -> bool:
    return can_control(record, viewer())


def keep_alive(record: JobRecord) -> None:
    """Refresh the job's heartbeat if this page belongs to its owner (throttled)."""
    if record.owner != viewer().owner:
        return
    beats = st.session_state.setdefault("host.beats", {})
    now = time.monotonic()
    every = min(TOUCH_EVERY_S, (record.get("grace_s") or TOUCH_EVERY_S * 8) / 8)
    if now - beats.get(record.id, 0.0) >= every:
        manager().store.touch(record.id)
        beats[record.id] = now


def require_store() -> None:
    """Every page (app.py): a run store that cannot be used is one clear message, never a blank
    page or a traceback (the Playground, Frontier and History all need it)."""
    try:
        manager().store.ping()  # opened at start-up, unusable since (a full disk): the same message
    except Exception as exc:  # noqa: BLE001
        LOG.exception("run store unavailable")
        st.error(f"The run store cannot be used: {plain(exc)}. Nothing can be trained or listed until the "
                 "host fixes it (the folder FEDCORE_STORE names must be writable).", icon=":material/database:")
        st.stop()


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
    """Log in / log out in the sidebar when the host configured sign-in; "Keep my runs"
    for a visitor who is not signed in."""
    user = signed_in()
    if user is None:
        with st.sidebar:
            visitor_from_browser()
        keep_my_runs()
    if not sign_in_configured():
        return
    with st.sidebar:
        if user is not None:
            unverified = "" if user.verified else " (e-mail not verified: no admin rights)"
            st.caption(f"Signed in as {plain(user.email or 'a user without e-mail')}{unverified}")
            st.button("Log out", on_click=st.logout, key="host.logout")
        else:
            st.caption("Sign in so your runs follow you across tabs and visits.")
            st.button("Log in", on_click=st.login, key="host.login")


def _claim_submitted() -> None:
    entered = st.session_state.get("host.claim_code", "")
    flash("host.claim_result", "ok" if claim(entered) else "bad")


def keep_my_runs() -> None:
    """Sidebar: this visitor's "keep my runs" code, and a field to claim runs with a saved one."""
    _, code = _anonymous()
    if not code:
        return
    if time.monotonic() - st.session_state.get(MOVED_KEY, -MOVED_SHOWN_S) < MOVED_SHOWN_S:
        st.sidebar.warning("This browser's runs moved: their code was entered in another browser (or this "
                           "server no longer knows it). This page starts afresh with a new code.",
                           icon=":material/move_item:")
    with st.sidebar.expander("Keep my runs", icon=":material/key:"):
        st.caption("Your runs belong to this browser: a reload or another tab keeps them. To reach them "
                   "from another browser or device, save this code and enter it there: the runs move "
                   "there and you get a new code (the old one stops working).")
        st.code(code, language=None)
        with st.form("host.claim_form", clear_on_submit=True, border=False):
            st.text_input("Claim runs with a saved code", type="password", key="host.claim_code",
                          placeholder="keep-...")
            st.form_submit_button("Claim my runs", on_click=_claim_submitted)
        result = flashed("host.claim_result")
        if result == "ok":
            st.success("The runs of that code are yours in this tab; save your new code above.")
        elif result == "bad":
            st.error("That code is not valid here (it may have been used already).")


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
