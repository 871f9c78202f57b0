"""``python -m benchmarks.graph_step --device cuda --json``: W4's local training, eager against one CUDA graph.

Issue 41 (Build 3): "try CUDA graphs or torch.compile on a device, and keep whichever is measured
faster". W4's round (DP-SGD, 20 clients x 5 Poisson steps of cnn_uldp) keeps an H200 busy 33-47 %: its
1,700 kernels are launched one by one from Python. This captures one round's local training
(:func:`fedcore.engine.local.train_clients`, the engine's own code, the same plan and noise) as one
CUDA graph and replays it, against running it eagerly, and reports per round: wall seconds, GPU busy
seconds (``torch.profiler`` kernel time) and busy share, kernel launches, and whether the graph's
parameters equal the eager ones bitwise (same generator state, same draws).

What a graph needs, and the engine does not give yet: no host sync inside the step (``_schedule``'s
one sync per round is taken before capture here) and shapes fixed per round (a Poisson plan's batch
widths change every round: a run would pad them to one width per run). This script measures what
capture would buy before the engine is changed for it. On CPU it runs the eager half only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def _busy(fn, device, repeat: int) -> dict:
    """Wall seconds per call, and the kernel seconds and launches of one call (torch.profiler)."""
    import torch

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    walls = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        walls.append(time.perf_counter() - t0)
    out = {"wall_s": statistics.median(walls), "wall_s_range": [min(walls), max(walls)]}
    if device.type == "cuda":
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            wall = time.perf_counter() - t0
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        busy = sum(e.device_time for e in kernels) / 1e6
        out.update(profiled_wall_s=wall, gpu_busy_s=busy, gpu_busy_share=busy / wall if wall else None,
                   kernels=len(kernels))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.graph_step", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides (a smaller case)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    import torch

    import fedcore.catalog  # noqa: F401
    from fedcore.engine import local as local_mod
    from fedcore.engine.flat import flatten
    from fedcore.engine.local import client_gradient_fn, train_clients
    from fedcore.engine.plan import make_plan
    from fedcore.engine.setup import prepare

    from .workloads import WORKLOADS

    case = next(c for c in WORKLOADS["W4"].cases if c.label == "W4")
    cfg = case.config(args.device, {k: json.loads(v) for k, _, v in (item.partition("=") for item in args.set)})
    s = prepare(cfg)
    device = s.device
    gen = torch.Generator(device=device).manual_seed(0)
    sel = torch.arange(20, device=device)
    plan = make_plan(s.padded[sel], s.counts[sel], cfg.local, gen, s.mechanism.poisson_batches)
    noise = s.mechanism.step_noise_std(sel)
    grad_fn = client_gradient_fn(s.model, s.mechanism.per_sample_clip)
    schedule = local_mod._schedule(plan)   # the round's one host sync, taken before any capture

    def train(generator):
        return train_clients(s.model, s.params, s.x_train, s.y_train, plan, cfg.local, grad_fn=grad_fn,
                             noise_std=noise, gen=generator)

    saved = local_mod._schedule
    local_mod._schedule = lambda _plan: schedule
    report = {"device": str(device), "torch": torch.__version__, "clients": 20, "steps": plan.steps,
              "widths": schedule[2], "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None}
    try:
        for _ in range(3):   # warm-up: cuDNN plans, allocator
            train(torch.Generator(device=device).manual_seed(1))
        report["eager"] = _busy(lambda: train(torch.Generator(device=device).manual_seed(1)), device, args.repeat)
        eager = flatten(train(torch.Generator(device=device).manual_seed(7)))
        if device.type == "cuda":
            try:
                report["graph"] = _graph(train, device, args.repeat, eager)
            except Exception as exc:   # noqa: BLE001 -- the finding is that it does not capture
                report["graph"] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    finally:
        local_mod._schedule = saved
    e, g = report["eager"], report.get("graph", {})
    if "wall_s" in g:
        report["speedup"] = e["wall_s"] / g["wall_s"]
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0


def _graph(train, device, repeat: int, eager) -> dict:
    """Capture one round's training with its own generator registered; replay it."""
    import torch

    from fedcore.engine.flat import flatten

    gen = torch.Generator(device=device).manual_seed(7)
    graph = torch.cuda.CUDAGraph()
    graph.register_generator_state(gen)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up on the capture stream (as torch.cuda.graphs advises)
        for _ in range(2):
            train(torch.Generator(device=device).manual_seed(1))
    torch.cuda.current_stream().wait_stream(side)
    state = gen.graphsafe_get_state() if hasattr(gen, "graphsafe_get_state") else None
    with torch.cuda.graph(graph):
        out = train(gen)
    if state is not None:
        gen.graphsafe_set_state(state)
    gen.manual_seed(7)
    graph.replay()
    torch.cuda.synchronize()
    first = flatten(out).clone()
    result = _busy(graph.replay, device, repeat)
    result["bitwise_equal_to_eager"] = bool(torch.equal(first, eager))
    result["max_abs_diff"] = float((first - eager).abs().max())
    return result


if __name__ == "__main__":
    os.environ.setdefault("FEDCORE_RDP_CACHE", "off")
    raise SystemExit(main())
