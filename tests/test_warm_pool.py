"""Warm workers kept up to the slot limit and reused run after run (issue 54 §6): no run waits for a fresh
interpreter once the pool is full, and a reused worker gives a seeded run the same numbers as a fresh one."""
from __future__ import annotations

from dashboard_server import wait_until  # scripts/ (tests/conftest.py puts it on the path)
from fedcore.resolve import preset_config
from fedcore.runner import Jobs

DEMO = preset_config("demo").replace(rounds=3)


def test_one_warm_worker_trains_runs_one_after_another_with_the_numbers_of_a_fresh_one(tmp_path):
    fresh = Jobs(tmp_path / "fresh", warm=False, max_running=1)
    try:
        alone = fresh.wait(fresh.start(DEMO.replace(seed=5)), timeout=120)
    finally:
        fresh.close()
    m = Jobs(tmp_path / "warm", warm=True, max_running=1)
    try:
        assert m.warm_ready(timeout=120)
        records = []
        for seed in (4, 5, 6):   # each handed over once the worker is waiting again
            wait_until(lambda: m._warm.state() == "ready", 60, "the worker did not come back to the pool")
            records.append(m.wait(m.start(DEMO.replace(seed=seed)), timeout=120))
        assert [r["status"] for r in records] == ["finished"] * 3
        assert len({r["pid"] for r in records}) == 1, "each run started a fresh worker"
        assert records[1]["final_accuracy"] == alone["final_accuracy"]   # seed 5 in a reused worker
        assert alone["pid"] != records[1]["pid"]
    finally:
        m.close()


def test_the_pool_grows_to_the_slot_limit_and_hands_each_of_a_burst_to_a_warm_worker(tmp_path):
    m = Jobs(tmp_path, warm=True, max_running=2)
    try:
        wait_until(lambda: len(m._warm.pool) == 2 and m._warm.state() == "ready"
                   and all(w.ready.is_set() for w in m._warm.pool), 120, "the pool did not fill")
        warm_pids = {w.process.pid for w in m._warm.pool}
        ids = [m.start(DEMO.replace(seed=s)) for s in range(6)]
        records = [m.wait(i, timeout=240) for i in ids]
        assert [r["status"] for r in records] == ["finished"] * 6
        assert {r["pid"] for r in records} <= warm_pids
    finally:
        m.close()


def test_a_warm_worker_has_the_exact_accountants_library_loaded_before_its_first_run():
    """A run's PLD headline at its end (dp-accounting, scipy.signal and scipy.stats under it: about
    0.6 CPU-s to import) costs a run in a warm worker nothing to load."""
    import subprocess
    import sys

    probe = ("import sys; from fedcore.runner.worker import warm_up; "
             "assert 'dp_accounting' not in sys.modules; warm_up(); "
             "print(all(m in sys.modules for m in ('dp_accounting.pld.pld_pmf', 'scipy.stats', 'scipy.signal')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)  # a hang only
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "True"
