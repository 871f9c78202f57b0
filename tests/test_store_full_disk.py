"""A store is moved aside only when SQLite calls it damaged, never for a full disk; and whatever the
start-up check says, every ended job whose archive the database lacks comes back, with a banner.

The full disk is a file-size limit (``RLIMIT_FSIZE``, what ``ulimit -f`` sets) below the size of
``cache.db``, in a child process: every write that grows a file fails there as on a full disk."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fedcore.events import RunFinished, RunStarted
from fedcore.runner import Jobs
from fedcore.runner.store import CacheKey, JobStore, damaged, unusable

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"sweep:k1": ("sweep", "finished"), "audit:k2": ("audit", "failed"),
         "reproduction:k3": ("reproduction", "stopped")}


def _ended_jobs(folder: Path) -> list[str]:
    """Two runs that ended (finished, stopped), a sweep, an audit and a reproduction; their ids."""
    store = JobStore(folder)
    ids = []
    for k, status in enumerate(("finished", "stopped")):
        run = store.create_run({"rounds": 2, "seed": k, "pad": "x" * 4000}, f"h{k}", label=f"run {k}")
        store.append_event(run["id"], RunStarted({}, f"h{k}", "cpu", 10, [5, 5], [[5], [5]], 1, [1.0], [1e-5]))
        store.append_event(run["id"], RunFinished(status, 1, 1.0, 0.5))
        ids.append(run["id"])
    for job_id, (kind, status) in KINDS.items():
        store.create_job(job_id, kind, label=kind, entry="x:y", done=1, total=3)
        store.update_job(job_id, status=status)
    store.create_run({"rounds": 2}, "queued")  # not ended: never archived
    store.close()
    return ids + list(KINDS)


def _limited(code: str, limit: int) -> subprocess.CompletedProcess:
    """Run ``code`` in a child whose files cannot grow past ``limit`` bytes (a full disk)."""
    def full_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          preexec_fn=full_disk, timeout=240)


def test_a_write_failure_is_not_damage():
    import sqlite3

    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    malformed = sqlite3.DatabaseError("database disk image is malformed")
    malformed.sqlite_errorcode = sqlite3.SQLITE_CORRUPT
    assert not damaged(full) and damaged(malformed)
    assert "the disk is full: nothing new can be saved; nothing is lost" in unusable(full)
    assert not damaged(OSError(28, "No space left on device"))
    assert unusable(OSError(28, "No space left on device")).startswith("the disk is full")


def test_a_full_disk_never_moves_the_store_aside_and_loses_no_job(tmp_path):
    folder = tmp_path / "runs"
    ended = _ended_jobs(folder)
    db = folder / "cache.db"
    inode = db.stat().st_ino
    # three page loads of the dashboard (each starts the store checked) while the disk is full
    loads = """
import json, sys
from streamlit.testing.v1 import AppTest
seen = []
for page in ("pages/history.py", "pages/compare.py", None):
    at = AppTest.from_file("app.py", default_timeout=60)
    if page:
        at.switch_page(page)
    at.run()
    seen.append([str(e.value) for e in at.error] + [str(x) for x in at.exception])
print(json.dumps(seen))
"""
    env_code = f"import os; os.environ['FEDCORE_STORE'] = {str(folder)!r}\n" + loads
    done = _limited(env_code, db.stat().st_size // 2)
    assert done.returncode == 0, done.stderr[-2000:]
    pages = json.loads(done.stdout.strip().splitlines()[-1])
    for errors in pages:
        text = " ".join(errors)
        assert "The run store cannot be used" in text and "the disk is full" in text and "nothing is lost" in text
        assert str(tmp_path) not in text
    assert db.stat().st_ino == inode and not list(folder.glob("cache.db.damaged-*"))  # never renamed
    # the disk freed, the server restarted: every ended job is listed, nothing to report
    manager = Jobs(folder, check_store=True, warm=False)
    try:
        assert {j.id for j in manager.store.list_jobs() if j.status in ("finished", "stopped", "failed")} == set(ended)
        assert manager.store.problem is None
    finally:
        manager.close()


def test_a_disk_that_fills_while_the_server_runs_is_a_banner_and_passes(tmp_path):
    folder = tmp_path / "runs"
    ended = _ended_jobs(folder)
    db = folder / "cache.db"
    inode = db.stat().st_ino
    # one server (one process: its cached store) whose disk fills between page loads, then is freed
    code = f"""
import json, os, resource
os.environ["FEDCORE_STORE"] = {str(folder)!r}
from streamlit.testing.v1 import AppTest
def load(page):
    at = AppTest.from_file("app.py", default_timeout=60)
    if page:
        at.switch_page(page)
    at.run()
    return " ".join([str(e.value) for e in at.error] + [str(x.value) for x in at.exception])
seen = [load("pages/history.py")]
hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
resource.setrlimit(resource.RLIMIT_FSIZE, ({db.stat().st_size // 2}, hard))
seen += [load(page) for page in ("pages/history.py", None, "pages/compare.py")]
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
seen.append(load("pages/history.py"))
print(json.dumps(seen))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    before, *full, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == "" and after == ""  # the disk freed: the same server goes on, no restart needed
    for text in full:
        assert "The run store cannot be used" in text and "the disk is full" in text and "nothing is lost" in text
        assert "redacted" not in text and str(tmp_path) not in text  # a banner, never a crashed page
    assert db.stat().st_ino == inode and not list(folder.glob("cache.db.damaged-*"))
    assert {j.id for j in JobStore(folder, check=True).list_jobs()} >= set(ended)


def test_a_full_disk_is_said_by_the_store_itself(tmp_path):
    folder = tmp_path / "runs"
    _ended_jobs(folder)
    done = _limited("from fedcore.runner.store import JobStore, StoreError\n"
                    f"for _ in range(3):\n    try:\n        JobStore({str(folder)!r}, check=True)\n"
                    "    except StoreError as exc:\n        print(exc)\n", (folder / "cache.db").stat().st_size // 2)
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3 and all("the disk is full" in line for line in lines), done.stdout + done.stderr
    assert not list(folder.glob("cache.db.damaged-*"))


@pytest.mark.parametrize("how", ["empty file", "missing file"])
def test_an_empty_database_beside_its_archives_restores_every_ended_job(tmp_path, how):
    folder = tmp_path / "runs"
    ended = _ended_jobs(folder)
    for side in folder.glob("cache.db*"):
        side.unlink()
    if how == "empty file":
        (folder / "cache.db").touch()  # truncated to 0 bytes at rest (`: > cache.db`)
    manager = Jobs(folder, check_store=True, warm=False)
    try:
        store = manager.store
        jobs = {j.id: j for j in store.list_jobs()}
        assert set(jobs) == set(ended)
        assert {jobs[i].kind: jobs[i].status for i in KINDS} == {"sweep": "finished", "audit": "failed",
                                                                  "reproduction": "stopped"}
        assert f"{len(ended)} jobs that had ended were restored" in store.problem
        assert ("empty file" if how == "empty file" else "missing") in store.problem
        assert store.find_finished(CacheKey("h0")) == ended[0]  # the result cache is back too
    finally:
        manager.close()
    assert JobStore(folder, check=True).problem is None  # restored once: the next start has nothing to say


def test_history_shows_the_restore_banner_after_an_empty_database(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "runs"
    ended = _ended_jobs(folder)
    (folder / "cache.db").write_bytes(b"")
    for side in folder.glob("cache.db-*"):
        side.unlink()
    monkeypatch.setenv("FEDCORE_STORE", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/history.py")
    at.run()
    assert not at.exception
    assert any(f"{len(ended)} jobs that had ended were restored" in e.value and "empty file" in e.value
               for e in at.error)


def test_a_worker_on_a_full_disk_fails_in_one_line(tmp_path):
    folder = tmp_path / "runs"
    _ended_jobs(folder)
    done = _limited("from fedcore.runner.store import JobStore\n"
                    f"s = JobStore({str(folder)!r})\ns.create_run({{'pad': 'y' * 100000}}, 'big')\n",
                    (folder / "cache.db").stat().st_size + 4096)
    assert done.returncode != 0 and "StoreError" in done.stderr and "the disk is full" in done.stderr


def test_a_damaged_store_is_moved_aside_once_and_never_over_an_earlier_copy(tmp_path):
    folder = tmp_path / "runs"
    ended = _ended_jobs(folder)
    for k in range(2):  # damaged twice within the same second
        for side in folder.glob("cache.db-*"):
            side.unlink()
        (folder / "cache.db").write_bytes(b"not a database, copy %d" % k + bytes(8192))
        store = JobStore(folder, check=True)
        assert "damaged" in store.problem and {j.id for j in store.list_jobs()} == set(ended)
        store.close()
    copies = sorted(p.name for p in folder.glob("cache.db.damaged-*") if not p.name.endswith(("-wal", "-shm")))
    assert len(copies) == 2 and {(folder / c).read_bytes()[:22] for c in copies} == {b"not a database, copy 0",
                                                                                     b"not a database, copy 1"}
    again = JobStore(folder, check=True)  # the rebuilt store is healthy: nothing more is moved
    assert again.problem is None and len(list(folder.glob("cache.db.damaged-*"))) == 2
