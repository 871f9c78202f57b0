"""One thread policy: how many torch threads a process trains with (issue 55).

Every process that trains reaches :func:`fedcore.engine.setup.prepare` before its first step
(the CLI, the dashboard's run workers, the Frontier's sweep worker, reproductions, Ray tasks and
any Python caller of :func:`fedcore.run` or of the engine), and ``prepare`` calls :func:`apply_policy`
with the model it built. That is the one place the choice is made:

- **pinned**: ``FEDCORE_THREADS=N`` (what ``python -m fedcore --threads N`` sets; 0: torch's
  default), or a caller that set ``torch.set_num_threads`` itself, keeps its count;
- **no convolution** (``logreg``, ``mlp``, any model without a convolution): 1 thread. Their steps
  are too small for a second thread to pay: on a busy host it only waits on the first (one client's
  reconstruction 1.39 s on torch's 2 threads against 0.124 s on one; the Frontier worker 1.21x the
  CLI's CPU-s while it kept torch's 2; docs/benchmarks.md);
- **a convolution on a busy host** (the threads runnable elsewhere right now, :func:`runnable_elsewhere`,
  leave fewer than 2 of the cores this process may use free): 1 thread (``mnist_cnn_100`` cut down:
  8.58 CPU-s on 2 threads against 2.39 on one). The run queue is read, not the 1-minute load average,
  which lags a busy loop started seconds ago and counts this host's own last runs;
- **a convolution otherwise: measured**. :func:`measure` times the model's forward and backward on a
  batch of the run's size, interleaved on 1 thread and on the free cores, and those are kept only
  when they make the step at least :data:`GAIN` times faster (idle, 2 threads trained ``mnist_cnn_100``
  in 7.7 s against 12.9 s: 1.68x); a measurement is kept :data:`REMEASURE_S` in a process. A GPU run
  keeps torch's default.

The ceiling is what the process may use: its CPU affinity, ``OMP_NUM_THREADS`` when set (the
dashboard's host setting ``worker_threads`` sets it in its workers) and ``FEDCORE_MAX_THREADS`` (a Ray
task's CPUs, :func:`limit`). The choice is never above it. :func:`last_choice` says what was chosen
and why.

>>> from fedcore.threads import decide
>>> decide(has_convolution=False, device="cpu", ceiling=2, load=0.1).threads
1
>>> decide(has_convolution=True, device="cpu", ceiling=2, load=1.0).reason
'a convolution on a busy host (1.0 threads runnable elsewhere, 2 cores): 1 thread'
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Optional

ENV = "FEDCORE_THREADS"
"""A pinned count (``python -m fedcore --threads N``); inherited by the processes it starts."""
MAX_ENV = "FEDCORE_MAX_THREADS"
"""A ceiling (a Ray task's CPUs): the policy chooses at most this many."""
GAIN = 1.3
"""How much faster every core must make a convolution's step to be kept over one thread: 1.3x
means the extra threads' CPU is at least 65 % useful on a 2-core host."""
PROBE_REPEATS = 3
REMEASURE_S = 300.0
"""A measured choice is kept this long in a process (a warm worker's next run measures again)."""


@dataclass(frozen=True)
class Choice:
    """The policy's answer: ``threads`` (0: torch's default, left as it is) and why, in words;
    ``wall_1`` / ``wall_n``: the measured seconds of one step on 1 and on ``ceiling`` threads."""

    threads: int
    reason: str
    ceiling: int
    wall_1: Optional[float] = None
    wall_n: Optional[float] = None


_last: Optional[Choice] = None
_applied: Optional[int] = None       # the count this module last set (so a caller's own is told apart)
_measured: dict = {}                 # (model key, threads) -> (monotonic time, (wall on 1, wall on threads))


def last_choice() -> Optional[Choice]:
    """The choice :func:`apply_policy` made last in this process (None before any)."""
    return _last


def ceiling() -> int:
    """Threads this process may use: its CPUs, at most ``OMP_NUM_THREADS`` and ``FEDCORE_MAX_THREADS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    for var in ("OMP_NUM_THREADS", MAX_ENV):
        raw = os.environ.get(var, "").strip()
        if raw.isdigit() and int(raw) > 0:
            cores = min(cores, int(raw))
    return max(1, cores)


def pinned() -> Optional[int]:
    """``FEDCORE_THREADS`` as a count (0 = torch's default), None when unset or ``auto``."""
    raw = os.environ.get(ENV, "").strip().lower()
    if raw in ("", "auto"):
        return None
    if not raw.isdigit():
        from .errors import FedcoreError

        raise FedcoreError(f"{ENV}={raw}: must be a whole number of threads (0: torch's default) or auto")
    return int(raw)


def set_threads(threads: int, *, inherited: bool = False) -> None:
    """``threads`` torch threads in this process (0: leave as is); ``inherited``: the OpenMP, MKL
    and OpenBLAS variables too, so the processes it starts begin with that many."""
    global _applied
    if threads <= 0:
        return
    if inherited:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = str(threads)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already set, or parallel work already ran
        pass
    blas_threads(threads)
    _applied = threads


def blas_threads(threads: int) -> None:
    """numpy's BLAS on ``threads`` threads too: the attack view's products run there, and its idle threads
    spin after each call, which a page's slow motion wakes every round (pldp_mnist_noniid_lh_a: 1.60 CPU-s
    with the view on 2 BLAS threads, 0.44 on one)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")


def pin(threads: int) -> None:
    """Pin this process, and the processes it starts, to ``threads`` (0: torch's default): the
    policy then keeps that count (``python -m fedcore --threads N``)."""
    os.environ[ENV] = str(int(threads))
    set_threads(int(threads), inherited=True)


def limit(threads: float) -> None:
    """At most ``threads`` threads here (a Ray task's CPUs); the policy chooses within them."""
    n = max(1, int(threads))
    os.environ[MAX_ENV] = str(n)
    import torch

    if torch.get_num_threads() > n:
        torch.set_num_threads(n)


def caller_chose() -> Optional[int]:
    """The count a caller set with ``torch.set_num_threads`` itself (not this module, not torch's
    start-up default), else None."""
    import torch

    now = torch.get_num_threads()
    if _applied is not None:
        return None if now == _applied else now
    return None if now >= ceiling() else now


def decide(*, has_convolution: bool, device: str, ceiling: int, load: float,
           measure: Optional[Callable[[int], tuple[float, float]]] = None) -> Choice:
    """The policy as a pure function of the model, the device, the cores and ``load``, the threads
    runnable elsewhere on the host. ``measure(n)`` returns the seconds of one step on 1 and on ``n``
    threads (only asked for a convolution on a CPU with ``n`` >= 2 cores free)."""
    if device != "cpu":
        return Choice(0, f"a {device} run: torch's default", ceiling)
    if not has_convolution:
        return Choice(1, "no convolution: 1 thread", ceiling)
    if ceiling <= 1:
        return Choice(1, "one core: 1 thread", ceiling)
    free = min(ceiling, int(ceiling - load + 0.5))   # the cores left free, to the nearest
    if free < 2:
        return Choice(1, f"a convolution on a busy host ({load:.1f} threads runnable elsewhere, {ceiling} cores): "
                         "1 thread", ceiling)
    if measure is None:
        return Choice(0, "a convolution, not measured: torch's default", ceiling)
    try:
        wall_1, wall_n = measure(free)
    except Exception as exc:  # noqa: BLE001  (the run meets and reports its model's error itself)
        return Choice(1, f"a convolution, not measurable ({type(exc).__name__}): 1 thread", ceiling)
    faster = f"a convolution, measured {wall_1 / wall_n:.2f}x faster on {free} threads"
    if wall_1 >= GAIN * wall_n:
        return Choice(free, f"{faster}: {free} threads", ceiling, wall_1, wall_n)
    return Choice(1, f"{faster.replace('measured', 'measured only')}: 1 thread", ceiling, wall_1, wall_n)


def runnable_elsewhere(readings: int = 5, gap_s: float = 0.01) -> float:
    """Threads runnable on the host now, this process's own left out: the median of ``readings`` of the
    kernel's run queue (``/proc/loadavg``'s fourth field) less this process's running threads; where
    there is no ``/proc``, the 1-minute load average."""
    seen = []
    try:
        for _ in range(readings):
            with open("/proc/loadavg") as f:
                running = int(f.read().split()[3].split("/")[0])
            mine = 0
            for task in os.listdir("/proc/self/task"):
                try:
                    with open(f"/proc/self/task/{task}/stat") as f:
                        mine += f.read().rsplit(")", 1)[1].split()[0] == "R"
                except OSError:   # a thread that ended meanwhile
                    pass
            seen.append(max(0, running - mine))
            time.sleep(gap_s)
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]
    return float(sorted(seen)[len(seen) // 2])


def has_convolution(model) -> bool:
    """Whether ``model`` has a convolution layer."""
    from torch import nn

    return any(isinstance(m, nn.modules.conv._ConvNd) for m in model.modules())


def step_timer(model, x, y) -> Callable[[int], tuple[float, float]]:
    """``measure(n)`` for :func:`decide`: the best of :data:`PROBE_REPEATS` forward-and-backward
    steps of ``model`` on ``(x, y)``, on 1 thread and on ``n``, interleaved (so a change in the
    host's load falls on both). It trains a copy, under a forked random state: the run's model and
    draws are those it would have had without the measurement."""
    import copy

    import torch

    def one_step(copied, threads: int) -> float:
        torch.set_num_threads(threads)
        copied.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        torch.nn.functional.cross_entropy(copied(x), y).backward()
        return time.perf_counter() - t0

    def measure(n: int) -> tuple[float, float]:
        before, copied = torch.get_num_threads(), copy.deepcopy(model)
        with torch.random.fork_rng(devices=[]):
            try:
                one_step(copied, n)                  # warm-up: the first call allocates
                ones, ns = [], []
                for _ in range(PROBE_REPEATS):
                    ones.append(one_step(copied, 1))
                    ns.append(one_step(copied, n))
            finally:
                torch.set_num_threads(before)
        return min(ones), min(ns)

    return measure


def remembered(key, measure: Callable[[int], tuple[float, float]]) -> Callable[[int], tuple[float, float]]:
    """``measure`` whose answer for ``n`` threads is kept :data:`REMEASURE_S` under ``key`` (a warm
    worker's next run of the same model reuses it; the load is read afresh every time)."""
    def kept(n: int) -> tuple[float, float]:
        seen = _measured.get((key, n))
        if seen is None or time.monotonic() - seen[0] >= REMEASURE_S:
            seen = _measured[(key, n)] = (time.monotonic(), measure(n))
        return seen[1]

    return kept


def probe_batch(cfg, x_train, y_train):
    """A batch as the engine trains it: ``local.batch_size`` examples of up to 8 clients at once
    (it vmaps the clients), at most 256 and at most the training set."""
    size = max(1, min(len(x_train), 256, int(cfg.local.batch_size) * min(int(cfg.num_clients), 8)))
    return x_train[:size], y_train[:size]


def apply_policy(cfg, model, x_train, y_train, device) -> Choice:
    """Choose this process's threads for training ``model`` of ``cfg`` and set them (module doc)."""
    global _last
    fixed = pinned()
    if fixed is not None:
        set_threads(fixed)
        _last = Choice(fixed, f"pinned by {ENV}={fixed}", ceiling())
        return _last
    theirs = caller_chose()
    if theirs is not None:
        blas_threads(theirs)
        _last = Choice(theirs, f"the caller's torch.set_num_threads({theirs})", ceiling())
        return _last
    cores, conv, kind = ceiling(), has_convolution(model), getattr(device, "type", str(device))
    timer, load = None, 0.0
    if conv and kind == "cpu" and cores > 1:
        timer = remembered((cfg.model, tuple(x_train.shape[1:])), step_timer(model, *probe_batch(cfg, x_train, y_train)))
        load = runnable_elsewhere()
    choice = decide(has_convolution=conv, device=kind, ceiling=cores, load=load, measure=timer)
    set_threads(choice.threads)
    _last = choice
    return choice
