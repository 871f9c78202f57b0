"""What one server shares between all its sessions (``st.cache_resource``): the host's
limits, the :class:`~fedcore.runner.Jobs` and the event cache. :mod:`.host` (who may
do what) and :mod:`.state` (what a session remembers) both build on it; it imports neither.
"""
from __future__ import annotations

import streamlit as st

from fedcore.events import RunState
from fedcore.runner import EventCache, Jobs, default_store_dir
from fedcore.runner.limits import HostLimits, dashboard_limits
from fedcore.runner.owners import Identities

from .presence import Presence, session_alive


@st.cache_resource(show_spinner=False)
def limits() -> HostLimits:
    """The host's limits: defaults <- ``$FEDCORE_LIMITS`` file <- ``FEDCORE_<NAME>`` variables."""
    return dashboard_limits()


@st.cache_resource(show_spinner=False)
def job_manager(store_dir: str) -> Jobs:
    """The one manager of ``store_dir``: the host's limits, the store checked (and replaced
    if damaged) at start-up."""
    return Jobs(store_dir, limits=limits(), check_store=True)


@st.cache_resource(show_spinner=False)
def _presence(store_dir: str) -> Presence:
    return Presence(job_manager(store_dir).keep_owners_alive, session_alive).start()


def presence() -> Presence:
    """The server's record of which visitors have a page open (:mod:`.presence`)."""
    return _presence(str(default_store_dir()))


@st.cache_resource(show_spinner=False)
def _event_cache(store_dir: str) -> EventCache:
    return EventCache(job_manager(store_dir).store)


@st.cache_resource(show_spinner=False)
def _identities(store_dir: str) -> Identities:
    return Identities(f"{store_dir}/owners.db")


def identities() -> Identities:
    """The server's anonymous owners and their "keep my runs" codes (``<store>/owners.db``)."""
    return _identities(str(default_store_dir()))


def manager() -> Jobs:
    """The server's job manager (its store folder: ``$FEDCORE_STORE`` or the user cache)."""
    return job_manager(str(default_store_dir()))


def run(run_id: str) -> RunState:
    """``run_id``'s events so far, folded (read incrementally; the heartbeat: :func:`host.keep_alive`)."""
    return _event_cache(str(default_store_dir())).run(run_id)


def forget_events(run_ids) -> None:
    _event_cache(str(default_store_dir())).forget(run_ids)
