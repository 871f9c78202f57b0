"""Where a queued job stands, in one line: what the run, audit and membership views all say while they wait."""
from __future__ import annotations


def queue_text(info) -> str:
    """One line of :meth:`Jobs.queue_info` (any kind of job)."""
    if not info:
        return "Handing it to a worker process…"
    eta = info["eta_s"]
    when = "start time unknown" if eta is None else f"starts in about {_duration(eta)}"
    return (f"Queued: position {info['position']} of {info['waiting']} · {when} · "
            f"{info['running']} of {info['slots']} worker slots busy. This page stays live while it waits.")


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds} s" if seconds < 90 else f"{round(seconds / 60)} min"
