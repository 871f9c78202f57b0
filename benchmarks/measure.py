"""Running one system on one config and measuring it: time, accuracy, memory.

Three ways, all returning a :class:`Measurement`:

- :func:`run_engine` runs fedcore's round loop in this process (``trainer="batched"`` is
  fedcore, ``"loop"`` the plain per-client PyTorch loop) and reads each round's time from
  ``RoundEvent.seconds`` (local training, privatisation, aggregation and evaluation).
- :func:`run_isolated` runs a system in a fresh ``python -m benchmarks.worker``
  process; the parent adds the whole-process wall time (interpreter start to exit, so
  imports, data loading and Ray start-up for Flower are in it) and the peak resident
  memory of the process tree.
- :func:`run_cli` times ``python -m fedcore run --set ...``, the command a user types,
  from start to exit, and reads the per-round times from its ``--out`` events file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Optional

import numpy as np


@dataclass
class Measurement:
    """One run of one system. Times in seconds, memory in MiB; None = not measured."""

    system: str
    round_seconds: list[float] = field(default_factory=list)
    accuracy: Optional[float] = None
    samples: list[int] = field(default_factory=list)   # training samples per round
    setup_seconds: Optional[float] = None              # call start -> first round starts
    run_seconds: Optional[float] = None                # call start -> result
    process_seconds: Optional[float] = None            # process start -> exit
    peak_rss_mb: Optional[float] = None
    peak_gpu_mb: Optional[float] = None
    flops_per_sample: Optional[int] = None             # forward FLOPs of one sample
    device: str = ""
    threads: int = 0
    profile: str = ""
    note: str = ""

    @property
    def round_median(self) -> Optional[float]:
        return median(self.round_seconds) if self.round_seconds else None

    @property
    def train_flops(self) -> Optional[float]:
        """Achieved FLOP/s of the median round: forward FLOPs x 3 (forward + backward) x
        training samples / seconds (the round's evaluation counts as time, not as FLOPs)."""
        if not self.flops_per_sample or not self.round_seconds or not self.samples:
            return None
        return 3 * self.flops_per_sample * median(self.samples) / self.round_median

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Measurement":
        return cls(**data)


def samples_per_round(client_sizes, selected, local) -> int:
    """Training samples that the round's selected clients push through the model."""
    if local.steps > 0:
        return local.steps * local.batch_size * len(selected)
    return int(local.epochs * np.asarray(client_sizes)[list(selected)].sum())


def run_engine(cfg, trainer: str = "batched") -> Measurement:
    """Run ``cfg`` through :func:`fedcore.engine.iter_run` here; ``trainer`` as there."""
    import torch

    from fedcore.data import load_dataset
    from fedcore.engine import iter_run
    from fedcore.events import RoundEvent, RunStarted

    t0 = time.perf_counter()
    m = Measurement("fedcore" if trainer == "batched" else trainer, threads=torch.get_num_threads())
    sizes, classes = [], 10
    for event in iter_run(cfg, trainer=trainer):
        if isinstance(event, RunStarted):
            sizes, classes, m.device = event.client_sizes, event.num_classes, event.device
            m.setup_seconds = time.perf_counter() - t0
        elif isinstance(event, RoundEvent):
            m.round_seconds.append(event.seconds)
            m.samples.append(samples_per_round(sizes, event.selected, cfg.local))
            m.accuracy = event.accuracy
    m.run_seconds = time.perf_counter() - t0
    m.flops_per_sample = model_flops(cfg.model, tuple(load_dataset(cfg.dataset).input_shape), classes)
    return m


def model_flops(model: str, input_shape: tuple, num_classes: int) -> int:
    """Forward FLOPs of one sample through a fresh CPU copy of ``model``."""
    from fedcore.models import build_model, count_flops

    return count_flops(build_model(model, input_shape, num_classes), input_shape)


# --- subprocesses ---------------------------------------------------------------------------

def thread_env(threads: int) -> dict:
    """Environment for a child limited to ``threads`` intra-op threads (0 = torch's default)."""
    env = dict(os.environ)
    if threads > 0:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _tree_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, from ``/proc`` (Linux; else 0)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * page
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total


def run_process(cmd: list[str], threads: int, timeout: float) -> tuple[float, float, int, str]:
    """Run ``cmd``; return ``(wall seconds, peak RSS MiB of its process tree, exit code, output)``.

    The peak is the larger of the child's own ``ru_maxrss`` (exact, from ``wait4``) and
    the process tree's RSS sampled every 0.1 s (catches Ray's worker processes).
    """
    peak = [0]
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=thread_env(threads))
        done = threading.Event()

        def sample():
            while not done.wait(0.1):
                peak[0] = max(peak[0], _tree_rss_bytes(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            _, status, usage = _wait4(proc, start + timeout)
        finally:
            done.set()
            sampler.join()
        wall = time.perf_counter() - start
        log.seek(0)
        output = log.read()
    code = os.waitstatus_to_exitcode(status) if status is not None else 124
    rss = max(peak[0] / 2**20, usage.ru_maxrss / 1024 if usage else 0.0)  # ru_maxrss is KiB
    return wall, rss, code, output


def _wait4(proc, deadline):
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return pid, status, usage
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = 124
            return pid, None, usage
        time.sleep(0.02)


SKIPPED = 3
"""Exit code of the worker for a system that cannot run here (e.g. flwr not installed)."""


def run_isolated(system: str, cfg, *, threads: int, python: str = sys.executable,
                 profile: bool = False, trace: Optional[str] = None, timeout: float = 3600) -> Measurement:
    """Run ``system`` on ``cfg`` in ``python -m benchmarks.worker``; add process figures.

    ``profile`` adds a profiler summary of one warm round (after the timed run, so it
    does not disturb it); ``trace`` also writes that round's Chrome trace there.
    """
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path, out_path = Path(tmp) / "config.json", Path(tmp) / "result.json"
        cfg_path.write_text(cfg.to_json())
        cmd = [python, "-m", "benchmarks.worker", system, str(cfg_path), str(out_path)]
        cmd += ["--profile"] if profile else []
        cmd += ["--trace", trace] if trace else []
        wall, rss, code, output = run_process(cmd, threads, timeout)
        if code == SKIPPED:
            return Measurement(system, note=output.strip().splitlines()[-1])
        if code != 0 or not out_path.is_file():
            tail = " | ".join(output.strip().splitlines()[-3:])
            return Measurement(system, note=f"failed (exit {code}): {tail}")
        m = Measurement.from_dict(json.loads(out_path.read_text()))
    m.process_seconds, m.peak_rss_mb = wall, rss
    return m


def run_cli(set_args: list[str], *, threads: int, timeout: float = 3600) -> Measurement:
    """Time ``python -m fedcore run --set ... --out events`` from start to exit."""
    from fedcore.events import RoundEvent, event_from_dict

    with tempfile.TemporaryDirectory() as tmp:
        events_path = Path(tmp) / "events.jsonl"
        cmd = [sys.executable, "-m", "fedcore", "run", "--out", str(events_path)]
        for item in set_args:
            cmd += ["--set", item]
        wall, rss, code, output = run_process(cmd, threads, timeout)
        m = Measurement("fedcore run", process_seconds=wall, peak_rss_mb=rss, threads=threads)
        if code != 0:
            m.note = f"failed (exit {code}): {output.strip().splitlines()[-1] if output.strip() else ''}"
            return m
        for line in events_path.read_text().splitlines():
            event = event_from_dict(json.loads(line))
            if isinstance(event, RoundEvent):
                m.round_seconds.append(event.seconds)
                m.accuracy = event.accuracy
    return m


def cli_command(set_args: list[str], threads: int) -> str:
    """The shell command :func:`run_cli` runs, for the report."""
    env = f"OMP_NUM_THREADS={threads} " if threads > 0 else ""
    return env + "python -m fedcore run " + " ".join(f"--set '{s}'" for s in set_args)
