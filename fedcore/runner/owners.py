"""Who may see and control a run on a shared dashboard.

Every run started from the dashboard records its ``owner``: ``"user:<e-mail>"`` when the
host configured sign-in (Streamlit's ``st.login``), else ``"browser:<key>"``, the browser
session that pressed Run (a hash of the browser's own session cookie, so a reload or a
reconnect keeps it; ``"session:<id>"``, one page's connection, where no cookie is set).
Runs started by scripts or the CLI have no owner.

- Only the owner, or a host admin (``admins`` in :class:`~fedcore.runner.limits.HostLimits`),
  may **stop** or **delete** a run; an ownerless run only an admin.
- Runs are **private**: lists (History, Compare) show a visitor's own runs. With host
  setting ``visibility = "public"`` a visitor may also list everybody's runs; admins always may.
- A run's **link** (``?run=<id>``) shows it to whoever has the link, read-only.

>>> me, other = Viewer("session:a"), Viewer("session:b")
>>> run = {"id": "r1", "owner": "session:a"}
>>> can_control(run, me), can_control(run, other), can_control(run, Viewer("user:x", admin=True))
(True, False, True)
>>> listed(run, other, "mine", "public"), listed(run, other, "everyone", "public")
(False, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from ..errors import FedcoreError

SCOPES = ("mine", "everyone")


@dataclass(frozen=True)
class Viewer:
    """The person looking at a page: an owner key and whether the host made them admin."""

    owner: str
    admin: bool = False

    @classmethod
    def from_identity(cls, email: Optional[str], session_id: str, admins: Iterable[str] = (),
                      kind: str = "session") -> "Viewer":
        """The signed-in user when there is one, else the browser (``kind="browser"``) or
        page session (``kind="session"``) with key ``session_id``."""
        if email:
            return cls(f"user:{email.strip().lower()}", email.strip().lower() in {a.lower() for a in admins})
        return cls(f"{kind}:{session_id}")


class NotYourRun(FedcoreError):
    """Somebody other than the owner (or an admin) tried to stop or delete a run."""


def require_control(record: dict, viewer: Viewer, action: str) -> None:
    """Raise :class:`NotYourRun` unless ``viewer`` may ``action`` ("stop", "delete") the run."""
    if not can_control(record, viewer):
        raise NotYourRun(f"only the person who started run {record.get('id')} (or a host admin) can {action} it")


def can_control(record: dict, viewer: Viewer) -> bool:
    """Whether ``viewer`` may stop or delete the run of ``record``."""
    return viewer.admin or (record.get("owner") is not None and record.get("owner") == viewer.owner)


def may_list_everyone(viewer: Viewer, visibility: str) -> bool:
    return viewer.admin or visibility == "public"


def listed(record: dict, viewer: Viewer, scope: str, visibility: str) -> bool:
    """Whether ``record`` appears in ``viewer``'s lists for ``scope`` (``mine`` / ``everyone``)."""
    if scope == "everyone" and may_list_everyone(viewer, visibility):
        return True
    return record.get("owner") == viewer.owner


def describe_owner(record: dict, viewer: Viewer) -> str:
    """``"you"``, ``"another visitor"`` or ``"a script"`` (never another visitor's id)."""
    owner = record.get("owner")
    if owner is None:
        return "a script"
    if owner == viewer.owner:
        return "you"
    return owner.removeprefix("user:") if viewer.admin and owner.startswith("user:") else "another visitor"
