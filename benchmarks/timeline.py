"""``python -m benchmarks.timeline -- python -m fedcore run ...``: where a run's start-to-exit time goes.

Runs the command, echoes its output, and ends with one JSON line of wall seconds from the start:
the first line printed (Python and the package imports), round 1's line (data, model, CUDA start and
the first round), the last round's line, the ``finished`` line (the run's end: the PLD view, the
final figures) and the exit. Issue 41: W3 on an H100 took 62.7 s start to exit while its engine
reported 43.0 s; this says where the other 20 s are.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time

_ROUND = re.compile(r"round\s+(\d+)/(\d+)")


def timeline(cmd: list[str], echo=print, env=None) -> dict:
    """Run ``cmd`` (stderr folded into stdout; ``env``: its environment, default ours), pass each line to
    ``echo``; the marks in seconds."""
    start = time.perf_counter()
    marks: dict = {"command": " ".join(cmd)}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                          env=env) as proc:
        for line in proc.stdout:
            now = round(time.perf_counter() - start, 3)
            echo(line.rstrip("\n"))
            marks.setdefault("first_output_s", now)
            found = _ROUND.search(line)
            if found:
                marks.setdefault("round_1_s", now)
                marks["last_round_s"], marks["rounds_seen"] = now, int(found.group(1))
            elif line.startswith("finished"):
                marks["finished_s"] = now
    marks["exit_s"] = round(time.perf_counter() - start, 3)
    marks["returncode"] = proc.returncode
    if "last_round_s" in marks:
        marks["after_last_round_s"] = round(marks.get("finished_s", marks["exit_s"]) - marks["last_round_s"], 3)
    return marks


def main(argv: list[str]) -> int:
    cmd = argv[1:] if argv[:1] == ["--"] else argv
    if not cmd:
        print("usage: python -m benchmarks.timeline -- COMMAND ...", file=sys.stderr)
        return 2
    marks = timeline(cmd, echo=lambda line: print(line, flush=True))
    print(json.dumps(marks), flush=True)
    return marks["returncode"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
