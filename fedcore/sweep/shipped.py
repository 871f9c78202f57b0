"""The Frontier page's default frontier, trained once and shipped in the repository.

A class should not wait two minutes for the first picture: the default equal-privacy
frontier of the demo (:data:`DEFAULT_SPEC`, the Frontier page's default view) is stored in
``assets/frontier/default.json`` with the spec and the command that made it, and the page
shows it at once. ``tests/test_shipped_frontier.py`` retrains some of its points and checks
they give the stored numbers, so the file cannot drift from what the code produces.

Regenerate it (about a minute on a 2-core CPU)::

    python -m fedcore.sweep.shipped
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

from .spec import SweepSpec

DEFAULT_SPEC = SweepSpec(preset="demo", scenario="iid", match="headline",
                         epsilons=(1.0, 10.0, 100.0, 1000.0, 1e4, 1e5), seeds=3)
"""The Frontier page's default view: the five papers' methods at equal privacy, ε 1 .. 10^5."""
PATH = Path(__file__).resolve().parents[2] / "assets" / "frontier" / "default.json"
COMMAND = "python -m fedcore.sweep.shipped"


def shipped(key: str) -> Optional[dict]:
    """``{"key", "spec", "command", "rows"}`` of the shipped frontier whose spec key is ``key``."""
    from .job import spec_key

    try:
        data = json.loads(PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if spec_key(DEFAULT_SPEC) == key == data.get("key") else None


def main() -> None:
    """Train :data:`DEFAULT_SPEC` (lockstep batches, as the CLI) and write :data:`PATH`."""
    from .job import spec_key, spec_to_dict
    from .rows import summary_table
    from .runner import run_sweep

    t0 = time.perf_counter()
    rows = list(run_sweep(DEFAULT_SPEC.points()))
    seconds = time.perf_counter() - t0
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(json.dumps({"key": spec_key(DEFAULT_SPEC), "spec": spec_to_dict(DEFAULT_SPEC),
                                "command": COMMAND, "rows": rows},
                               allow_nan=False, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(summary_table(rows))
    print(f"\n{len(rows)} runs in {seconds:.1f} s -> {PATH}")


if __name__ == "__main__":
    main()
