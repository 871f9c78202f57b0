"""Start-up cost of ``python -m fedcore run --preset demo``: time to the first round.

The dashboard should show round 1 within 2 s of pressing Run. A warm worker pool
(:mod:`fedcore.runner`) hides most of it; what is left for a cold process is measured
here: wall time from ``exec`` to the first ``round 1/..`` line on stdout, to the end of
the process, and ``python -X importtime``'s self time summed per top-level package
(which packages the start-up pays for).
"""
from __future__ import annotations

import subprocess
import sys
from collections import Counter
from statistics import median

from .measure import thread_env
from .timeline import timeline

DEMO = [sys.executable, "-m", "fedcore", "run", "--preset", "demo"]


def time_to_first_round(cmd: list[str] = DEMO, threads: int = 1) -> tuple[float, float]:
    """``(seconds to the first round's line, seconds to exit)`` of one run of ``cmd``."""
    marks = timeline(cmd, echo=lambda _line: None, env=thread_env(threads))
    if marks["returncode"] != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {marks['returncode']}")
    return marks.get("round_1_s", marks["exit_s"]), marks["exit_s"]


def import_self_times(cmd: list[str] = DEMO, threads: int = 1) -> Counter:
    """Seconds of ``-X importtime`` self time per top-level package for one run of ``cmd``."""
    run = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True, text=True,
                         env=thread_env(threads))
    per_package: Counter = Counter()
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, _, name = line.split(":", 1)[1].split("|")
        per_package[name.strip().split(".")[0]] += int(self_us) / 1e6
    return per_package


def measure_startup(repeat: int = 5, threads: int = 1) -> dict:
    """Medians over ``repeat`` cold runs, and the median import self time per package."""
    runs = [time_to_first_round(DEMO, threads) for _ in range(repeat)]
    imports = [import_self_times(DEMO, threads) for _ in range(max(1, repeat // 2))]
    packages = {p for c in imports for p in c}
    per_package = {p: median(c.get(p, 0.0) for c in imports) for p in packages}
    return {"first_round": median(r[0] for r in runs), "total": median(r[1] for r in runs),
            "first_round_all": [r[0] for r in runs], "imports": per_package, "repeat": repeat,
            "command": " ".join(["python", *DEMO[1:]])}


def render_startup(result: dict, top: int = 8) -> str:
    """Markdown lines: the medians, every run's time to round 1, the costliest imports."""
    runs = ", ".join(f"{s:.2f}" for s in result["first_round_all"])
    lines = [f"`{result['command']}`, {result['repeat']} cold runs (medians):", "",
             f"- first round printed after **{result['first_round']:.2f} s** (runs: {runs})",
             f"- process exits after {result['total']:.2f} s", "",
             "| package | import self time, s |", "|---|---|"]
    ranked = sorted(result["imports"].items(), key=lambda kv: -kv[1])[:top]
    lines += [f"| {name} | {seconds:.2f} |" for name, seconds in ranked]
    return "\n".join(lines)
