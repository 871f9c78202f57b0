"""Tables, ratios and target checks of a benchmark session, as text and as markdown.

Every figure is a median over the session's repeats: seconds per round (the median
round of each run, from ``RoundEvent.seconds`` or, for Flower, between the server's
evaluations), whole-process wall time (``python -m fedcore run`` for fedcore, the worker
process for the others), peak RSS of the process tree and peak GPU memory. Ratios are
``other / fedcore``: how many times longer the other system takes.
"""
from __future__ import annotations

import os
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Optional

from .roofline import flops_line
from .suite import CaseResult


def _median(values) -> Optional[float]:
    values = [v for v in values if v is not None]
    return median(values) if values else None


@dataclass
class Row:
    system: str
    accuracy: Optional[float]
    round_s: Optional[float]
    process_s: Optional[float]
    rss_mb: Optional[float]
    gpu_mb: Optional[float]
    flops: Optional[float]
    note: str = ""


def rows(result: CaseResult) -> list[Row]:
    """One row per system that ran, fedcore first."""
    out = []
    for system, runs in result.runs.items():
        process = [c.process_seconds for c in result.cli] if system == "fedcore" and result.cli else \
            [m.process_seconds for m in runs]
        rss = [c.peak_rss_mb for c in result.cli] if system == "fedcore" and result.cli else \
            [m.peak_rss_mb for m in runs]
        out.append(Row(system, _median(m.accuracy for m in runs), _median(m.round_median for m in runs),
                       _median(process), _median(rss), _median(m.peak_gpu_mb for m in runs),
                       _median(m.train_flops for m in runs), runs[0].note))
    return sorted(out, key=lambda r: ("fedcore", "loop", "flower").index(r.system)
                  if r.system in ("fedcore", "loop", "flower") else 9)


def ratio(result: CaseResult, system: str, metric: str) -> Optional[float]:
    """``system``'s median ``metric`` ("round_s" or "process_s") over fedcore's."""
    by = {r.system: r for r in rows(result)}
    if "fedcore" not in by or system not in by:
        return None
    a, b = getattr(by[system], metric), getattr(by["fedcore"], metric)
    return a / b if a and b else None


@dataclass(frozen=True)
class Target:
    """A goal of the performance issue: ``system`` takes >= ``factor`` x fedcore's
    ``metric``, or (``system == "fedcore"``) fedcore's ``metric`` <= ``limit`` seconds."""

    case: str
    device: str
    system: str
    metric: str
    factor: float = 0.0
    limit: float = 0.0
    text: str = ""


TARGETS = (
    Target("W1/100", "cpu", "flower", "process_s", factor=30,
           text="W1, 100 clients, CPU: whole process >= 30x shorter than Flower's"),
    Target("W1/100", "cpu", "flower", "round_s", factor=100,
           text="W1, 100 clients, CPU: engine time per round >= 100x shorter than Flower's"),
    Target("W1/100", "cpu", "loop", "round_s", factor=10,
           text="W1, 100 clients, CPU: >= 10x faster per round than the plain loop"),
    Target("W2/plain", "cuda", "loop", "round_s", factor=30,
           text="W2 (no noise), GPU: >= 30x faster per round than the plain loop"),
    Target("W2/uldp", "cuda", "loop", "round_s", factor=30,
           text="W2 (uldp_gaussian), GPU: >= 30x faster per round than the plain loop"),
    Target("W3", "cuda", "fedcore", "process_s", limit=60,
           text="W3 (300 rounds), one H200: `python -m fedcore run` <= 60 s start to result"),
)


def check_targets(results: list[CaseResult], device_type: str) -> list[str]:
    """One line per target: met / missed with the measured figure, or why it was not measured."""
    by_case = {r.case.label: r for r in results}
    lines = []
    for t in TARGETS:
        result = by_case.get(t.case)
        if t.device != device_type:
            lines.append(f"- [not measured here: needs {'a GPU' if t.device == 'cuda' else 'the CPU run'}] {t.text}")
            continue
        if result is None:
            lines.append(f"- [not run in this session] {t.text}")
            continue
        if result.extra:
            lines.append(f"- [not judged: --set changed the workload] {t.text}")
            continue
        if t.system == "fedcore":
            value = next((getattr(r, t.metric) for r in rows(result) if r.system == "fedcore"), None)
            ok = value is not None and value <= t.limit
            figure = "n/a" if value is None else f"{value:.1f} s"
        else:
            value = ratio(result, t.system, t.metric)
            ok = value is not None and value >= t.factor
            figure = "n/a" if value is None else f"{value:.1f}x"
        verdict = "not measured" if value is None else ("MET" if ok else "MISSED")
        lines.append(f"- [{verdict}: {figure}] {t.text}")
    return lines


def title(result: CaseResult) -> str:
    changed = " ".join(f"{k}={v}" for k, v in result.extra.items())
    return f"{result.case.label}: {result.case.summary}" + (f" (--set {changed})" if changed else "")


def _fmt(value: Optional[float], spec: str, unit: str = "") -> str:
    return "-" if value is None else format(value, spec) + unit


def table(result: CaseResult, device) -> list[list[str]]:
    """Header plus one row of strings per system."""
    header = ["system", "accuracy", "s/round", "x fedcore", "process s", "x fedcore",
              "peak RSS MiB", "GPU MiB", "train FLOP/s", "note"]
    body = []
    for r in rows(result):
        body.append([r.system, _fmt(r.accuracy, ".4f"), _fmt(r.round_s, ".4g"),
                     _fmt(ratio(result, r.system, "round_s"), ".1f", "x"), _fmt(r.process_s, ".2f"),
                     _fmt(ratio(result, r.system, "process_s"), ".1f", "x"), _fmt(r.rss_mb, ".0f"),
                     _fmt(r.gpu_mb, ".0f"), flops_line(r.flops, device) if r.flops else "-", r.note])
    return [header] + body


def environment(device, threads: int, repeat: int, load_before, load_after) -> list[str]:
    """Where and under what load the session ran."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = torch.cuda.get_device_name(device) if torch.device(device).type == "cuda" else "none used"
    load = lambda la: "/".join(f"{x:.1f}" for x in la) if la else "n/a"
    return [f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
            f"host: {cpu}, {os.cpu_count()} logical CPUs; GPU: {gpu}; torch {torch.__version__}",
            f"cores per system: {threads or 'all (torch default threads)'} (OMP_NUM_THREADS for fedcore and "
            f"the loop, concurrent client actors for Flower); repeats: {repeat} (medians)",
            f"load average (1/5/15 min) before: {load(load_before)}, after: {load(load_after)}"]


def render_text(results: list[CaseResult], device, meta: list[str], targets: list[str],
                skipped_cases: list[str]) -> str:
    out = [*meta, ""]
    for result in results:
        t = table(result, device)
        widths = [max(len(row[i]) for row in t) for i in range(len(t[0]))]
        out.append(title(result))
        out += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in t]
        out += [f"  ({s} skipped: {why})" for s, why in result.skipped.items()]
        for m in result.runs.get("fedcore", [])[:1]:
            if m.profile:
                out += ["  profile of one fedcore round:"] + ["    " + line for line in m.profile.splitlines()]
        out.append("")
    out += [f"skipped: {s}" for s in skipped_cases]
    out += ["targets:"] + targets
    return "\n".join(out)


def render_markdown(results: list[CaseResult], device, meta: list[str], targets: list[str],
                    skipped_cases: list[str], command: str) -> str:
    out = [f"Command: `{command}`", ""] + [f"- {line}" for line in meta] + [""]
    for result in results:
        t = table(result, device)
        out += [f"**{title(result)}**; fedcore's process time is `{result.command}`", ""]
        out += ["| " + " | ".join(t[0]) + " |", "|" + "---|" * len(t[0])]
        out += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in t[1:]]
        out += [""] + [f"- {s} skipped: {why}" for s, why in result.skipped.items()]
        for m in result.runs.get("fedcore", [])[:1]:
            if m.profile:
                out += ["", "Profile of one fedcore round:", "", "```", m.profile, "```"]
        out.append("")
    out += [f"- skipped: {s}" for s in skipped_cases]
    out += ["", "Targets:", ""] + targets
    return "\n".join(out) + "\n"


def write_section(path: str, key: str, body: str) -> None:
    """Put ``body`` between ``<!-- bench:key -->`` markers in ``path`` (replacing an earlier
    section of that key, else appending), so hand-written text around it survives."""
    start, end = f"<!-- bench:{key} -->", f"<!-- /bench:{key} -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    file = Path(path)
    text = file.read_text() if file.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
