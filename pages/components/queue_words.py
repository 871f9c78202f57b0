"""Where a queued job stands, in one line: what the run, audit and membership views all say while they wait;
and the panel of a result job (an audit, a membership attack) until its result is there."""
from __future__ import annotations

import streamlit as st


def queue_text(info) -> str:
    """One line of :meth:`Jobs.queue_info` (any kind of job)."""
    if not info:
        return "Handing it to a worker process…"
    eta = info["eta_s"]
    when = "start time unknown" if eta is None else f"starts in about {_duration(eta)}"
    return (f"Queued: position {info['position']} of {info['waiting']} · {when} · "
            f"{info['running']} of {info['slots']} worker slots busy. This page stays live while it waits.")


def result_job_state(job_id: str, done, key: str, busy: str, stop: str, stopped: str, show, stranger: str = "") -> None:
    """A result job's panel (:class:`fedcore.runner.result_jobs.ResultJob`) while it polls: where job
    ``job_id`` stands (``busy`` once a worker has it; the ``stop`` button for whoever may stop it, else the
    ``stranger`` caption), ``stopped`` when it ended without a result, else ``show(done)``."""
    from fedcore.runner.owners import can_control

    from .host import keep_alive, manager, stop_run, viewer

    job = manager().job(job_id)
    if done is None and job is not None:
        keep_alive(job)  # its owner's page keeps it going; closed, it stops after the grace period
        queue = manager().queue_info(job_id)
        st.info(queue_text(queue) if queue else busy, icon=":material/hourglass_top:")
        if can_control(job, viewer()):
            st.button(stop, key=f"{key}-stop", icon=":material/stop:", on_click=stop_run, args=(job_id,))
        elif stranger:
            st.caption(stranger)
    elif done is None:
        st.info(stopped, icon=":material/stop_circle:")
    else:
        show(done)


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds} s" if seconds < 90 else f"{round(seconds / 60)} min"
