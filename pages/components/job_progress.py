"""One line for a background job of the server's one job manager: its place in the queue, or a
progress bar of its runs, and Stop for its owner (or an admin) only; anyone else watches it
read-only, told in neutral words who started it. Drawing only: the job's record comes from
:mod:`fedcore.runner` (a :class:`~fedcore.runner.record.JobRecord`: its ``status``, ``total``,
``owner``, and in its fields ``phase`` and ``queue``)."""
from __future__ import annotations

import streamlit as st

from fedcore.runner.record import JobRecord

from .press import pressed


def job_line(job_id: str, status: JobRecord, *, done: int, total: int, noun: str, doing: str = "Training",
             stop_key: str) -> None:
    """Queued: :func:`~pages.components.live.queue_text`; training: ``"<doing>: <done> of <total>
    runs done"`` (or ``"Starting: <phase>"``). Stop (``stop_key``) asks the manager to stop
    ``job_id`` for its owner or an admin; others read ``"Another visitor's <noun>: you can watch
    it; only they can stop it."``"""
    from fedcore.runner.owners import can_control, describe_owner

    from .host import stop_run, viewer
    from .live import queue_text

    me = viewer()
    left, right = st.columns([4, 1], vertical_alignment="center")
    total = status.total or total
    if status.status == "queued":
        left.info(queue_text(status.get("queue")), icon=":material/hourglass_top:")
    else:
        phase = status.get("phase")
        line = f"Starting: {phase}" if phase else f"{doing}: {done} of {total} runs done"
        left.progress(min(1.0, done / max(1, total)), text=line)
    if can_control(status, me):
        if pressed(right, "Stop", icon=":material/stop:", key=stop_key):
            stop_run(job_id)
    else:
        who = describe_owner(status, me)
        right.caption(f"{'Another visitor' if who == 'another visitor' else who.capitalize()}'s {noun}: "
                      "you can watch it; only they can stop it.")
