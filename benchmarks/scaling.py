"""``python -m fedcore bench scaling``: one round's cost as the number of clients grows.

The case of issue 14: MNIST, logistic regression, IID, every client every round, 1 local
epoch of batch 32 (the 60,000 training images once per round however many clients hold
them), FedAvg, with 100, 1000 and 6000 clients. Its **bound** is the same training FLOPs
done densely: one forward + backward of the model over all 60,000 samples at once (one
matrix product each way for a linear model), timed in the same process, with the same
threads, right before every round (the machine is shared: a bound taken at another
moment would not compare). Reported per client count, medians over the measured rounds
(round 1 warms up): seconds per round (wall, ``RoundEvent.seconds``, and process CPU),
the bound, the ratio round / bound (wall and CPU), achieved training FLOP/s (forward
FLOPs x 3 x samples, as :mod:`benchmarks.measure` counts) against the bound's, final
accuracy and the process's peak RSS. Each client count runs in a fresh process
(``python -m benchmarks.scaling``), so its peak memory is its own.
Targets (issue 14): round <= 3x the bound at 1000 clients, <= 5x at 6000.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

CLIENTS = (100, 1000, 6000)
TARGETS = {1000: 3.0, 6000: 5.0}
"""Clients -> the largest round / bound ratio the issue accepts."""
CASE = {"dataset": "mnist", "model": "logreg", "partition.kind": "iid", "participation": 1.0,
        "sampling": "fixed", "local.epochs": 1, "local.batch_size": 32, "local.lr": 0.1, "method": "fedavg"}
BOUND_BYTES = 256 * 2**20
"""Activations per forward of the dense bound (logistic regression: all 60,000 samples at once)."""


def case_args(clients: int, rounds: int, device: str, extra: Optional[list[str]] = None) -> list[str]:
    """``--set`` items of the case (``extra`` last, so it wins)."""
    items = {**CASE, "num_clients": clients, "rounds": rounds, "device": device}
    return [f"{k}={v}" for k, v in items.items()] + list(extra or [])


def dense_step(model, x, y):
    """``step() -> (wall s, CPU s)``: one forward + backward of ``model`` over all of ``(x, y)``
    (in slices of at most :data:`BOUND_BYTES` of activations), gradients of the mean loss."""
    import torch
    import torch.nn.functional as F

    floats = []
    hooks = [m.register_forward_hook(lambda _m, _i, out: floats.append(out[0].numel()))
             for m in model.modules() if not list(m.children())]
    with torch.no_grad():
        model(x[:1])
    for h in hooks:
        h.remove()
    chunk = max(1, BOUND_BYTES // (4 * max(1, sum(floats))))
    params = [p for p in model.parameters()]

    def step():
        sync = torch.cuda.synchronize if x.device.type == "cuda" else (lambda: None)
        sync()
        t, c = time.perf_counter(), time.process_time()
        for i in range(0, len(y), chunk):
            loss = F.cross_entropy(model(x[i:i + chunk]), y[i:i + chunk], reduction="sum") / len(y)
            torch.autograd.grad(loss, params)
        sync()
        return time.perf_counter() - t, time.process_time() - c
    return step


def measure(clients: int, rounds: int, device: str, extra: Optional[list[str]] = None) -> dict:
    """Run the case with ``clients`` here; per-round wall/CPU seconds with the bound before each."""
    import torch

    from fedcore.engine import iter_run
    from fedcore.engine.setup import prepare
    from fedcore.events import RoundEvent
    from fedcore.layering import build_config
    from fedcore.models import count_flops

    cfg = build_config(None, None, case_args(clients, rounds, device, extra))
    setup = prepare(cfg)
    bound = dense_step(setup.model, setup.x_train, setup.y_train)
    events = iter_run(cfg, setup=setup)
    next(events)  # RunStarted
    rows, accuracy = [], None
    while True:
        b = min(bound() for _ in range(3))  # the bound's best of 3, right before the round
        c0 = time.process_time()
        event = next(events)
        cpu = time.process_time() - c0
        if not isinstance(event, RoundEvent):
            break
        rows.append({"wall": event.seconds, "cpu": cpu, "bound_wall": b[0], "bound_cpu": b[1],
                     "load": os.getloadavg()[0]})
        accuracy = event.accuracy
    samples = len(setup.y_train) * cfg.local.epochs
    return {"clients": clients, "rounds": rows[1:] or rows, "accuracy": accuracy, "samples": samples,
            "flops_per_sample": count_flops(setup.model.cpu(), tuple(setup.x_train.shape[1:])),
            "threads": torch.get_num_threads(), "device": str(setup.device),
            "peak_gpu_mb": (torch.cuda.max_memory_allocated() / 2**20 if setup.device.type == "cuda" else None)}


def summarize(result: dict) -> dict:
    """Medians of one client count's rounds, ratios, FLOP/s."""
    rows = result["rounds"]
    med = lambda key: statistics.median(r[key] for r in rows)
    flops = 3 * result["flops_per_sample"] * result["samples"]
    out = {"clients": result["clients"], "wall": med("wall"), "cpu": med("cpu"), "bound_wall": med("bound_wall"),
           "bound_cpu": med("bound_cpu"), "ratio_wall": statistics.median(r["wall"] / r["bound_wall"] for r in rows),
           "ratio_cpu": statistics.median(r["cpu"] / max(r["bound_cpu"], 1e-9) for r in rows),
           "spread": (min(r["wall"] for r in rows), max(r["wall"] for r in rows)),
           "load": med("load"), "accuracy": result["accuracy"], "rss_mb": result.get("rss_mb"),
           "gpu_mb": result.get("peak_gpu_mb"), "rounds": len(rows)}
    out["flops"], out["bound_flops"] = flops / out["wall"], flops / out["bound_wall"]
    return out


def render(summaries: list[dict], device) -> str:
    """The scaling table (markdown) and the targets."""
    from .roofline import flops_line

    lines = ["| clients | s/round (wall) | spread | CPU s/round | bound s (wall / CPU) | round / bound (wall) "
             "| (CPU) | train FLOP/s | bound FLOP/s | accuracy | peak RSS MiB | GPU MiB | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        rss = "-" if s.get("rss_mb") is None else f"{s['rss_mb']:.0f}"
        gpu = "-" if s.get("gpu_mb") is None else f"{s['gpu_mb']:.0f}"
        lines.append(
            f"| {s['clients']} | {s['wall']:.3f} | {s['spread'][0]:.3f}-{s['spread'][1]:.3f} | {s['cpu']:.3f} | "
            f"{s['bound_wall']:.4f} / {s['bound_cpu']:.4f} | **{s['ratio_wall']:.1f}x** | {s['ratio_cpu']:.1f}x | "
            f"{flops_line(s['flops'], device)} | {flops_line(s['bound_flops'], device)} | {s['accuracy']:.4f} | "
            f"{rss} | {gpu} | {s['load']:.1f} |")
    lines += ["", "Targets (issue 14, judged on the wall ratio):", ""]
    by = {s["clients"]: s for s in summaries}
    for n, limit in TARGETS.items():
        s = by.get(n)
        if s is None:
            lines.append(f"- [not run] {n} clients: round <= {limit:g}x the bound")
        else:
            ok = s["ratio_wall"] <= limit
            lines.append(f"- [{'MET' if ok else 'MISSED'}: {s['ratio_wall']:.1f}x] {n} clients: round <= {limit:g}x "
                         f"the bound (CPU time ratio {s['ratio_cpu']:.1f}x)")
    return "\n".join(lines)


def run_scaling_bench(args) -> int:
    """``python -m fedcore bench scaling``: one fresh process per client count."""
    from fedcore.engine.device import resolve_device
    from fedcore.layering import build_config
    from .measure import run_process
    from .report import environment, write_section

    device = resolve_device(args.device)
    extra = list(args.set or [])
    rounds = 1 + 2 * max(1, args.repeat)  # round 1 warms up; 2 x --repeat rounds are measured
    clients = CLIENTS[:2] if args.quick else CLIENTS
    build_config(None, None, case_args(clients[0], rounds, device.type, extra))  # a bad --set fails here
    load_before = os.getloadavg()
    summaries = []
    for n in clients:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "result.json"
            cmd = [sys.executable, "-m", "benchmarks.scaling", str(n), str(rounds), device.type, str(out), *extra]
            wall, rss, code, output = run_process(cmd, args.threads, timeout=3600)
            if code != 0 or not out.is_file():
                tail = output.strip().splitlines()[-1] if output.strip() else ""
                print(f"scaling: {n} clients failed (exit {code}): {tail}", flush=True)
                return 1
            result = json.loads(out.read_text())
        result["rss_mb"] = rss
        s = summarize(result)
        summaries.append(s)
        print(f"  {n:5d} clients: {s['wall']:.3f} s/round, bound {s['bound_wall']:.4f} s, "
              f"{s['ratio_wall']:.1f}x (CPU {s['ratio_cpu']:.1f}x), acc {s['accuracy']:.4f}, "
              f"peak RSS {rss:.0f} MiB, load {s['load']:.1f}", flush=True)
    load_after = os.getloadavg()
    command = (f"python -m fedcore bench scaling --device {args.device} --threads {args.threads} "
               f"--repeat {args.repeat}" + (" --quick" if args.quick else "")
               + "".join(f" --set {s}" for s in extra))
    meta = environment(device, args.threads, args.repeat, load_before, load_after)
    text = "\n".join([f"Command: `{command}`", "", *[f"- {m}" for m in meta],
                      f"- rounds per client count: {rounds} (round 1 warms up, not counted)", "",
                      render(summaries, device)])
    print()
    print(text)
    if args.out:
        key = f"scaling-{device.type}" + ("-quick" if args.quick else "")
        write_section(args.out, key, text)
        print(f"\nwrote section '{key}' of {args.out}")
    return 0


def main(argv: list[str]) -> int:
    """Worker: ``python -m benchmarks.scaling CLIENTS ROUNDS DEVICE RESULT.json [KEY=VALUE ...]``."""
    import torch

    clients, rounds, device, out, *extra = argv
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    Path(out).write_text(json.dumps(measure(int(clients), int(rounds), device, extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
