"""One job system: runs, sweeps, audits (and Ray sweeps) are jobs of one Jobs, in one
queue under one set of host limits, each owned and stopped one way, scheduled by fair share."""
from __future__ import annotations

import time

import pytest

from fedcore.resolve import preset_config
from fedcore.runner import Jobs
from fedcore.runner.audits import audit_id, start_audit
from fedcore.runner.jobs import Job
from fedcore.runner.launchers import ProcessLauncher, spawn
from fedcore.runner.limits import HostLimits, LimitError
from fedcore.runner.owners import NotYourRun, Viewer
from fedcore.runner.queueing import estimate_starts
from fedcore.runner.tempo import read_tempo
from fedcore.sweep.job import start_sweep, sweep_status
from fedcore.sweep.spec import SweepSpec

DEMO = preset_config("demo")
A, B = Viewer("session:a"), Viewer("session:b")
SPEC = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(1.0,), seeds=1, match="target")


def sleeper(store, record) -> ProcessLauncher:
    """The launcher of a test job: a process that sleeps (holding a worker slot) until terminated."""
    return ProcessLauncher(spawn(time.sleep, 60, name="fedcore-test"))


def blocker(manager: Jobs, owner: str = "session:z", name: str = "block") -> str:
    """A job that holds a worker slot (a sleeping process) until stopped."""
    return manager.submit(Job(f"test:{name}", "test", f"{__name__}:sleeper", owner))


def start(kind: str, manager: Jobs, owner: str, n: int):
    if kind == "run":
        return manager.start(DEMO.replace(rounds=40_000, seed=n), owner=owner)
    if kind == "sweep":
        return "sweep:" + start_sweep(manager, SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(1.0 + n,),
                                                         seeds=1, match="target"), owner=owner)
    return start_audit(manager, DEMO.replace(seed=n), 400, owner=owner)


@pytest.fixture()
def manager(tmp_path):
    m = Jobs(tmp_path / "store", warm=False, max_running=1,
                   limits=HostLimits(max_active=4, max_active_per_owner=2, max_sweep_runs=10))
    yield m
    m.close()


@pytest.mark.parametrize("kind", ["run", "sweep", "audit"])
def test_every_kind_queues_behind_the_same_limits_and_is_refused_by_name(manager, kind):
    blocker(manager)
    first = start(kind, manager, A.owner, 1)
    assert manager.queue_info(first)["position"] == 1  # queued behind the busy slot, its place visible
    second = start(kind, manager, A.owner, 2)
    assert manager.queue_info(second)["position"] == 2
    with pytest.raises(LimitError, match=r"host limit max_active_per_owner") as refused:
        start(kind, manager, A.owner, 3)
    assert refused.value.limit == "max_active_per_owner"
    other = start(kind, manager, B.owner, 4)  # another visitor still gets in line ...
    assert manager.queue_info(other)["position"] == 3
    with pytest.raises(LimitError, match=r"host limit max_active\b"):  # ... until the server is full
        start("run", manager, "session:c", 5)
    for job in (first, second, other):
        manager.stop(job)
    assert manager.queue_length() == 0 and manager.capacity_left("session:c") == 2


def test_a_sweep_an_audit_and_a_run_share_one_queue(manager):
    blocker(manager)
    manager.limits = HostLimits(max_active_per_owner=3)
    jobs = [start("audit", manager, A.owner, 1), start("sweep", manager, A.owner, 1), start("run", manager, A.owner, 1)]
    assert [manager.queue_info(j)["position"] for j in jobs] == [1, 2, 3]
    with pytest.raises(LimitError, match="max_active_per_owner"):
        start("sweep", manager, A.owner, 2)
    for job in jobs:
        manager.stop(job)


def test_a_too_large_sweep_is_refused_with_the_limit_name(manager):
    spec = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=(1.0, 2.0, 3.0), seeds=5, match="target")
    with pytest.raises(LimitError, match=r"runs in one sweep: got 25; this server allows at most 10 "
                                         r"\(host limit max_sweep_runs"):
        start_sweep(manager, spec, owner=A.owner)
    assert manager.queue_length() == 0


def test_b_cannot_stop_a_sweep_or_audit_of_a(manager):
    blocker(manager)
    sweep = start("sweep", manager, A.owner, 1)
    audit = start("audit", manager, A.owner, 1)
    assert audit == audit_id(DEMO.replace(seed=1), 400)
    key = sweep.removeprefix("sweep:")
    status = sweep_status(manager, key)
    assert status.status == "queued" and status.owner == A.owner and status.get("queue")["position"] == 1
    for job in (sweep, audit):
        with pytest.raises(NotYourRun):
            manager.stop(job, by=B)
        assert manager.job(job) is not None
        manager.stop(job, by=A)
        assert manager.job(job) is None and manager.status(job) == "stopped"
    assert sweep_status(manager, key).done == 0  # stopped before it started: nothing trained


def test_a_sweep_trains_as_a_job_and_its_owner_stops_it(tmp_path):
    m = Jobs(tmp_path, warm=False, max_running=1)
    try:
        key = start_sweep(m, SPEC, owner=A.owner)
        deadline = time.monotonic() + 120
        while sweep_status(m, key).status == "queued" and time.monotonic() < deadline:
            time.sleep(0.2)
        if m.job(f"sweep:{key}") is not None:  # (a quick machine may have finished it)
            with pytest.raises(NotYourRun):
                m.stop(f"sweep:{key}", by=B)
        m.stop(f"sweep:{key}", by=A)
        while m.job(f"sweep:{key}") is not None and time.monotonic() < deadline:
            m.poll()
            time.sleep(0.2)
        assert sweep_status(m, key).status in ("stopped", "finished")
        assert m.store.get_job_dict(f"sweep:{key}")["owner"] == A.owner
    finally:
        m.close()


def test_a_run_a_sweep_and_an_audit_keep_their_statuses_across_a_restart(tmp_path):
    """Issue 31: every kind of job is a record in the store, so a restarted manager reads the
    same statuses through ``Jobs.status``: queued ones wait again in their order, and a job whose
    worker still lives keeps its slot."""
    first = Jobs(tmp_path, warm=False, max_running=1)
    block = blocker(first)
    jobs = [start(kind, first, A.owner, 1) for kind in ("run", "sweep", "audit")]
    before = {job: first.status(job) for job in (block, *jobs)}
    assert before == {block: "running", **{job: "queued" for job in jobs}}
    first.close(stop_runs=False)  # the dashboard restarts; its jobs stay in the store
    second = Jobs(tmp_path, warm=False, max_running=1)
    try:
        assert {job: second.status(job) for job in before} == before
        assert [second.queue_info(job)["position"] for job in jobs] == [1, 2, 3]
        assert [second.job(job).kind for job in jobs] == ["run", "sweep", "audit"]
        assert all(second.job(job).owner == A.owner for job in jobs)
        first.process(block).kill()  # the blocker's worker dies: the next in line starts
        first.process(block).join()
        wait_for(lambda: second.status(jobs[0]) == "running", timeout=30)
        assert second.status(block) == "failed" and second.status(jobs[1]) == "queued"
    finally:
        second.close()


def test_the_queue_estimate_is_capped_by_the_longest_a_run_may_train():
    running = [{"rounds": 2000, "rounds_done": 1, "elapsed_s": 10.0}]  # 10 s a round: 5.5 h at this pace
    queued = [{"id": "a", "rounds": 2000, "round_s": 10.0}, {"id": "b", "rounds": 5, "round_s": 1.0}]
    assert estimate_starts(running, queued, slots=1) == {"a": 19990.0, "b": 39990.0}
    assert estimate_starts(running, queued, slots=1, max_seconds=1800) == {"a": 1790.0, "b": 3590.0}
    # a run that outlived its estimate still needs at least the round in progress
    assert estimate_starts([{"rounds": 4, "rounds_done": 4, "elapsed_s": 8.0}], queued[:1], slots=1) == {"a": 2.0}


def wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow   # two runs through the job manager, ~8 s: in the full suite only
def test_fair_share_b_starts_within_one_round_of_a(tmp_path):
    """Policy (README): 2 slots, A trains 2 long runs, B presses Run: B's run takes a slot at
    once; A's youngest run pauses after its current round and resumes when a slot frees."""
    m = Jobs(tmp_path, warm=False, max_running=2)
    try:
        long = DEMO.replace(rounds=100_000)
        a1 = m.start(long.replace(seed=1), owner=A.owner, background=True)
        a2 = m.start(long.replace(seed=2), owner=A.owner, background=True)
        wait_for(lambda: all((m.store.get_job_dict(r) or {}).get("rounds_done", 0) >= 1 for r in (a1, a2)))
        b = m.start(DEMO.replace(rounds=2), owner=B.owner, background=True)
        assert m.queue_info(b) is None and m.is_alive(b)  # handed to a worker at once, not queued
        assert read_tempo(m.store, a2)["preempted"] and not read_tempo(m.store, a1).get("preempted")
        wait_for(lambda: read_tempo(m.store, a2)["holding"])  # A's youngest pauses between rounds ...
        held_at = m.store.get_job_dict(a2)["rounds_done"]
        assert m.wait(b, timeout=180)["status"] == "finished"
        wait_for(lambda: not read_tempo(m.store, a2)["preempted"])  # ... and resumes when B's slot frees
        wait_for(lambda: m.store.get_job_dict(a2)["rounds_done"] > held_at)
        assert m.store.get_job_dict(a2)["status"] == "running"
    finally:
        m.close()


def test_fifty_audits_and_a_huge_sweep_of_one_visitor_leave_room_for_others(tmp_path):
    """Issue 20: on the dashboard's defaults (2 slots, 3 jobs a visitor), A asks for 50 audits and
    a 3000-run sweep; the extra ones are refused naming the limit, and B's run starts at once."""
    import dataclasses

    from fedcore.runner.limits import SHARED_DEFAULTS

    m = Jobs(tmp_path, warm=False, limits=dataclasses.replace(SHARED_DEFAULTS, max_running=2))
    try:
        local = DEMO.replace(rounds=1, num_clients=3).with_overrides(
            {"privacy.mechanism": "laplace", "privacy.aggregator": "mean", "privacy.epsilon": [1.0]})
        refused = []
        for n in range(50):
            try:
                start_audit(m, local.replace(seed=n), 400, owner=A.owner)
            except LimitError as exc:
                refused.append(exc.limit)
        assert refused == ["max_active_per_owner"] * 47
        huge = SweepSpec(preset="demo", methods=("pldp_b",), epsilons=tuple(range(1, 29)), seeds=100)
        with pytest.raises(LimitError, match=r"got 3000; this server allows at most 1000 \(host limit max_sweep_runs"):
            start_sweep(m, huge, owner="session:c")
        assert sum(m.is_alive(j) for j in [audit_id(local.replace(seed=n), 400) for n in range(3)]) == 1
        b = m.start(DEMO.replace(rounds=2), owner=B.owner, background=True)
        assert m.queue_info(b) is None and m.is_alive(b)  # audits cannot pause: they hold at most half the slots
    finally:
        m.close()


def test_a_queued_run_stopped_through_the_store_ends_stopped_when_its_turn_comes(manager):
    """Another process (a second dashboard on the same store) asks a queued run to stop: when a
    slot frees, the run is not started and its record says so, not 'queued' for ever."""
    block = blocker(manager)
    run_id = manager.start(DEMO.replace(seed=77), owner=A.owner)
    assert manager.store.get_job_dict(run_id)["status"] == "queued"
    manager.store.request_stop(run_id)
    manager.stop(block)
    deadline = time.monotonic() + 30
    while manager.store.get_job_dict(run_id)["status"] == "queued" and time.monotonic() < deadline:
        time.sleep(0.1)
    record = manager.store.get_job_dict(run_id)
    assert record["status"] == "stopped" and record["reason"] == "stopped before it started"


def test_spend_exactly_epsilon_is_solved_by_the_worker_not_the_page(manager):
    """"Spend exactly ε in total": the page only asks; the worker solves the method's own budget
    (replaying the accounting), the record takes the solved config and the solution, and the run
    spends the target. The same request is reused; the config run as it is is another run."""
    from fedcore.events import replay
    from fedcore.methods import apply_method

    cfg = apply_method(DEMO, "ldp_fl", {"rounds": 3, "privacy.epsilon": [10.0]}, preset="demo")
    run_id = manager.start(cfg, owner=A.owner, match=True)
    record = manager.store.get_job_dict(run_id)
    assert record["match"] == {"target": 10.0} and record["config_hash"] == cfg.config_hash()
    assert record["config"] == record["requested"] == cfg.to_dict()   # not solved at the request
    deadline = time.monotonic() + 120
    while manager.store.get_job_dict(run_id)["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.1)
    record = manager.store.get_job_dict(run_id)
    assert record["status"] == "finished", record
    note = record["match"]
    assert note["reached"] and 9.9 <= note["headline"] <= 10.0
    assert note["knob"] < 10.0 and record["config"]["privacy"]["epsilon"] == [note["knob"]]
    assert record["requested"] == cfg.to_dict()                       # the request stays apart
    last = replay(manager.store.read_events(run_id, 0)).last_round
    assert last.round == 3 and 9.9 <= last.epsilon_headline_run <= 10.0 + 1e-9
    assert manager.start(cfg, owner=A.owner, match=True) == run_id
    assert manager.start(cfg, owner=A.owner) != run_id


@pytest.mark.slow   # two sweeps through the job manager, ~12 s: in the full suite only
def test_sweeps_yield_to_another_visitor_and_stop_when_their_owner_leaves(tmp_path):
    """Issue 30: A's two sweeps hold both slots; B's run starts at once (A's youngest sweep pauses
    between two rounds of its batch, as a run would); A closes the page (no more heartbeats) and
    both sweeps stop within the grace period plus one batch, saying why."""
    grace = 6.0
    m = Jobs(tmp_path, warm=False, max_running=2, limits=HostLimits(owner_grace_s=grace, max_active_per_owner=3))
    try:
        def spec(n):
            return SweepSpec(preset="demo", methods=("pldp_b", "dp_fedavg"), match="target", seeds=2,
                             epsilons=tuple(float(e) for e in range(1 + 50 * n, 41 + 50 * n)))
        sweeps = [f"sweep:{start_sweep(m, spec(n), owner=A.owner)}" for n in range(2)]

        def page_open():  # A's Frontier page polls: it refreshes the sweeps' heartbeats
            for s in sweeps:
                m.store.touch(s)
            return all(m.store.get_job_dict(s)["status"] == "running" for s in sweeps)

        wait_for(page_open)
        b = m.start(DEMO.replace(rounds=2), owner=B.owner, background=True)
        assert m.queue_info(b) is None and m.is_alive(b)  # a slot at once: A's youngest sweep yields
        assert read_tempo(m.store, sweeps[1])["preempted"]
        deadline = time.monotonic() + 180
        while m.store.get_job_dict(b)["status"] != "finished":
            assert time.monotonic() < deadline, "B's run did not finish while A's sweeps were paused"
            page_open()
            time.sleep(0.2)
        wait_for(lambda: page_open() or not read_tempo(m.store, sweeps[1])["preempted"])  # it resumes
        left = time.monotonic()  # A closes the page: nobody refreshes the heartbeats any more
        wait_for(lambda: all(m.store.get_job_dict(s)["status"] == "stopped" for s in sweeps), timeout=grace + 90)
        assert time.monotonic() - left < grace + 90
        for s in sweeps:
            assert "owner's page was closed" in (m.store.get_job_dict(s).get("reason") or ""), m.store.get_job_dict(s)
    finally:
        m.close()


def test_a_sweep_with_a_point_that_cannot_run_fails_before_any_trains(tmp_path):
    """Issue 30: ε = 0.01 for DP-FedAvg cannot be reached; the sweep fails while checking its
    points, naming the point and the ε as written, with no row trained."""
    from fedcore.sweep.job import rows_path, spec_key

    m = Jobs(tmp_path, warm=False, max_running=1)
    try:
        spec = SweepSpec(preset="demo", methods=("pldp_b", "dp_fedavg"), epsilons=(1.0, 0.01), seeds=1,
                         match="target")
        key = start_sweep(m, spec, owner=A.owner)
        wait_for(lambda: sweep_status(m, key).status in ("failed", "finished", "stopped"))
        status = sweep_status(m, key)
        assert status.status == "failed", status
        assert "dp_fedavg ε=0.01 seed 0" in status.error and "got 0.01;" in status.error
        assert status.done == 0 and not rows_path(m.store_dir, spec_key(spec)).exists()
    finally:
        m.close()


def test_the_eta_of_a_job_held_by_its_owners_cap_counts_the_cap(tmp_path):
    """Issue 30: A's second job that cannot pause waits for A's first (half the slots), even with a
    slot free; its estimate says so instead of 'about 1 s'."""
    m = Jobs(tmp_path, warm=False, max_running=2)
    try:
        first = m.submit(Job("test:a1", "test", f"{__name__}:sleeper", A.owner, seconds=40.0))
        wait_for(lambda: m.is_alive(first))
        second = m.submit(Job("test:a2", "test", f"{__name__}:sleeper", A.owner, seconds=40.0))
        info = m.queue_info(second)
        assert info is not None and info["running"] == 1 and info["slots"] == 2   # a slot is free ...
        assert info["eta_s"] is not None and info["eta_s"] >= 30                   # ... but not for A
    finally:
        m.close()
