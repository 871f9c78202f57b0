"""``streamlit run app.py`` on a free port, for the browser tests and the dashboard benchmark.

    with dashboard_server(store_dir, log_dir) as url:   # e.g. "http://127.0.0.1:41235"
        ...

The server gets its own run store (``FEDCORE_STORE``) and runs offline
(``FEDCORE_OFFLINE=1``); the context waits for ``/_stcore/health`` and stops the server
on exit. If it does not come up within ``start_s`` it raises ``RuntimeError`` with the
tail of its log.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dashboard_server(store: Path, log_dir: Path, start_s: float = 60, app: str = "app.py") -> Iterator[str]:
    """Start the dashboard (or another script ``app``, relative to the repository) with its
    own run store; yield its URL; stop it afterwards."""
    port = free_port()
    env = {**os.environ, "FEDCORE_STORE": str(store), "FEDCORE_OFFLINE": "1"}
    log = open(Path(log_dir) / "streamlit.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", app, "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_s
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError("streamlit did not start:\n" + log.read()[-3000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def round_counter(pg) -> int:
    """The round shown by the page's progress bar ("Round 7 / 40 · running"); 0 before any."""
    bars = pg.locator("[data-testid=stProgress]")
    if not bars.count():
        return 0
    m = re.search(r"Round (\d+) /", bars.first.inner_text())
    return int(m.group(1)) if m else 0
