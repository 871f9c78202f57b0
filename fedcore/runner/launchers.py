"""How a job trains, as the job manager sees it: one small interface, whatever runs it.

A :class:`Launcher` answers three things: is the job still going (:meth:`~Launcher.alive`),
end it soon keeping what it made (:meth:`~Launcher.request_stop`), end it now
(:meth:`~Launcher.terminate`). :class:`ProcessLauncher` wraps a worker process started by
:func:`spawn` (runs, local sweeps, audits); a Ray sweep is a thread that talks to the cluster
(:mod:`fedcore.distributed.jobs`) and needs no process to pretend to be. A job reports its
status, progress and end through its record in the run store, never through its launcher.

A queued job names how it is launched (``entry``, ``"module:function"``); the manager calls
``function(store, record)`` (its run store, the job's record) when its turn comes, so a queued
job survives a restart: :func:`load_entry`.
"""
from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import threading
from contextlib import contextmanager
from typing import Callable, Optional, Protocol


class Launcher(Protocol):
    """A job in progress (see the module doc); ``pid`` is its process id, None when it has none."""

    pid: Optional[int]
    watches_lifetime: bool
    """Its worker stops itself when its owner left or its time is up (a run's); else the manager does."""

    def alive(self) -> bool: ...

    def request_stop(self) -> None: ...

    def terminate(self) -> None: ...


class ProcessLauncher:
    """A job's worker process. ``stop`` asks it to end soon (it reads the store's stop flag),
    None: the job cannot stop early, :meth:`request_stop` terminates it. ``keep``: what must
    live as long as the job (a warm worker's job queue); ``done``: an event its process sets when the job
    ended and it lives on (a warm worker's, idle again)."""

    def __init__(self, process: multiprocessing.Process, stop: Optional[Callable[[], None]] = None,
                 keep: object = None, watches_lifetime: bool = False, done: object = None):
        self.process, self.stop, self.keep, self.done = process, stop, keep, done
        self.pid, self.watches_lifetime = process.pid, watches_lifetime

    def alive(self) -> bool:
        """The process lives and (a warm worker's, ``done``: its idle event) has not ended the job."""
        return self.process.is_alive() and not (self.done is not None and self.done.is_set())

    def request_stop(self) -> None:
        (self.stop or self.terminate)()

    def terminate(self) -> None:
        """SIGTERM, then SIGKILL when it is still there 2 s later."""
        self.process.terminate()
        self.process.join(2.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2.0)

    def why_ended(self) -> str:
        """Why the process ended without recording an end of its own (its exit code, read)."""
        self.process.join(0)
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the worker process was killed by {name} (exit code {code})"
        return f"the worker process exited with code {code} without finishing the run"


class PidLauncher:
    """A worker that a previous manager started and that still lives (taken up after a restart)."""

    def __init__(self, pid: int, stop: Callable[[], None], watches_lifetime: bool = False):
        self.pid, self.request_stop, self.watches_lifetime = int(pid), stop, watches_lifetime

    def alive(self) -> bool:
        return pid_alive(self.pid)

    def terminate(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGTERM)


def load_entry(entry: str) -> Callable[..., Launcher]:
    """The launch function a job record names as ``"module:function"``."""
    module, _, name = entry.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise LookupError(f"the job's launcher {entry!r} cannot be loaded ({exc})") from None


_SPAWNING = threading.local()
_PATCH_LOCK = threading.Lock()
_MAIN_KEYS = ("init_main_from_name", "init_main_from_path")


def _preparation_data_without_main(original):
    """``multiprocessing.spawn.get_preparation_data`` that leaves out the parent's main
    module while this thread is inside :func:`spawn_without_main_module`."""
    def get_preparation_data(name):
        data = original(name)
        if getattr(_SPAWNING, "depth", 0):
            for key in _MAIN_KEYS:
                data.pop(key, None)
        return data

    get_preparation_data.fedcore_original = original
    return get_preparation_data


@contextmanager
def spawn_without_main_module():
    """Processes spawned in this block (by this thread) do not re-run the caller's ``__main__``.

    Under Streamlit ``__main__`` is the page script (every script run installs a fresh one, in
    whichever session's thread runs), so a spawn child would run the whole dashboard before its
    job. The preparation data multiprocessing sends to the child leaves the main module out,
    whatever ``sys.modules["__main__"]`` is by then (hiding ``__file__`` was not enough under load).
    """
    from multiprocessing import spawn

    with _PATCH_LOCK:
        if not hasattr(spawn.get_preparation_data, "fedcore_original"):
            spawn.get_preparation_data = _preparation_data_without_main(spawn.get_preparation_data)
    _SPAWNING.depth = getattr(_SPAWNING, "depth", 0) + 1
    try:
        yield
    finally:
        _SPAWNING.depth -= 1


def spawn(target: Callable, *args, name: str) -> multiprocessing.Process:
    """Start ``target(*args)`` in a new daemon process of the "spawn" context (no forked torch
    state, the same on every OS) that does not re-run the caller's ``__main__``
    (:func:`spawn_without_main_module`): every job's process starts here."""
    proc = multiprocessing.get_context("spawn").Process(target=target, args=args, name=name, daemon=True)
    with spawn_without_main_module():
        proc.start()
    return proc


def pid_alive(pid) -> bool:
    """True if process ``pid`` (an int or its string) exists; False for None, 0 or garbage."""
    try:
        if not pid:
            return False
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    try:  # a zombie (ended, not yet reaped by its parent) has ended
        with open(f"/proc/{int(pid)}/stat", encoding="ascii") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True
