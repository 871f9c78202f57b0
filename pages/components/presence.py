"""Presence per visitor, by the server's own clock (issue 38 §2).

A job of a visitor keeps training while any page of that visitor is open: every
:data:`TICK_S` a thread of the server refreshes the heartbeat of every queued or training job
whose owner has a Streamlit session whose browser is still connected
(:meth:`~fedcore.runner.Jobs.keep_owners_alive`). A page's own polls (:func:`.host.keep_alive`)
still refresh it too, but no longer alone: on a starved server a script run can take longer than
the grace period, and a late poll was read as a departed owner (a run stopped 137 s after its
start with its page open). A closed tab's session disconnects at once, so its owner's jobs stop
after the grace period, as before.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Optional

TICK_S = 2.0
"""How often the server refreshes the heartbeats of the visitors with a page open."""


class Presence:
    """Who has a page open: Streamlit session id -> its visitor (:meth:`note`, on every script run);
    :meth:`tick` touches the jobs of the visitors whose sessions are ``alive``."""

    def __init__(self, keep_alive: Callable[[set], object], alive: Callable[[str], bool]):
        self._keep_alive, self._alive = keep_alive, alive
        self._owner: dict[str, str] = {}
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def note(self, session_id: str, owner: Optional[str]) -> None:
        """Session ``session_id`` belongs to ``owner`` now (a claim or a sign-in may change it)."""
        if owner:
            with self._lock:
                self._owner[session_id] = owner

    def owners(self) -> set[str]:
        """The visitors with a connected session (sessions that disconnected are forgotten)."""
        with self._lock:
            gone = [s for s in self._owner if not self._alive(s)]
            for s in gone:
                del self._owner[s]
            return set(self._owner.values())

    def tick(self) -> None:
        owners = self.owners()
        if owners:
            self._keep_alive(owners)

    def start(self, every: float = TICK_S) -> "Presence":
        """Tick every ``every`` s in a daemon thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, args=(every,), name="fedcore-presence", daemon=True)
            self._thread.start()
        return self

    def _loop(self, every: float) -> None:
        while True:
            time.sleep(every)
            with contextlib.suppress(Exception):   # a store hiccup must not end presence for the server
                self.tick()


def session_alive(session_id: str) -> bool:
    """Whether the browser of Streamlit session ``session_id`` is connected (False without a
    Streamlit server, e.g. AppTest: its pages' own polls keep their jobs alive)."""
    from streamlit.runtime import Runtime

    return Runtime.exists() and Runtime.instance().is_active_session(session_id) is True  # AppTest: a mock
