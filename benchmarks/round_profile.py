"""``python -m benchmarks.round_profile --workload W3-quick --json``: where a round's time goes.

Issue 41 (Build 6): one run of a workload case (:mod:`benchmarks.workloads`) through the real
round loop (:func:`fedcore.engine.iter_run`), with its parts timed apart on the thread that
runs the rounds (``time.thread_time``: CPU seconds of that thread, which a busy host disturbs
far less than wall time):

- ``train_cpu_s_per_round``: local training (``train_clients``);
- ``server_cpu_s_per_round``: the mechanism, the aggregator and the server step
  (``server_round``), less the ledger's share;
- ``ledger_cpu_s_per_round``: what the round *waits on* accounting: the rounds' thread's CPU
  inside the ledger's calls (``record``, ``headline``, ``views``) plus the wall time it spends
  blocked on accounting done elsewhere (a background worker's curves: a wait on the critical
  path counts whether it burns CPU here or not). With ``FEDCORE_RDP_CACHE=off`` (the default
  here, as on a fresh host) every new RDP curve is computed in the run;
- ``ledger_background_cpu_s_per_round``: the CPU the accounting worker spent off the critical path;
- ``accounting_cpu_s_per_round_all`` (issue 55 §2): *all* the CPU accounting cost, every round included (round 1
  too), divided by the rounds: this thread's in the ledger, at the run's end (its PLD) and the curve
  workers' whole CPU with their start-up, and dp-accounting's import (timed before the run, once per
  process) (:func:`accounting_all`; its parts in ``accounting_cpu_s_all_parts``);
  ``accounting_cpu_s_per_round_warm`` the same without the import (a run in a warm worker);
- ``eval_cpu_s_per_round``: the test-set evaluation (0 in rounds that do not evaluate:
  ``eval_every``), and ``evaluated_rounds``;
- ``aten_calls_per_round``: ``aten::`` events of a round under ``torch.profiler`` (the way the issue
  counted W3's 3,466: nested calls included), ``aten_top_level_calls_per_round`` (called from Python
  or the autograd engine, not from inside another aten op) and ``aten_calls_by_part``.

When the loop goes ahead (rounds t+1, ... trained while round t's curves are out, :mod:`fedcore.engine.loop`),
a row is one step of the loop: a round's work, and the events that step released (their figures count in
it; an event released with an earlier one adds to that row), and a per-round figure is then a step total
divided by the rounds released (:func:`summarize`). The medians leave round 1 (warm-up: first calls, allocations, the curve worker's start) out. By
default the round runs as on a GPU (``--chunk gpu``: all clients in one vmap, 8,192 test samples per
forward; the way the issue counted W3's 3,466 calls); ``--chunk cpu`` uses the CPU's client chunks
and 1,024-sample evaluation. ``--clients N`` and ``--rounds R`` shrink the
case for a slow host (said in the output). MNIST is read from ``$FEDCORE_DATA``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from contextlib import contextmanager

PARTS = ("train", "server", "ledger", "eval")


def _case(name: str):
    from .workloads import WORKLOADS

    for workload in WORKLOADS.values():
        for case in workload.cases:
            if case.label == name:
                return case
    known = [c.label for w in WORKLOADS.values() for c in w.cases]
    raise SystemExit(f"unknown workload case {name!r}; known: {', '.join(known)}")


class _Counter:
    """aten calls by part of the round, read from ``torch.profiler`` (the way the issue counted W3's
    3,466): every ``aten::`` event, nested ones included (``total``), and the ``top`` level ones
    (called from Python, not from inside another aten op)."""

    def __init__(self):
        self.prof = None

    def start(self):
        import torch

        self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        self.prof.__enter__()

    def stop(self) -> dict:
        self.prof.__exit__(None, None, None)
        calls: dict = defaultdict(int)
        for ev in self.prof.events():
            if not ev.name.startswith("aten::"):
                continue
            part, parent, top = "other", ev.cpu_parent, True
            while parent is not None:
                if parent.name.startswith("part::"):
                    part = parent.name[6:]
                    break
                if parent.name.startswith("aten::"):
                    top = False
                parent = parent.cpu_parent
            calls[part] += 1
            calls["total"] += 1
            if top:
                calls["top"] += 1
        self.prof = None
        return dict(calls)


class Profiler:
    """Wraps the round loop's parts (module attributes of :mod:`fedcore.engine.loop`) with timers."""

    def __init__(self, count_aten: bool = True):
        self.rounds: list[dict] = []
        self.current: dict = defaultdict(float)
        self.counter = _Counter() if count_aten else None
        self._stack: list[str] = []
        self.ledgers: list = []
        self.events: list = []
        """Every round event, in order (a row is one step of the loop: events released together share one)."""

    def ledger_wait(self) -> float:
        """Wall seconds the run's ledgers waited for curves computed beside the round, so far."""
        return sum(getattr(ledger, "wait_s", 0.0) for ledger in self.ledgers)

    @contextmanager
    def part(self, name: str):
        """Time ``name`` on this thread; a nested part's time is taken out of its parent's."""
        parent = self._stack[-1] if self._stack else None
        self._stack.append(name)
        import torch

        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            if self.counter and self.counter.prof is not None:
                with torch.profiler.record_function(f"part::{name}"):
                    yield
            else:
                yield
        finally:
            dc, dw = time.thread_time() - c0, time.perf_counter() - w0
            self._stack.pop()
            self.current[f"{name}_cpu"] += dc
            self.current[f"{name}_wall"] += dw
            if parent is not None:
                self.current[f"{parent}_cpu"] -= dc
                self.current[f"{parent}_wall"] -= dw

    def install(self):
        """Patch the loop's names (its round's, its outbox's); returns a function that undoes it."""
        from fedcore.engine import local_round, loop, outbox

        homes = {"train_clients": local_round, "server_round": loop, "evaluate": loop, "new_ledger": loop,
                 "fill": outbox}
        saved = {n: getattr(home, n) for n, home in homes.items()}
        prof = self

        def wrap(name, fn):
            def inner(*a, **k):
                with prof.part(name):
                    return fn(*a, **k)
            return inner

        def new_ledger(s):
            ledger = saved["new_ledger"](s)
            prof.ledgers.append(ledger)
            for method in ("record", "headline", "views", "snapshot", "settle", "pld_run", "profile"):
                setattr(ledger, method, wrap("ledger", getattr(ledger, method)))
            return ledger

        local_round.train_clients = wrap("train", saved["train_clients"])
        loop.server_round = wrap("server", saved["server_round"])
        loop.evaluate = wrap("eval", saved["evaluate"])
        loop.new_ledger = new_ledger
        outbox.fill = wrap("ledger", saved["fill"])   # an event's figures: read from the ledger or its round's snapshot

        def undo():
            for n, fn in saved.items():
                setattr(homes[n], n, fn)
        return undo


def _graphs_eager():
    """A :class:`~fedcore.engine.graphs.StepGraphs` that runs the padded steps and the evaluation a
    GPU would replay as CUDA graphs eagerly (``capture=False``), each inside ``part::replayed``: on a
    host without CUDA, the aten calls a GPU would still dispatch from the host are the round's less
    those (``--graphs``)."""
    import torch

    from fedcore.engine.graphs import StepGraphs

    def replayed(fn):
        def inner(*a):
            with torch.profiler.record_function("part::replayed"):
                return fn(*a)
        return inner

    class Eager(StepGraphs):
        def __init__(self):
            super().__init__(capture=False)

        def _run(self, st, body, gen):
            return super()._run(st, replayed(body), gen)

        def evaluate(self, sums, params, key, size=None):
            return super().evaluate(replayed(sums), params, key, size)

    return Eager


def profile_case(cfg, *, count_aten: bool = True, chunk: str = "gpu", graphs: bool = False) -> dict:
    """Run ``cfg`` once under :class:`Profiler`; per-round figures and their medians. ``graphs``: the
    CUDA-graph path's steps run eagerly and are counted apart (:func:`_graphs_eager`)."""
    import torch

    from fedcore.engine import iter_run, local_round, loop
    from fedcore.events import RunFinished

    prof = Profiler(count_aten)
    undo = prof.install()
    saved_chunk, saved_eval = local_round.client_chunk, loop.evaluate
    saved_graphs = local_round.StepGraphs, local_round.graphs_enabled
    if graphs:
        local_round.StepGraphs, local_round.graphs_enabled = _graphs_eager(), lambda device: True
    if chunk == "gpu":   # as on a GPU: one vmap over all clients, 8,192 test samples per forward
        local_round.client_chunk = lambda *a, **k: None
        loop.evaluate = lambda model, params, x, y, chunk=None, graphs=None, meanwhile=None: saved_eval(
            model, params, x, y, chunk or 8192, graphs, meanwhile)
    _stop_curve_workers()   # a pool left by earlier work in this process is not this run's
    background0, wait0, children0 = _background_cpu(), 0.0, _children_cpu()
    busy0 = background0
    finished, final_ledger = None, 0.0
    try:
        events = iter_run(cfg)
        next(events)  # RunStarted: setup (data, model) is not a round
        while True:
            prof.current = defaultdict(float)
            if prof.counter:
                prof.counter.start()
            c0, w0, p0 = time.thread_time(), time.perf_counter(), time.process_time()
            try:
                event = next(events)
            except StopIteration:
                break
            finally:
                dc, dw, dp = time.thread_time() - c0, time.perf_counter() - w0, time.process_time() - p0
                calls = prof.counter.stop() if prof.counter else None
            if isinstance(event, RunFinished):   # the run's PLD (``pld_run``) and profile: accounting too
                finished, final_ledger = event, prof.current.get("ledger_cpu", 0.0)
                break
            prof.events.append(event)
            wait = prof.ledger_wait()
            bg = _background_cpu()
            if prof.rounds and not {"train_cpu", "server_cpu", "eval_cpu"} & set(prof.current):
                last = prof.rounds[-1]   # an event released with the last one: its figures count there
                for key, value in prof.current.items():
                    last[key] = last.get(key, 0.0) + value
                last["released"].append(event.round)
                last.update(headline=event.epsilon_headline_run, accuracy=event.accuracy)
                last["ledger_wait"] += wait - wait0
                last["ledger_background_cpu"] += bg - background0
                wait0, background0 = wait, bg
                continue
            row = dict(prof.current)
            row.update(round=event.round, round_cpu=dc, round_wall=dw, process_cpu=dp, evaluated=_evaluated(event, cfg),
                       headline=event.epsilon_headline_run, accuracy=event.accuracy, released=[event.round])
            row["ledger_wait"], wait0 = wait - wait0, wait
            row["ledger_background_cpu"] = bg - background0
            background0 = bg
            if calls is not None:
                row["aten"] = calls
            prof.rounds.append(row)
    finally:
        local_round.client_chunk, loop.evaluate = saved_chunk, saved_eval
        local_round.StepGraphs, local_round.graphs_enabled = saved_graphs
        undo()
        _stop_curve_workers()
    return {"rounds": prof.rounds, "finished": finished, "events": prof.events, "final_ledger_cpu": final_ledger,
            "workers_cpu": _children_cpu() - children0, "workers_busy_cpu": _background_cpu() - busy0}


def _evaluated(event, cfg) -> bool:
    flag = getattr(event, "evaluated", None)
    if flag is not None:
        return bool(flag)
    return event.round % cfg.eval_every == 0 or event.round == cfg.rounds


def _background_cpu() -> float:
    """CPU seconds of the ledger's background accounting so far (0 where it has none): what the curve
    workers report for their requests, without their start-up."""
    try:
        from fedcore.accounting.curve_workers import background_cpu_seconds
    except ImportError:
        return 0.0
    return background_cpu_seconds()



def _children_cpu() -> float:
    """User + system CPU seconds of this process's children that have ended and been waited for
    (``RUSAGE_CHILDREN``): the curve workers, start-up included, once :func:`_stop_curve_workers` reaped them."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _stop_curve_workers() -> None:
    """End the run's curve workers and wait for them, so that their whole CPU (start-up included) is counted."""
    try:
        from fedcore.accounting.curve_workers import stop_pool
    except ImportError:
        return
    stop_pool()


def summarize(rounds: list[dict], skip_first: bool = True) -> dict:
    """Per-round figures over the loop's steps, round 1's step left out when there are others: the median
    step when each released one round; when some step released several (rounds trained ahead while their
    curves were out), each figure's total over the steps divided by the rounds they released."""
    use = rounds[1:] if skip_first and len(rounds) > 1 else rounds

    def med(key, rows=use, get=None):
        vals = [get(r) if get else r.get(key, 0.0) for r in rows]
        if not vals:
            return None
        released = [len(r.get("released", [r.get("round")])) for r in rows]
        return sum(vals) / sum(released) if max(released) > 1 else statistics.median(vals)

    ev = [r for r in use if r["evaluated"]]
    out = {
        "aten_calls_per_round": med("aten_total") if use and "aten" in use[0] else None,
        "aten_top_level_calls_per_round": med("aten_top") if use and "aten" in use[0] else None,
        "ledger_cpu_s_per_round": med("ledger_critical"),
        "ledger_in_thread_cpu_s_per_round": med("ledger_cpu"),
        "ledger_wait_s_per_round": med("ledger_wait"),
        "ledger_background_cpu_s_per_round": med("ledger_background_cpu"),
        "eval_cpu_s_per_round": med("eval_cpu", ev) if ev else 0.0,
        "train_cpu_s_per_round": med("train_cpu"),
        "server_cpu_s_per_round": med("server_cpu"),
        "round_cpu_s": med("round_cpu"),
        "round_wall_s": med("round_wall"),
        "process_cpu_s_per_round": med("process_cpu"),
        "evaluated_rounds": [r["round"] for r in rounds if r["evaluated"]],
        "rounds_measured": [r["round"] for r in use],
    }
    if use and "aten" in use[0]:
        out["aten_calls_by_part"] = {p: med(p, get=lambda r, p=p: r["aten"].get(p, 0)) for p in (*PARTS, "other")}
        if any("replayed" in r["aten"] for r in use):
            out["aten_calls_replayed_per_round"] = med("replayed", get=lambda r: r["aten"].get("replayed", 0))
            out["aten_calls_outside_graphs_per_round"] = med(
                "outside", get=lambda r: r["aten"]["total"] - r["aten"].get("replayed", 0))
    out["ledger_cpu_s_by_round"] = [round(r["ledger_critical"], 4) for r in rounds]
    return out


def library_import_cpu() -> float:
    """CPU seconds of this thread importing dp-accounting (with the scipy it loads) where this process has
    not yet: once per process (a warm worker pays it before its first run, :func:`fedcore.runner.worker.warm_up`)."""
    import sys

    if "dp_accounting" in sys.modules:
        return 0.0
    t0 = time.thread_time()
    import dp_accounting  # noqa: F401

    return time.thread_time() - t0


def accounting_all(rounds: list[dict], result: dict) -> dict:
    """Every CPU-second accounting cost the run, over all its rounds (round 1 included), divided by the
    rounds (issue 55 §2): this thread's in the ledger's calls each round, at the run's end (its PLD,
    ``pld_run``, and profile) and the curve workers' whole CPU, start-up included (``RUSAGE_CHILDREN`` once
    they are reaped; any other child process of the run would count here too), and the exact accountant's
    library imported once per process (:func:`library_import_cpu`). ``accounting_cpu_s_per_round_warm``
    leaves the import out: a run in the dashboard's warm worker, which imported it while warming."""
    released = sum(len(r.get("released", [r.get("round")])) for r in rounds) or 1
    in_thread = sum(r.get("ledger_cpu", 0.0) for r in rounds)
    workers = result["workers_cpu"]
    run = in_thread + result["final_ledger_cpu"] + workers
    return {"accounting_cpu_s_per_round_all": (run + result["library_import_cpu"]) / released,
            "accounting_cpu_s_per_round_warm": run / released,
            "accounting_cpu_s_all_parts": {
                "library_import": round(result["library_import_cpu"], 4),
                "rounds_in_thread": round(in_thread, 4),
                "round_1_in_thread": round(rounds[0].get("ledger_cpu", 0.0), 4) if rounds else 0.0,
                "run_end_in_thread": round(result["final_ledger_cpu"], 4),
                "workers": round(workers, 4),
                "workers_start_up_and_idle": round(max(0.0, workers - result["workers_busy_cpu"]), 4),
                "rounds": released}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.round_profile", description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="W3-quick", help="a case label of benchmarks.workloads (default W3-quick)")
    p.add_argument("--clients", type=int, help="override num_clients (a lighter run on a slow host; said in the output)")
    p.add_argument("--rounds", type=int, help="override rounds")
    p.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    p.add_argument("--chunk", default="gpu", choices=["gpu", "cpu"],
                   help="gpu: all clients in one vmap (as on a device; default); cpu: the CPU's client chunks")
    p.add_argument("--cache", default="off", help="FEDCORE_RDP_CACHE for the run (default off: every curve computed)")
    p.add_argument("--no-aten", action="store_true", help="do not count aten calls")
    p.add_argument("--graphs", action="store_true",
                   help="on a host without CUDA: run the steps and the evaluation a GPU replays as CUDA graphs "
                        "eagerly, and count them apart (aten_calls_replayed_per_round; "
                        "aten_calls_outside_graphs_per_round is what a GPU would still dispatch from the host)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more config overrides")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)

    os.environ["FEDCORE_RDP_CACHE"] = args.cache
    import torch

    import fedcore.catalog  # noqa: F401  (registers the papers' methods, e.g. dsdp_fedavg)

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    case = _case(args.workload)
    extra = {}
    if args.clients:
        extra["num_clients"] = args.clients
    if args.rounds:
        extra["rounds"] = args.rounds
    for item in args.set:
        k, _, v = item.partition("=")
        try:
            extra[k] = json.loads(v)
        except json.JSONDecodeError:
            extra[k] = v
    cfg = case.config(args.device, extra)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    imported = library_import_cpu()
    result = profile_case(cfg, count_aten=not args.no_aten, chunk=args.chunk, graphs=args.graphs)
    result["library_import_cpu"] = imported
    rounds = result["rounds"]
    for r in rounds:
        r["ledger_critical"] = r.get("ledger_cpu", 0.0) + r.get("ledger_wait", 0.0)
        if "aten" in r:
            r["aten_total"], r["aten_top"] = r["aten"]["total"], r["aten"]["top"]
    summary = summarize(rounds)
    summary["evaluated_rounds"] = [e.round for e in result["events"] if _evaluated(e, cfg)]
    summary.update(accounting_all(rounds, result))
    fin = result["finished"]
    out = {
        "workload": args.workload, "device": args.device, "threads": torch.get_num_threads(),
        "chunk": ("as on a GPU: all clients in one vmap, 8,192 test samples per forward" if args.chunk == "gpu"
                  else "CPU client chunks, 1,024 test samples per forward"),
        "rdp_cache": args.cache, "num_clients": cfg.num_clients, "rounds": cfg.rounds,
        "eval_every": cfg.eval_every,
        "overrides": extra or None,
        **summary,
        "final_accuracy": fin.final_accuracy if fin else None,
        "headline_epsilon": rounds[-1]["headline"] if rounds else None,
        "seconds_total": time.perf_counter() - t0,
        "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()],
        "per_round": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rounds],
    }
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            if k != "per_round":
                print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
