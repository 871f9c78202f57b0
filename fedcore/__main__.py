"""``python -m fedcore``: see :mod:`fedcore.cli`.

When the command is done and no other non-daemon thread is alive (daemon threads, such as the
curve workers' readers, :mod:`fedcore.accounting.curve_workers`, never hold a process), it leaves with
``os._exit`` after flushing the standard streams and running the ``atexit`` handlers:
this skips the interpreter's teardown of the loaded modules, which takes 0.6-0.9 s once
torch is imported (docs/benchmarks.md), a quarter of a short run's wall time. Every file
the commands write is closed by then. Not under a profiler or a tracer (``python -m cProfile -o
out.prof -m fedcore ...``, coverage): they write their results at the interpreter's exit.
"""
import atexit
import os
import sys
import threading

from .cli import main


def leave(code: int) -> None:
    """End the process with ``code``: at once (:func:`os._exit`, the ``atexit`` handlers run first) when
    nothing else may still need the interpreter, else through the interpreter's own exit."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if not others and sys.getprofile() is None and sys.gettrace() is None:
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":      # not in a process spawned from this one (its __mp_main__)
    leave(main())
