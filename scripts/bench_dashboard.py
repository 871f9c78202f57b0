"""Time the dashboard in a real browser: Run -> first accuracy point, Run -> whole demo shown.

Starts ``streamlit run app.py`` on a free port with a fresh run store, opens the
Playground in headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright),
and for a few seeds of the ``demo`` preset (each seed is a new config, so nothing is
replayed from the cache) waits until the pre-started worker is ready, presses Run and
records when the accuracy chart shows its first and its last point. Prints one line per
seed and the medians::

    python scripts/bench_dashboard.py [--repeat 3] [--preset demo] [--rounds 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from dashboard_server import dashboard_server

CHROMIUM = "/usr/bin/chromium"


def chart_points(pg) -> int:
    return pg.locator("[data-testid=stPlotlyChart]").first.locator(
        ".scatterlayer .trace").first.locator(".points path").count()


def time_one(pg, url: str, preset: str, rounds: int, seed: int) -> tuple[float, float]:
    pg.goto(f"{url}/?preset={preset}&rounds={rounds}&seed={seed}")
    pg.get_by_text("worker ready").wait_for(timeout=120_000)
    time.sleep(1.0)
    start = time.perf_counter()
    pg.get_by_role("button", name="Run").click()
    first = None
    while True:
        n = chart_points(pg)
        now = time.perf_counter() - start
        if n and first is None:
            first = now
        if n >= rounds:
            return first, now
        if now > 300:
            raise SystemExit(f"the chart showed {n} of {rounds} points after 300 s")
        time.sleep(0.02)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--preset", default="demo")
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args()

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as store, dashboard_server(Path(store), Path(store)) as url:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
            pg = browser.new_page(viewport={"width": 1280, "height": 800})
            firsts, lasts = [], []
            for seed in range(args.repeat):
                first, last = time_one(pg, url, args.preset, args.rounds, seed)
                firsts.append(first)
                lasts.append(last)
                print(f"seed {seed}: first point {first:.2f} s, all {args.rounds} rounds shown {last:.2f} s",
                      flush=True)
            browser.close()
    print(f"median: Run -> first chart point {statistics.median(firsts):.2f} s; "
          f"Run -> all {args.rounds} rounds on the chart {statistics.median(lasts):.2f} s "
          f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
