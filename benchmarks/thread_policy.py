"""The one thread policy measured: the Frontier page's worker against the CLI on the same sweep, and
a CNN run on the policy's threads against 1 and 2 (issue 55 §1; :mod:`fedcore.threads`).

    python -m benchmarks.thread_policy [--pairs 3] [--epsilons 1,100,10000] [--seeds 1] [--before]
                                       [--cnn [--set KEY=VALUE]] [--busy N] [--quiet S]

1. **Sweep**: ``python -m fedcore sweep --preset demo --match headline --epsilons ... --seeds ...`` (the
   CLI's ``main``, in a fresh process) and the Frontier page's worker
   (:func:`fedcore.sweep.job.sweep_main`, what *Train* runs, in a fresh process) on the same spec,
   ``--pairs`` times, the two interleaved (the first of a pair alternates), each process's CPU
   seconds (user + system, from the kernel's accounting of the finished child, its children and its
   orphans, e.g. the accounting's curve workers: this script is their subreaper) and wall seconds,
   and the threads it trained on (``torch.get_num_threads()`` after it, and the policy's reason).
   ``--before`` adds the worker as it was before the policy: torch's default threads
   (``FEDCORE_THREADS=0``).
2. ``--cnn``: ``python -m fedcore run --preset mnist_cnn_100 --set rounds=2`` on the policy's threads
   (``auto``), ``--threads 1`` and ``--threads 2``, interleaved the same way.

``--quiet S`` waits before each run, up to S seconds, for a moment when nothing runs elsewhere (the idle
case on a shared host). ``--busy N`` starts N busy loops (each in a session of its own, as another user's work) for the
whole measurement. Prints one line per process and the medians with the 1-minute load average
before and after each (the cores are shared: compare only within one run).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

REPORT = ("import sys, torch; from fedcore import threads; c = threads.last_choice(); "
          "print('THREADS', torch.get_num_threads(), '|', c.reason if c else 'no choice', file=sys.stderr)")


def _load() -> float:
    return os.getloadavg()[0]


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def become_subreaper() -> None:
    """Processes orphaned below this one (a command's accounting workers, when it leaves with ``os._exit``)
    become its children, so their CPU seconds are counted once reaped (:func:`reap_orphans`)."""
    import ctypes

    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)      # PR_SET_CHILD_SUBREAPER


def reap_orphans(keep: set, timeout: float = 60.0) -> None:
    """Wait for every child of this process but ``keep`` (the busy loops): the measured command's
    orphans end when their pipes close."""
    me, deadline = str(os.getpid()), time.monotonic() + timeout
    while True:
        kids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and int(stat.parent.name) not in keep:
                kids.append(int(stat.parent.name))
        if not kids:
            return
        for pid in kids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if time.monotonic() > deadline:
                os.kill(pid, 9)
        time.sleep(0.05)


KEEP: set = set()
"""The busy loops' process ids (never reaped between measurements)."""
QUIET_S = 0.0
"""``--quiet``: wait up to this long before each run for nothing to be runnable elsewhere (an idle moment)."""


def wait_quiet(limit_s: float) -> None:
    """Until two readings 0.9 s apart of :func:`fedcore.threads.runnable_elsewhere` say 0, at most ``limit_s``."""
    from fedcore.threads import runnable_elsewhere

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and runnable_elsewhere(9, 0.1) > 0:
        time.sleep(1.0)


def measured(system: str, code: str, env: dict) -> dict:
    """Run ``python -c code`` alone; its wall and CPU seconds (its own, its children's and its orphans')
    and the threads it reported."""
    if QUIET_S:
        wait_quiet(QUIET_S)
    load, c0, t0 = _load(), _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    reap_orphans(KEEP)
    cpu = _children_cpu() - c0
    if done.returncode != 0:
        raise SystemExit(f"{system} failed:\n{done.stderr[-2000:]}")
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("THREADS ")), "THREADS ? | ?")
    threads, reason = line[len("THREADS "):].split(" | ", 1)
    return {"system": system, "wall_s": wall, "cpu_s": cpu, "threads": threads, "reason": reason,
            "load_before": load, "load_after": _load()}


def cli_code(argv: list[str]) -> str:
    """``python -m fedcore ARGV`` (its ``main``, then its exit, ``leave``), saying its threads before it leaves."""
    return (f"import sys; sys.argv = {['fedcore', *argv]!r}; from fedcore.__main__ import leave, main; rc = main(); "
            f"{REPORT}; leave(rc)")


def sweep_systems(args, folder: Path) -> dict:
    """name -> (code, env) of the sweep's systems."""
    from fedcore.sweep.job import sweep_fields, sweep_id
    from fedcore.sweep.spec import SweepSpec

    spec = SweepSpec(preset="demo", match="headline", epsilons=args.epsilons, seeds=args.seeds)
    print(f"sweep: {spec.count()} runs (demo, match headline, epsilons {args.epsilons}, {args.seeds} seed(s))")
    env = clean_env()
    outs = iter(range(1_000_000))

    def cli() -> str:                 # a new file each time: the CLI resumes from rows already written
        return cli_code(["sweep", "--preset", "demo", "--match", "headline", "--epsilons", args.epsilons,
                         "--seeds", str(args.seeds), "--out", str(folder / f"cli{next(outs)}.json")])

    def worker(name: str) -> str:
        import fedcore.runner.store as store_mod

        store_class = store_mod.JobStore
        store = store_class(folder / name)
        fields = sweep_fields(spec)
        store.create_job(sweep_id(fields["key"]), "sweep", **fields)
        store.close()
        return (f"from fedcore.sweep.job import sweep_main; sweep_main({str(folder / name)!r}, "
                f"{sweep_id(fields['key'])!r}); {REPORT}")

    systems = {"CLI sweep": (cli, env), "Frontier worker": (lambda: worker("worker"), env)}
    if args.before:
        systems["Frontier worker, torch's default (before)"] = (lambda: worker("before"),
                                                               {**env, "FEDCORE_THREADS": "0"})
    return systems


def cnn_systems(args) -> dict:
    env, run = clean_env(), ["run", "--preset", "mnist_cnn_100", "--set", "rounds=2",
                             *[a for item in args.set for a in ("--set", item)]]
    return {"CNN auto": (lambda: cli_code(run), env),
            "CNN --threads 1": (lambda: cli_code(["--threads", "1", *run]), env),
            "CNN --threads 2": (lambda: cli_code(["--threads", "2", *run]), env)}


def clean_env() -> dict:
    """This environment less any thread setting: each system makes its own choice."""
    drop = ("FEDCORE_THREADS", "FEDCORE_MAX_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    return {k: v for k, v in os.environ.items() if k not in drop}


def busy(n: int) -> list:
    """``n`` busy loops, each in a new session (another user's processes); killed at the end."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(n)]


def interleaved(systems: dict, pairs: int) -> list[dict]:
    """Each system ``pairs`` times, the order rotated every round (a change in load falls on all)."""
    names, results = list(systems), []
    for i in range(pairs):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            code, env = systems[name]
            r = measured(name, code(), env)
            results.append(r)
            print(f"{name:<44} {r['wall_s']:7.1f} s wall {r['cpu_s']:7.1f} CPU-s  {r['threads']} threads "
                  f"({r['reason']})  load {r['load_before']:.1f} -> {r['load_after']:.1f}", flush=True)
    return results


def summary(results: list[dict], base: str) -> list[str]:
    names = list(dict.fromkeys(r["system"] for r in results))
    med = {n: statistics.median(r["cpu_s"] for r in results if r["system"] == n) for n in names}
    lines = []
    for n in names:
        rows = [r for r in results if r["system"] == n]
        loads = [x for r in rows for x in (r["load_before"], r["load_after"])]
        lines.append(f"{n:<44} median {statistics.median(r['wall_s'] for r in rows):7.1f} s wall "
                     f"{med[n]:7.2f} CPU-s ({med[n] / med[base]:.3f}x {base}); CPU-s "
                     f"{', '.join('%.2f' % r['cpu_s'] for r in rows)}; load {min(loads):.1f}-{max(loads):.1f}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--epsilons", default="1,100,10000")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--before", action="store_true", help="also the worker on torch's default threads")
    p.add_argument("--cnn", action="store_true", help="the CNN run instead of the sweep")
    p.add_argument("--busy", type=int, default=0, help="busy loops beside the measurement")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="more overrides of the CNN run (e.g. train_size=6000: a cut-down run, said as such)")
    p.add_argument("--quiet", type=float, default=0.0, metavar="SECONDS",
                   help="before each run, wait up to SECONDS for nothing to be runnable elsewhere (idle)")
    p.add_argument("--json", help="write every measurement here")
    args = p.parse_args(argv)
    global QUIET_S
    QUIET_S = args.quiet
    become_subreaper()
    loops = busy(args.busy)
    KEEP.update(proc.pid for proc in loops)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            systems = cnn_systems(args) if args.cnn else sweep_systems(args, Path(tmp))
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
                  f"{args.busy} busy loops, load {_load():.1f}", flush=True)
            results = interleaved(systems, args.pairs)
        for line in summary(results, "CNN --threads 1" if args.cnn else "CLI sweep"):
            print(line, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    finally:
        for proc in loops:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
