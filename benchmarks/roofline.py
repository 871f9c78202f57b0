"""Achieved FLOP/s against the device's peak, and a profiler summary of one round.

Training FLOPs are counted the usual way: :func:`fedcore.models.count_flops` (forward
FLOPs of one sample, 2 per multiply-accumulate) x 3 for forward + backward x the samples
the round's clients train on. :func:`profile_round` runs warm rounds, each under its own
``torch.profiler``, and says what bounds the median one: the share of the round's wall time that the
device (or, on CPU, the aten kernels) is busy, and the operators that take it.
"""
from __future__ import annotations

import time
from typing import Optional

# Dense peak FLOP/s from the vendors' datasheets: (FP32 on CUDA cores, TF32 on tensor
# cores). PyTorch runs convolutions in TF32 by default (cudnn.allow_tf32) and float32
# matrix products in full FP32 (matmul.allow_tf32 = False), so a small-CNN round sits
# between the two.
PEAK_FLOPS = {
    "H200": (67e12, 494.7e12),
    "H100 PCIe": (51e12, 378e12),
    "H100": (67e12, 494.7e12),
    "A100": (19.5e12, 156e12),
    "L40S": (91.6e12, 183e12),
    "L4": (30.3e12, 60e12),
    "A10": (31.2e12, 62.5e12),
    "V100": (15.7e12, 15.7e12),
    "T4": (8.1e12, 8.1e12),
}


def device_peak(device) -> Optional[tuple[str, float, float]]:
    """``(name, fp32 peak, tf32 peak)`` of a CUDA ``device`` we know, else None (CPU too)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(device)
    for key, (fp32, tf32) in PEAK_FLOPS.items():  # "H100 PCIe" is listed before "H100"
        if key in name:
            return name, fp32, tf32
    return None


def flops_line(achieved: Optional[float], device) -> str:
    """``"12.3 TFLOP/s = 18% of FP32 peak (2.5% of TF32)"``, or the bare figure."""
    if not achieved:
        return "n/a"
    text = f"{achieved / 1e12:.3g} TFLOP/s" if achieved >= 1e11 else f"{achieved / 1e9:.3g} GFLOP/s"
    peak = device_peak(device)
    if peak:
        text += f" = {100 * achieved / peak[1]:.1f}% of {peak[0]} FP32 peak ({100 * achieved / peak[2]:.1f}% of TF32)"
    return text


PROFILED_ROUNDS = 5
"""How many rounds :func:`profile_round` profiles, each on its own: one profiled round is a noisy sample
(W4 with CUDA graphs on an H200 read 53 % busy one day and 35 % the next, 2026-11-27)."""


def profile_round(cfg, trainer: str = "batched", trace_path: Optional[str] = None, top: int = 6,
                  rounds: int = PROFILED_ROUNDS) -> str:
    """Profile rounds 2 to ``rounds`` + 1 of ``cfg``, each under its own profiler (round 1 warms up: first
    calls, CUDA graph captures, the curve workers' start); return a short plain-text summary of the round
    with the median busy share, after a line giving every round's share.

    A "round" is what runs between two round events (the loop trains a round ahead, so in the steady
    state that is one round's work). ``trace_path`` also writes the median round's Chrome trace (open in
    https://ui.perfetto.dev).
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    from fedcore.engine import iter_run
    from fedcore.events import RoundEvent

    cuda = torch.device(cfg.device if cfg.device != "auto" else
                        ("cuda" if torch.cuda.is_available() else "cpu")).type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    events = iter_run(cfg.replace(rounds=rounds + 1, eval_every=1), trainer=trainer)

    def next_round() -> None:
        for event in events:
            if isinstance(event, RoundEvent):
                return

    next_round()
    profiled = []
    for _ in range(rounds):
        with profile(activities=activities) as prof:
            t0 = time.perf_counter()
            next_round()
            if cuda:
                torch.cuda.synchronize()
            wall = time.perf_counter() - t0
        profiled.append((busy_seconds(prof, cuda), wall, prof))
    list(events)
    order = sorted(range(len(profiled)), key=lambda i: profiled[i][0] / profiled[i][1])
    busy, wall, prof = profiled[order[len(order) // 2]]
    if trace_path:
        prof.export_chrome_trace(trace_path)
    shares = ", ".join(f"{100 * b / w:.0f}%" for b, w, _ in profiled)
    head = (f"{'GPU' if cuda else 'aten kernels'} busy in rounds 2-{rounds + 1}: {shares} "
            f"(median {100 * busy / wall:.0f}%); the median round:")
    return head + "\n" + summarize(prof.key_averages(), wall, cuda, top, busy=busy)


def busy_seconds(prof, cuda: bool) -> float:
    """Seconds the device was busy during ``prof``: the union of its kernels' and copies' time spans
    (kernels that overlap, as a CUDA graph's may, count once), or their summed times where the profiler
    kept no spans; on CPU, the aten operators' own time."""
    if not cuda:
        return sum(a.self_cpu_time_total for a in prof.key_averages() if a.key.startswith("aten::")) / 1e6
    from torch.autograd import DeviceType

    try:
        spans = [(e.time_range.start, e.time_range.end) for e in prof.events()
                 if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start]
    except (AttributeError, TypeError):   # a profiler that keeps no spans
        spans = []
    return covered(spans) / 1e6 if spans else sum(a.self_device_time_total for a in device_ops(prof.key_averages())) / 1e6


def covered(spans: list[tuple[float, float]]) -> float:
    """Length of the union of ``[start, end)`` spans.

    >>> covered([(0, 2), (1, 3), (5, 6)])
    4
    """
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def device_ops(averages) -> list:
    """The profiler's operators and kernels that took device time."""
    return [a for a in averages if getattr(a, "self_device_time_total", 0) > 0 and not a.key.startswith("ProfilerStep")]


def summarize(averages, wall: float, cuda: bool, top: int = 6, busy: Optional[float] = None) -> str:
    """What bounds the round: busy share of the device (or CPU kernels) and the top ops. ``busy``: the
    device's busy seconds when known (:func:`busy_seconds`), else the sum of its operators' times."""
    if cuda:
        key = "self_device_time_total"
        ops = device_ops(averages)
        summed = sum(a.self_device_time_total for a in ops) / 1e6   # overlaps counted twice: an upper bound
        busy = summed if busy is None else busy
        launches = sum(a.count for a in averages if a.key in ("cudaLaunchKernel", "cuLaunchKernel",
                                                               "cudaLaunchKernelExC"))
        where = (f"GPU busy {busy:.3f} s of {wall:.3f} s wall ({100 * busy / wall:.0f}%; kernel times summed "
                 f"{summed:.3f} s), {launches} kernel launches")
        verdict = ("launch/CPU-bound: the GPU idles between small kernels; more clients per vmap "
                   "or fewer, larger kernels would help" if busy < 0.5 * wall else
                   "device-bound: the kernels below take the time")
    else:
        key = "self_cpu_time_total"
        ops = [a for a in averages if a.key.startswith("aten::")]
        busy = sum(a.self_cpu_time_total for a in ops) / 1e6
        where = f"aten kernels {busy:.3f} s of {wall:.3f} s wall ({100 * busy / wall:.0f}%)"
        verdict = ("Python/dispatch-bound: little time inside kernels" if busy < 0.5 * wall else
                   "kernel-bound: the operators below take the time")
    ranked = sorted(ops, key=lambda a: getattr(a, key), reverse=True)[:top]
    total = sum(getattr(a, key) for a in ops) or 1
    lines = [f"{where}; {verdict}."]
    lines += [f"  {getattr(a, key) / 1e3:9.1f} ms {100 * getattr(a, key) / total:5.1f}%  {a.key} x{a.count}"
              for a in ranked]
    return "\n".join(lines)
