"""The benchmark driver: every case x every system x ``repeat`` runs, medians reported.

Systems run one after another within a repeat (fedcore, loop, Flower, then again), so
that a change in the machine's load during the session hits all of them alike. With
``isolate`` (the default of ``python -m fedcore bench``) each run is a fresh process and
fedcore is also timed as ``python -m fedcore run``; without it (the tests) fedcore and
the loop run in this process and no process figures are taken.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from .flower_system import FlowerUnavailable
from .measure import Measurement, cli_command, run_cli, run_engine, run_isolated
from .workloads import Case


@dataclass
class CaseResult:
    """All runs of one case: ``runs[system]`` (one Measurement per repeat), the
    ``python -m fedcore run`` timings, and the systems that could not run, with why.
    ``extra`` holds ``--set`` overrides that changed the case (targets are then not judged)."""

    case: Case
    command: str
    extra: dict = field(default_factory=dict)
    runs: dict[str, list[Measurement]] = field(default_factory=dict)
    cli: list[Measurement] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _in_process(system: str, cfg, threads: int) -> Measurement:
    import torch

    before = torch.get_num_threads()
    if threads > 0:
        torch.set_num_threads(threads)
    try:
        if system == "flower":
            from .flower_system import run_flower

            return run_flower(cfg)
        return run_engine(cfg, "batched" if system == "fedcore" else "loop")
    finally:
        torch.set_num_threads(before)


def run_case(case: Case, systems: list[str], *, device: str, threads: int = 1, repeat: int = 1,
             isolate: bool = True, profile: bool = False, trace_dir: Optional[str] = None,
             flower_python: str = sys.executable, extra: Optional[dict] = None,
             log: Callable[[str], None] = print) -> CaseResult:
    """Run ``case`` on each of ``systems`` (that the case allows) ``repeat`` times."""
    cfg = case.config(device, extra)
    set_args = case.set_args(device, extra)
    result = CaseResult(case, cli_command(set_args, threads), dict(extra or {}))
    wanted = [s for s in systems if s in case.systems]
    for s in systems:
        if s not in case.systems:
            result.skipped[s] = case.note or "not run for this case"
    for r in range(repeat):
        for system in wanted:
            if system in result.skipped:
                continue
            first = r == 0 and system == "fedcore"
            if isolate:
                trace = f"{trace_dir}/{case.label.replace('/', '_')}-{system}.json" if trace_dir and first else None
                m = run_isolated(system, cfg, threads=threads, profile=profile and first, trace=trace,
                                 python=flower_python if system == "flower" else sys.executable)
            else:
                try:
                    m = _in_process(system, cfg, threads)
                except FlowerUnavailable as exc:
                    m = Measurement(system, note=f"flower skipped: {exc}")
            if not m.round_seconds:
                result.skipped[system] = m.note
                log(f"  {case.label:<9} {system:<8} skipped: {m.note}")
                continue
            result.runs.setdefault(system, []).append(m)
            line = f"  {case.label:<9} {system:<8} run {r + 1}/{repeat}: {m.round_median:.4g} s/round, acc {m.accuracy}"
            if system == "fedcore" and isolate:
                cli = run_cli(set_args, threads=threads)
                result.cli.append(cli)
                line += f", `fedcore run` process {cli.process_seconds:.2f} s"
            elif m.process_seconds is not None:
                line += f", process {m.process_seconds:.2f} s"
            log(line)
    return result
