"""Load test of a shared dashboard: N browser sessions each press Run on the demo at once.

Starts ``streamlit run app.py`` on a loopback port with a fresh run store (or uses
``--url``, which must be a loopback address), opens N separate sessions (one Chromium,
one browser context each: separate cookies, separate Streamlit sessions) on the
Playground with the ``demo`` preset and its own seed, presses Run in every session, and
waits until every session shows its own finished run. Meanwhile a probe process asks
``/_stcore/health`` every half second. Prints, and returns as a dict:

- health latency p50 / p95 / max, the number of samples over 1 s and when they came
  (seconds after the first click): the server's own responsiveness. The probe is a
  process of its own at the server's priority; the browsers run at ``nice 19`` (see
  :func:`nice_processes`: a plain ``nice`` does not reach Playwright's Chromium), and so do
  this harness and its Playwright driver once every click is armed, so their work does
  not count. The clicks are armed in every page first and land together;
- time to first point: Run pressed -> the first point on that session's accuracy chart
  (drawn by a niced browser, so it waits while the workers train), and run created -> its
  first round in the run store (what the server has to show);
- queue wait: the run's creation -> a worker took it (from the run store);
- lost results: sessions that never showed their own finished run, and sessions whose
  page raised an uncaught error (a dead page: see ``pages/components/pacing.py``);
- click -> done per session (median, p95) beside the ideal: one run's CPU seconds (trained here after the
  burst) times the sessions, over the cores; and how soon each page showed its place (its queue position or
  its run's round counter) after its click;
- first click -> last finish, the CPU seconds the server process itself used meanwhile
  (a figure that other load on the machine does not inflate), and the load average.

Bounded: at most 32 sessions and 900 s; never leaves the machine::

    python benchmarks/load_test.py --sessions 20 [--rounds 60] [--timeout 600]
    python benchmarks/load_test.py --sessions 30 --rounds 20 --spread 10   # a class arriving within 10 s

``--shots DIR`` keeps a screenshot and the console log of every session without a result
(and the server's log); ``--trace`` adds every websocket message, one line each.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from dashboard_server import dashboard_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
MAX_SESSIONS = 32
MAX_SECONDS = 900
HEALTH_EVERY_S = 0.5
HEALTH_TIMEOUT_S = 15.0
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--mute-audio"]

ARM_JS = """(at) => {
  window.__lt = {click: null, first: null, finished: null, queued: false, placed: null, status: ''};
  const tick = () => {
    const lt = window.__lt;
    const text = document.body.innerText;
    if (!lt.queued && text.includes('Queued: position')) lt.queued = true;
    if (lt.placed === null && /Queued: position \\d+|Round \\d+ \\/ \\d+|Finished \\d+ rounds/.test(text)) lt.placed = Date.now();
    if (lt.first === null && document.querySelector('[data-testid=stPlotlyChart] .scatterlayer .trace .points path'))
      lt.first = Date.now();
    if (lt.finished === null && /Finished \\d+ rounds/.test(text)) lt.finished = Date.now();
    const m = text.match(/Run failed[^\\n]*|Stopped after[^\\n]*/);
    if (m) lt.status = m[0];
    if (lt.finished === null) setTimeout(tick, 200);
  };
  const press = () => {  // looked up when pressed: the page may have redrawn the button since
    const run = [...document.querySelectorAll('button')].find(
      b => [...b.querySelectorAll('p')].some(p => p.innerText.trim() === 'Run'));
    window.__lt.click = Date.now();
    window.__lt.pressed = Boolean(run);
    if (run) run.click();
    tick();
  };
  setTimeout(press, at - Date.now());
}"""
"""Armed in each page with the moment to press Run; ``placed``: when the page first showed its place
(``Queued: position k of n``, its run's ``Round i / n``, or, for a run over before the page's first redraw
after the click, ``Finished n rounds``: where it stands, past the queue)."""
"""Press Run at the epoch time ``at`` (ms), then watch the page: every session's click is
armed first, so the twenty clicks land together however slowly the niced browsers answer."""


def _parse(message_class, payload):
    """``payload`` parsed as ``message_class``, or a one-line description when it is text or
    cannot be parsed."""
    if isinstance(payload, str):
        return "text " + payload[:100]
    m = message_class()
    try:
        m.ParseFromString(payload)
    except Exception as exc:  # noqa: BLE001
        return f"undecodable {len(payload)} bytes: {exc}"
    return m


def describe_forward(payload) -> str:
    """A server -> browser message in one line: its kind, delta path and fragment, the
    script run and fragments it belongs to (what explained the lost results)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    m = _parse(ForwardMsg, payload)
    if isinstance(m, str):
        return m
    kind = m.WhichOneof("type")
    path = list(m.metadata.delta_path)
    extra = ""
    if kind == "delta":
        d = m.delta
        sub = d.WhichOneof("type")
        extra = f" {sub}"
        if sub == "new_element":
            extra += ":" + str(d.new_element.WhichOneof("type"))
        elif sub == "add_block":
            extra += ":" + str(d.add_block.WhichOneof("type"))
        extra += f" frag={d.fragment_id[:8]}"
    elif kind == "script_finished":
        extra = " " + ForwardMsg.ScriptFinishedStatus.Name(m.script_finished)
    elif kind == "auto_rerun":
        extra = f" every={m.auto_rerun.interval} frag={m.auto_rerun.fragment_id[:8]}"
    elif kind == "stop_auto_rerun":
        extra = " " + ",".join(f[:8] for f in m.stop_auto_rerun.fragment_ids)
    elif kind == "session_status_changed":
        extra = f" running={m.session_status_changed.script_is_running}"
    run = m.metadata.run
    return (f"{kind}{extra} path={path} run={run.script_run_id[:8]} "
            f"frags={[f[:8] for f in run.fragment_ids]}")


def describe_back(payload) -> str:
    """A browser -> server message in one line (a rerun: its fragment, auto or not, triggers)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    m = _parse(BackMsg, payload)
    if isinstance(m, str):
        return m
    kind = m.WhichOneof("type")
    if kind == "rerun_script":
        r = m.rerun_script
        triggers = [w.id[-30:] for w in r.widget_states.widgets
                    if w.WhichOneof("value") == "trigger_value" and w.trigger_value]
        return (f"rerun frag={r.fragment_id[:8]} auto={r.is_auto_rerun} q={r.query_string[-40:]} "
                f"widgets={len(r.widget_states.widgets)} triggers={triggers}")
    return str(kind)


def watch_page(pg, trace: bool = False) -> dict:
    """Collect ``pg``'s uncaught errors (``"errors"``), and its console messages and
    errors with times (``"lines"``); with ``trace`` also every websocket message, one line
    each (``<`` from the server, ``>`` to it)."""
    log = {"errors": [], "lines": []}
    lines = log["lines"]
    pg.on("console", lambda m: lines.append(f"{time.time():.3f} console.{m.type}: {m.text[:500]}"))
    pg.on("pageerror", lambda e: (log["errors"].append(str(e)[:300]),
                                  lines.append(f"{time.time():.3f} page error: {str(e)[:2000]}")))
    pg.on("crash", lambda _: (log["errors"].append("the tab crashed"), lines.append(f"{time.time():.3f} crash")))
    if trace:
        def on_websocket(ws):
            lines.append(f"{time.time():.3f} websocket {ws.url}")
            ws.on("close", lambda _: lines.append(f"{time.time():.3f} websocket closed"))
            ws.on("framereceived", lambda p: lines.append(f"{time.time():.3f} < {describe_forward(p)}"))
            ws.on("framesent", lambda p: lines.append(f"{time.time():.3f} > {describe_back(p)}"))
        pg.on("websocket", on_websocket)
    return log


PROBE_CODE = """
import sys, time, urllib.request
url, every, timeout = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
while True:
    t0 = time.perf_counter()
    try:
        urllib.request.urlopen(url, timeout=timeout).read()
        ok = 1
    except OSError:
        ok = 0
    lat = time.perf_counter() - t0
    print(f"{time.time():.3f} {lat:.4f} {ok}", flush=True)
    time.sleep(max(0.0, every - lat))
"""


class HealthProbe:
    """Samples ``/_stcore/health`` every :data:`HEALTH_EVERY_S` seconds until stopped, from a
    process of its own at the server's priority: neither the harness's interpreter lock nor
    its niceness (the harness and its Playwright driver end up niced, like the browsers) counts
    in the latency. ``samples``: ``(time, latency, ok)`` after :meth:`stop`."""

    def __init__(self, url: str):
        self.url, self.samples, self._proc = url + "/_stcore/health", [], None

    def start(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", PROBE_CODE, self.url, str(HEALTH_EVERY_S),
                                       str(HEALTH_TIMEOUT_S)], stdout=subprocess.PIPE, text=True)

    def stop(self) -> None:
        self._proc.terminate()
        out, _ = self._proc.communicate(timeout=HEALTH_TIMEOUT_S + 5)
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3:
                self.samples.append((float(parts[0]), float(parts[1]), parts[2] == "1"))


def descendants(root: int) -> list[int]:
    """Every living process below ``root`` (children, grandchildren, ...)."""
    parent = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parent[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], [root]
    while frontier:
        kids = [pid for pid, ppid in parent.items() if ppid in frontier]
        found += kids
        frontier = kids
    return found


def nice_processes(nice: int, browsers: bool) -> int:
    """Lower the priority of this harness's browsers (``browsers``), or of the harness itself
    and its Playwright driver, never of the server, its workers or the health probe; returns
    how many processes were reached.

    ``nice`` on the command line would not be enough: Playwright starts Chromium in a
    session of its own (``setsid``), and with the kernel's autogroups
    (``/proc/sys/kernel/sched_autogroup_enabled``) each session is one scheduling group that
    competes with the server's session as an equal, whatever the niceness inside; run as
    root, Chromium also raises some of its threads to nice -8; and on Linux a niceness
    belongs to one thread. So this sets the niceness of each browser session's autogroup
    (``/proc/<pid>/autogroup``, which also covers renderers started later) and of every
    thread of every process reached."""
    own = os.getsid(0)
    reached = 0
    for pid in [os.getpid(), *descendants(os.getpid())]:
        try:
            other_session = os.getsid(pid) != own
            driver = b"playwright" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # gone
        if other_session != browsers or not (other_session or driver or pid == os.getpid()):
            continue  # the server, its workers, the probe; or the other kind
        if other_session:
            try:
                Path(f"/proc/{pid}/autogroup").write_text(str(nice))
            except OSError:
                pass
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                os.setpriority(os.PRIO_PROCESS, int(task.name), nice)
            except (OSError, ValueError):
                pass
        reached += 1
    return reached


def server_pid(url: str):
    """The pid of the streamlit process serving ``url``'s port (None if not found here)."""
    port = str(urllib.parse.urlparse(url).port)
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(args) and port.encode() in args:
            return int(proc.name)
    return None


def cpu_seconds(pid) -> float:
    """User + system CPU seconds of ``pid`` so far (0 when unknown)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def check_loopback(url: str) -> None:
    host = urllib.parse.urlparse(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"--url must be a loopback address (127.0.0.1 / localhost); got {host!r}")


def drive(url: str, sessions: int, rounds: int, timeout: float, nice: int, shots=None,
          trace: bool = False, spread: float = 0.0) -> dict:
    """Open the sessions, press Run in each (together, or one after another over ``spread`` s: a class
    arriving), wait for every finish; returns per-session data."""
    from playwright.sync_api import sync_playwright

    out = {"sessions": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        nice_processes(nice, browsers=True)  # the autogroup: renderers started later are in it
        pages, logs = [], []
        for i in range(sessions):
            context = browser.new_context(viewport={"width": 1100, "height": 800})
            pg = context.new_page()
            pg.set_default_timeout(timeout * 1000)
            logs.append(watch_page(pg, trace))
            pg.goto(f"{url}/?preset=demo&rounds={rounds}&seed={1000 + i}")
            pages.append(pg)
        out["browser_processes_niced"] = nice_processes(nice, browsers=True)  # and every renderer's threads
        for pg in pages:
            pg.get_by_role("button", name="Run").wait_for()
            pg.wait_for_function("!document.querySelector('[data-testid=stStatusWidget]')")
        pid = server_pid(url)
        cpu0 = cpu_seconds(pid)
        t_first_click = time.time() + 3 + 0.25 * sessions
        for i, pg in enumerate(pages):
            pg.evaluate(ARM_JS, (t_first_click + spread * i / max(1, sessions - 1)) * 1000)
        nice_processes(nice, browsers=False)  # the harness and its driver from now on
        time.sleep(max(0.0, t_first_click - time.time()))
        deadline = time.monotonic() + timeout
        pending, report = set(range(sessions)), time.monotonic() + 10
        while pending and time.monotonic() < deadline:
            for i in list(pending):
                lt = pages[i].evaluate("window.__lt")
                if lt["finished"] is not None or lt["status"]:
                    pending.discard(i)
            if time.monotonic() > report:
                print(f"  {time.time() - t_first_click:.0f} s: {sessions - len(pending)} of {sessions} done",
                      file=sys.stderr, flush=True)
                report = time.monotonic() + 10
            time.sleep(0.5)
        for i, pg in enumerate(pages):
            lt = pg.evaluate("window.__lt")
            if shots and (trace or lt["finished"] is None):
                (Path(shots) / f"session-{i}.log").write_text("\n".join(logs[i]["lines"]) + "\n")
            if lt["finished"] is None and shots:
                pg.screenshot(path=str(Path(shots) / f"lost-session-{i}.png"), full_page=True)
            lt["page_errors"] = logs[i]["errors"]
            run_id = pg.evaluate("new URLSearchParams(location.search).get('run')")
            out["sessions"].append({"seed": 1000 + i, "run": run_id, **lt})
        out["first_click"] = t_first_click
        out["server_cpu_s"] = cpu_seconds(pid) - cpu0 if pid else None
        out["server_wall_s"] = time.time() - t_first_click
        browser.close()
    return out


def summarise(data: dict, health: list, store_dir: Path) -> dict:
    from fedcore.runner import JobStore

    store = JobStore(store_dir)
    t0 = data["first_click"]
    finishes = [s["finished"] / 1000 for s in data["sessions"] if s["finished"]]
    t_end = max(finishes) if finishes else time.time()
    during = [(lat, ok) for (t, lat, ok) in health if t0 <= t <= t_end + 1]
    lat = [x for x, _ in during]
    firsts = [(s["first"] - s["click"]) / 1000 for s in data["sessions"] if s["first"] and s["click"]]
    clicks = [s["click"] / 1000 for s in data["sessions"] if s["click"]]
    placed = [(s["placed"] - s["click"]) / 1000 for s in data["sessions"] if s.get("placed") and s["click"]]
    done = [(s["finished"] - s["click"]) / 1000 for s in data["sessions"] if s["finished"] and s["click"]]
    waits, stored, lost = [], [], []
    for s in data["sessions"]:
        record = store.get_job_dict(s["run"]) if s["run"] else None
        ok = (s["finished"] is not None and record is not None and record["status"] == "finished"
              and record["config"]["seed"] == s["seed"])
        if not ok:
            lost.append({"seed": s["seed"], "run": s["run"], "status": record and record["status"],
                         "page": s["status"] or ("finished" if s["finished"] else
                                                    "no result" if s.get("pressed") else "Run not pressed"),
                         "page_errors": s.get("page_errors", [])[:3]})
        if record and record.get("started"):
            waits.append(record["started"] - record["created"])
            events = store.read_events(s["run"], touch=False)
            first_round = next((e for e in events if e.get("type") == "round"), None)
            if first_round is not None:
                stored.append(waits[-1] + first_round["elapsed"])
    return {
        "sessions": len(data["sessions"]),
        "first_click_epoch_s": round(t0, 3),
        "health_p50_s": round(percentile(lat, 0.5), 3), "health_p95_s": round(percentile(lat, 0.95), 3),
        "health_max_s": round(max(lat), 3) if lat else None,
        "health_samples": len(lat), "health_over_1s": sum(x > 1.0 for x in lat),
        "health_failures": sum(not ok for _, ok in during),
        "health_slow_at": [[round(t - t0, 1), round(x, 2)] for (t, x, _) in health
                           if t0 <= t <= t_end + 1 and x > 1.0],
        "first_point_median_s": round(statistics.median(firsts), 2) if firsts else None,
        "first_point_max_s": round(max(firsts), 2) if firsts else None,
        "first_round_stored_median_s": round(statistics.median(stored), 2) if stored else None,
        "first_round_stored_max_s": round(max(stored), 2) if stored else None,
        "queue_wait_median_s": round(statistics.median(waits), 2) if waits else None,
        "queue_wait_max_s": round(max(waits), 2) if waits else None,
        "first_click_to_last_finish_s": round(t_end - t0, 1),
        "clicks_within_s": round(max(clicks) - min(clicks), 2) if clicks else None,
        "placed_max_s": round(max(placed), 2) if placed else None,
        "placed_missing": len(data["sessions"]) - len(placed),
        "click_to_done_median_s": round(statistics.median(done), 1) if done else None,
        "click_to_done_p95_s": round(percentile(done, 0.95), 1) if done else None,
        "run_cpu_s": data.get("run_cpu_s"),
        "ideal_s": (round(data["run_cpu_s"] * len(data["sessions"]) / (os.cpu_count() or 1), 1)
                    if data.get("run_cpu_s") else None),
        "server_cpu_s": round(data["server_cpu_s"], 1) if data.get("server_cpu_s") is not None else None,
        "server_cpu_share": (round(data["server_cpu_s"] / data["server_wall_s"], 2)
                             if data.get("server_cpu_s") is not None else None),
        "lost_results": len(lost), "lost": lost,
        "page_errors": sum(bool(s.get("page_errors")) for s in data["sessions"]),
        "load_average": round(os.getloadavg()[0], 2),
        "browser_processes_niced": data.get("browser_processes_niced"),
    }


def run_cpu_seconds(rounds: int) -> float:
    """CPU seconds of one session's run trained here, as a worker trains it (the live attack watch on):
    the burst's ideal is the sessions' runs' CPU over the cores."""
    from fedcore.attacks.watch import live_watch
    from fedcore.engine import iter_run
    from fedcore.resolve import preset_config

    cfg = preset_config("demo").replace(rounds=rounds, seed=999)
    for _ in iter_run(cfg.replace(rounds=1), watch=live_watch):   # imports and data loaded, as in a warm worker
        pass
    start = time.process_time()
    for _ in iter_run(cfg, watch=live_watch):
        pass
    return round(time.process_time() - start, 2)


def run_load_test(sessions: int = 4, rounds: int = 60, timeout: float = 300, nice: int = 19,
                  url: str | None = None, shots: str | None = None, trace: bool = False,
                  spread: float = 0.0) -> dict:
    """Drive ``sessions`` browsers against a fresh server (or ``url``); returns the summary.

    ``shots``: a folder for a screenshot and the console log of every session that showed
    no result (and the server's log); ``trace``: also every session's websocket messages."""
    if not 1 <= sessions <= MAX_SESSIONS:
        raise SystemExit(f"--sessions must be 1..{MAX_SESSIONS}")
    timeout = min(float(timeout), MAX_SECONDS)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store = tmp / "store"
        if url:
            check_loopback(url)
            probe = HealthProbe(url)
            probe.start()
            data = drive(url, sessions, rounds, timeout, nice, shots, trace, spread)
            probe.stop()
            data["run_cpu_s"] = run_cpu_seconds(rounds)
            store = Path(os.environ.get("FEDCORE_STORE", store))
            return summarise(data, probe.samples, store)
        with dashboard_server(store, tmp) as local:
            probe = HealthProbe(local)
            probe.start()
            try:
                data = drive(local, sessions, rounds, timeout, nice, shots, trace, spread)
                data["run_cpu_s"] = run_cpu_seconds(rounds)
            finally:
                probe.stop()
                if shots:
                    (Path(shots) / "streamlit.log").write_text((tmp / "streamlit.log").read_text())
            return summarise(data, probe.samples, store)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=4, help=f"browser sessions (1..{MAX_SESSIONS})")
    p.add_argument("--rounds", type=int, default=60, help="rounds of each demo run")
    p.add_argument("--timeout", type=float, default=300, help=f"seconds to wait for all runs (<= {MAX_SECONDS})")
    p.add_argument("--nice", type=int, default=19, help="niceness of the browsers and of this harness")
    p.add_argument("--url", help="an already running dashboard on this machine (loopback only)")
    p.add_argument("--json", help="also write the summary to this file")
    p.add_argument("--shots", help="save a screenshot and the console log of every session that showed no "
                                   "result (and the server's log) in this folder")
    p.add_argument("--trace", action="store_true", help="with --shots: log every session's websocket messages")
    p.add_argument("--spread", type=float, default=0.0,
                   help="press Run one session after another over this many seconds (a class arriving; 0: together)")
    args = p.parse_args(argv)
    if args.trace and not args.shots:
        p.error("--trace needs --shots (the folder for the logs)")
    if args.shots:
        Path(args.shots).mkdir(parents=True, exist_ok=True)
    summary = run_load_test(args.sessions, args.rounds, args.timeout, args.nice, args.url, args.shots, args.trace,
                            args.spread)
    lines = [
        f"sessions {summary['sessions']}, load average {summary['load_average']}, "
        f"browser processes niced: {summary['browser_processes_niced']}",
        f"health: p50 {summary['health_p50_s']} s, p95 {summary['health_p95_s']} s, max {summary['health_max_s']} s "
        f"({summary['health_over_1s']} of {summary['health_samples']} samples over 1 s, "
        f"{summary['health_failures']} failed)"
        + (f"; slow samples at [s after the first click, latency]: {summary['health_slow_at']}"
           if summary["health_slow_at"] else ""),
        f"time to first point (drawn by the niced browser): median {summary['first_point_median_s']} s, "
        f"max {summary['first_point_max_s']} s; run created -> first round in the store: median "
        f"{summary['first_round_stored_median_s']} s, max {summary['first_round_stored_max_s']} s",
        f"queue wait: median {summary['queue_wait_median_s']} s, max {summary['queue_wait_max_s']} s",
        f"first click -> last finish: {summary['first_click_to_last_finish_s']} s (the clicks within "
        f"{summary['clicks_within_s']} s); server process CPU "
        f"{summary['server_cpu_s']} s ({summary['server_cpu_share']} of one core)",
        f"click -> done: median {summary['click_to_done_median_s']} s, p95 {summary['click_to_done_p95_s']} s; "
        f"ideal {summary['ideal_s']} s (one run's {summary['run_cpu_s']} CPU-s x {summary['sessions']} over "
        f"{os.cpu_count()} cores); each page showed its place within {summary['placed_max_s']} s of its click "
        f"({summary['placed_missing']} never)",
        f"lost results: {summary['lost_results']}" + (f" {summary['lost']}" if summary["lost"] else "")
        + f"; sessions with a page error: {summary['page_errors']}",
    ]
    print("\n".join(lines), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if summary["lost_results"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
