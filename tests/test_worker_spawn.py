"""Spawned workers never re-run the caller's main script, even while Streamlit swaps it.

Every Streamlit script run installs a fresh ``sys.modules["__main__"]`` whose ``__file__``
is the page script, in whichever session's thread runs it. A spawn child imports the
parent's main module first, so a worker started meanwhile ran the whole dashboard in bare
mode before its job (seen as "missing ScriptRunContext" in the server log of the load test,
whose four runs then never started). ``fedcore.runner.launchers.spawn_without_main_module`` keeps
the main module out of what the child is told to import.
"""
from __future__ import annotations

import multiprocessing
import sys
import threading
import time
import types

from fedcore.runner.launchers import spawn_without_main_module

SPAWNS = 10


def _swapping_main(script: str, stop: threading.Event) -> None:
    """What concurrent Streamlit script runs do to ``__main__``."""
    while not stop.is_set():
        module = types.ModuleType("__main__")
        module.__file__ = script
        sys.modules["__main__"] = module
        time.sleep(0.0005)


def test_spawned_workers_never_run_the_page_script_while_streamlit_swaps_main(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(f"import os\nopen({str(tmp_path)!r} + f'/ran-{{os.getpid()}}', 'w').close()\n")
    ctx = multiprocessing.get_context("spawn")
    original, stop = sys.modules["__main__"], threading.Event()
    swapper = threading.Thread(target=_swapping_main, args=(str(page), stop), daemon=True)
    swapper.start()
    try:
        control = ctx.Process(target=time.sleep, args=(0,), daemon=True)
        control.start()  # unguarded: the child imports the swapped-in page script
        control.join(60)
        assert len(list(tmp_path.glob("ran-*"))) == 1, "the swapped __main__ did not reach an unguarded child"
        workers = []
        for _ in range(SPAWNS):
            proc = ctx.Process(target=time.sleep, args=(0,), name="fedcore-test-worker", daemon=True)
            with spawn_without_main_module():
                proc.start()
            workers.append(proc)
        for proc in workers:
            proc.join(60)
    finally:
        stop.set()
        swapper.join(5)
        sys.modules["__main__"] = original
    assert [p.exitcode for p in workers] == [0] * SPAWNS
    assert len(list(tmp_path.glob("ran-*"))) == 1  # only the control ran the page script


def test_the_guard_is_per_thread_and_leaves_other_spawns_alone(monkeypatch):
    from multiprocessing import spawn

    main = types.ModuleType("__main__")  # a main script, as under Streamlit (pytest-xdist's worker has none)
    main.__file__ = __file__
    monkeypatch.setitem(sys.modules, "__main__", main)
    with spawn_without_main_module():
        inside = spawn.get_preparation_data("x")
        seen = {}
        other = threading.Thread(target=lambda: seen.update(spawn.get_preparation_data("y")))
        other.start()
        other.join()
    after = spawn.get_preparation_data("z")
    main_keys = {"init_main_from_name", "init_main_from_path"}
    assert not main_keys & set(inside)
    assert main_keys & set(seen)  # another thread, outside the guard: its main module stays
    assert main_keys & set(after)
