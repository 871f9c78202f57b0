"""The default equal-privacy frontier, whole command, and the Frontier page's worker on the same spec.

    python -m benchmarks.fair_frontier [--seeds 3] [--page] [--load N]

Side by side in one run on this machine (issues 21, 24 and 32):

1. ``python -m fedcore sweep --preset demo --match headline --epsilons 1,...,1e5 --seeds 3`` as a
   fresh process: the whole command (imports, calibration, training), wall and CPU seconds;
2. the Frontier page's worker (:func:`fedcore.sweep.job.sweep_main`, what Train runs) on the same
   spec (:data:`fedcore.sweep.shipped.DEFAULT_SPEC`) in a fresh process: total, and when its
   first row reached the rows file the page polls;
3. with ``--page``: the Frontier page itself, in Debian's Chromium on a dashboard of its own (its
   link, then *Train frontier*), until the button reads *Trained*: the worker plus a browser
   polling a Streamlit server that redraws the figure as rows arrive.

``--load N`` starts N busy processes, each in a session (and so a scheduler autogroup) of its
own as another user's work would be, for the whole measurement (a busy machine: load >= N).

Prints one line per system and the load average before and after each (the 2 cores are shared).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli(spec, out: Path) -> dict:
    eps = ",".join(f"{e:g}" for e in spec.epsilons)
    cmd = [sys.executable, "-m", "fedcore", "sweep", "--preset", spec.preset, "--match", spec.match,
           "--scenario", spec.scenario, "--epsilons", eps, "--seeds", str(spec.seeds), "--out", str(out)]
    load, c0, t0 = _load(), _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return {"system": "CLI sweep", "command": " ".join(cmd[1:]), "wall_s": time.perf_counter() - t0,
            "cpu_s": _children_cpu() - c0, "first_row_s": None, "load_before": load, "load_after": _load(),
            "rows": len(json.loads(out.read_text())["rows"])}


def page_worker(spec, folder: Path) -> dict:
    from fedcore.runner.store import JobStore
    from fedcore.sweep.job import rows_path, spec_key, sweep_fields, sweep_id

    key = spec_key(spec)
    store = JobStore(folder)
    store.create_job(sweep_id(key), "sweep", **sweep_fields(spec))
    code = ("from fedcore.sweep.job import sweep_main; "
            f"sweep_main({str(folder)!r}, {sweep_id(key)!r})")
    rows_file = rows_path(folder, key)
    load, c0, t0 = _load(), _children_cpu(), time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code])
    first = None
    while proc.poll() is None:
        if first is None and rows_file.exists():
            first = time.perf_counter() - t0
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    status = store.get_job_dict(sweep_id(key))
    return {"system": "Frontier page worker", "command": "fedcore.sweep.job.sweep_main (the page's Train)",
            "wall_s": wall, "cpu_s": _children_cpu() - c0, "first_row_s": first, "load_before": load,
            "load_after": _load(), "rows": len(json.loads(rows_file.read_text())["rows"]),
            "status": status["status"]}


def page(spec, folder: Path) -> dict:
    """The Frontier page in a browser: its link, *Train frontier*, until the button reads *Trained*."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from dashboard_server import BROWSER_ARGS, CHROMIUM, dashboard_server, fresh_page, settle
    from fedcore.sweep.job import rows_path, spec_key

    link = "&".join(f"{k}={v}" for k, v in {
        "preset": spec.preset, "scenario": spec.scenario, "match": spec.match, "seeds": spec.seeds,
        "methods": ",".join(spec.methods), "eps": ",".join(f"{e:g}" for e in spec.epsilons)}.items())
    rows_file = rows_path(folder, spec_key(spec))
    with dashboard_server(folder, folder) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        with fresh_page(browser, 1280, 900) as pg:
            pg.set_default_timeout(600_000)
            pg.goto(f"{url}/frontier?{link}")
            button = pg.get_by_role("button", name="Train frontier")
            button.wait_for()
            settle(pg, 1.0)
            load, t0 = _load(), time.perf_counter()
            button.click()
            first = None
            while not pg.get_by_role("button", name="Trained").count():
                if first is None and rows_file.exists():
                    first = time.perf_counter() - t0
                time.sleep(0.1)
            wall = time.perf_counter() - t0
        browser.close()
    return {"system": "Frontier page (browser)", "command": f"/frontier?{link}, Train frontier", "wall_s": wall,
            "cpu_s": float("nan"), "first_row_s": first, "load_before": load, "load_after": _load(),
            "rows": len(json.loads(rows_file.read_text())["rows"])}


def busy(n: int) -> list:
    """``n`` busy loops, each in a new session: another user's processes, in autogroups of their own.
    A SIGTERM (``timeout``) ends this script through its ``finally``, which kills them."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(n)]


def main(argv=None) -> int:
    from dataclasses import replace

    from fedcore.sweep.shipped import DEFAULT_SPEC

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=DEFAULT_SPEC.seeds)
    p.add_argument("--page", action="store_true", help="also the Frontier page in a browser")
    p.add_argument("--load", type=int, default=0, help="busy processes beside the measurement")
    args = p.parse_args(argv)
    spec = replace(DEFAULT_SPEC, seeds=args.seeds)
    load = busy(args.load)
    systems = [lambda tmp: cli(spec, tmp / "frontier.json"), lambda tmp: page_worker(spec, tmp / "worker")]
    systems += [lambda tmp: page(spec, tmp / "page")] if args.page else []
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for measure in systems:          # each printed as it ends: a long run under load keeps what it measured
                r = measure(Path(tmp))
                results.append(r)
                first = "" if r["first_row_s"] is None else f", first row after {r['first_row_s']:.1f} s"
                ratio = f"; {r['wall_s'] / results[0]['wall_s']:.2f}x the CLI" if len(results) > 1 else ""
                print(f"{r['system']:<24} {r['rows']} runs: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU-s{first} "
                      f"(load average {r['load_before']} -> {r['load_after']}){ratio}", flush=True)
    finally:
        for proc in load:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
