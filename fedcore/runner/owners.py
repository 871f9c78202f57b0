"""Who may see and control a run on a shared dashboard.

Every run started from the dashboard records its ``owner``: ``"user:<24 hex>"`` when the
host configured sign-in (Streamlit's ``st.login``), a hash of the provider's issuer and subject
(:class:`SignedIn`: never the e-mail, which a provider may let a user claim unverified), else
``"visitor:<id>"``: an anonymous
identity the server issued to the page's Streamlit session (:class:`Identities`). Nothing
the browser stores or sends names it: the server keeps it in the session, so no other page
(another port of the same host, a script reading cookies) can read or choose it. The
visitor may save its "keep my runs" code and claim the runs later from another page; a
claim moves the identity there and issues a new code (:meth:`Identities.claim`). Runs
started by scripts or the CLI have no owner.

- Only the owner, or a host admin (``admins`` in :class:`~fedcore.runner.limits.HostLimits`: a
  signed-in user whose e-mail is listed *and verified*), may **stop** or **delete** a run; an
  ownerless run only an admin.
- Runs are **private**: lists (History, Compare) show a visitor's own runs. With host
  setting ``visibility = "public"`` a visitor may also list everybody's runs; admins always may.
- A run's **link** (``?run=<id>``) shows it to whoever has the link, read-only.

>>> me, other = Viewer("session:a"), Viewer("session:b")
>>> run = JobRecord("r1", owner="session:a")
>>> can_control(run, me), can_control(run, other), can_control(run, Viewer("user:x", admin=True))
(True, False, True)
>>> listed(run, other, "mine", "public"), listed(run, other, "everyone", "public")
(False, True)
"""
from __future__ import annotations

import contextlib
import hashlib
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional

from ..errors import FedcoreError
from .record import JobRecord


@dataclass(frozen=True)
class Viewer:
    """The person looking at a page: an owner key and whether the host made them admin."""

    owner: str
    admin: bool = False



@dataclass(frozen=True)
class SignedIn:
    """A signed-in user, from the identity provider's claims (OpenID Connect Core 1.0, §5.1).

    ``owner`` rests on the issuer and the subject, which the provider guarantees unique and
    stable; the e-mail counts (for ``admins``) only when ``email_verified`` is true, or, with the
    host's ``email_trust = "claimed"``, when the provider sends no such claim at all. A provider
    that says ``email_verified: false`` is never trusted.

    >>> alice = SignedIn.from_claims({"iss": "https://id.example", "sub": "42", "email": "T@x.org",
    ...                                "email_verified": False})
    >>> alice.email, alice.verified, alice.owner.startswith("user:")
    ('t@x.org', False, True)
    >>> alice.viewer(["t@x.org"]).admin
    False
    >>> SignedIn.from_claims({"iss": "i", "sub": "42", "email": "t@x.org", "email_verified": True}).viewer(["t@x.org"]).admin
    True
    """

    owner: str
    email: Optional[str]
    verified: bool

    @classmethod
    def from_claims(cls, claims, email_trust: str = "verified") -> "SignedIn":
        sub = str(claims.get("sub") or "").strip()
        if not sub:
            raise FedcoreError("sign-in: the identity provider sent no subject ('sub' claim)")
        iss = str(claims.get("iss") or "")
        email = str(claims.get("email") or "").strip().lower() or None
        said = claims.get("email_verified")
        verified = email is not None and (said is True or str(said).lower() == "true"
                                          or (said is None and email_trust == "claimed"))
        return cls("user:" + hashlib.sha256(f"{iss}\n{sub}".encode()).hexdigest()[:24], email, verified)

    def viewer(self, admins: Iterable[str] = ()) -> Viewer:
        """The viewer this user is: an admin only with a trusted e-mail listed in ``admins``."""
        return Viewer(self.owner, self.verified and self.email in {a.strip().lower() for a in admins})


class NotYourRun(FedcoreError):
    """Somebody other than the owner (or an admin) tried to stop or delete a run."""


def require_control(record: JobRecord, viewer: Viewer, action: str) -> None:
    """Raise :class:`NotYourRun` unless ``viewer`` may ``action`` ("stop", "delete") the job ``record``."""
    if not can_control(record, viewer):
        raise NotYourRun(f"only the person who started run {record.id} (or a host admin) can {action} it")


def can_control(record: JobRecord, viewer: Viewer) -> bool:
    """Whether ``viewer`` may stop or delete the job of ``record``."""
    return viewer.admin or (record.owner is not None and record.owner == viewer.owner)


def may_list_everyone(viewer: Viewer, visibility: str) -> bool:
    return viewer.admin or visibility == "public"


def listed(record: JobRecord, viewer: Viewer, scope: str, visibility: str) -> bool:
    """Whether job ``record`` appears in ``viewer``'s lists for ``scope`` (``mine`` / ``everyone``)."""
    if scope == "everyone" and may_list_everyone(viewer, visibility):
        return True
    return record.owner == viewer.owner


def describe_owner(record: JobRecord, viewer: Viewer) -> str:
    """``"you"``, ``"another visitor"`` or ``"a script"`` (never another visitor's id)."""
    owner = record.owner
    if owner is None:
        return "a script"
    if owner == viewer.owner:
        return "you"
    return "a signed-in user" if viewer.admin and owner.startswith("user:") else "another visitor"


CODE_PREFIX = "keep-"
"""A "keep my runs" code: ``keep-`` and 32 random URL-safe characters (192 bits)."""


def _digest(code: str) -> str:
    return hashlib.sha256(b"fedcore-claim:" + code.strip().encode()).hexdigest()


class Identities:
    """Anonymous owners issued by the server, and the codes that claim them.

    :meth:`issue` returns a new ``(owner, code)``: ``owner`` (``visitor:<24 hex>``, random,
    unrelated to the code) is what runs record; ``code`` is the secret the page keeps
    server-side (``st.session_state``) and shows its visitor once asked, to save.
    Only a SHA-256 of the code is stored (``<store>/owners.db``, a small SQLite file), one
    live code per owner:

    - :meth:`valid` tells a session whether its code is still the owner's live one;
    - :meth:`claim` takes a code, returns its owner with a **new** code and spends the old
      one, so the identity moves to the claiming page: the page that held it before (or
      whoever was sent a code to use) is an anonymous newcomer from then on. A code someone
      else saw, or fixed on you, is spent the moment either of you uses it.

    Codes are never chosen by a client: an unknown code claims nothing.

    >>> import tempfile
    >>> ids = Identities(tempfile.mkdtemp() + "/owners.db")
    >>> owner, code = ids.issue()
    >>> ids.valid(owner, code), ids.claim("keep-guessed") is None
    (True, True)
    >>> ids.owner_of(code) == owner, ids.owner_of("keep-guessed")
    (True, None)
    >>> same, new_code = ids.claim(code)
    >>> same == owner, ids.valid(owner, code), ids.valid(owner, new_code)
    (True, False, True)
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()  # one connection, shared by the server's script threads
        self._conn: Optional[sqlite3.Connection] = None
        with self._db():
            pass

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The connection, held by one thread at a time."""
        with self._lock:
            if self._conn is None or not self.path.exists():  # first use, or the store folder was deleted
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS codes (digest TEXT PRIMARY KEY, owner TEXT UNIQUE NOT NULL, "
                             "issued REAL NOT NULL)")
                self._conn = conn
            yield self._conn

    def issue(self) -> tuple[str, str]:
        """A new anonymous owner and its code."""
        owner = "visitor:" + secrets.token_hex(12)
        code = CODE_PREFIX + secrets.token_urlsafe(24)
        with self._db() as db:
            db.execute("INSERT INTO codes VALUES (?, ?, ?)", (_digest(code), owner, time.time()))
        return owner, code

    def owner_of(self, code: str) -> Optional[str]:
        """The owner whose live code ``code`` is (nothing is spent), else None: a browser that kept
        its code (a reload, a second tab) is the same visitor."""
        if not isinstance(code, str) or not code.startswith(CODE_PREFIX) or len(code) > 200:
            return None
        with self._db() as db:
            row = db.execute("SELECT owner FROM codes WHERE digest = ?", (_digest(code),)).fetchone()
        return row[0] if row else None

    def valid(self, owner: str, code: str) -> bool:
        """Whether ``code`` is ``owner``'s live code (not spent by a claim)."""
        return owner is not None and self.owner_of(code) == owner

    def claim(self, code: str) -> Optional[tuple[str, str]]:
        """``(owner, new_code)`` for a live ``code`` (which is spent), else None."""
        if not isinstance(code, str) or not code.strip().startswith(CODE_PREFIX) or len(code) > 200:
            return None
        new_code = CODE_PREFIX + secrets.token_urlsafe(24)
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT owner FROM codes WHERE digest = ?", (_digest(code),)).fetchone()
                if row is not None:
                    db.execute("UPDATE codes SET digest = ?, issued = ? WHERE owner = ?",
                               (_digest(new_code), time.time(), row[0]))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        return (row[0], new_code) if row is not None else None
