"""``python -m fedcore bench``: run the suite, print the table, optionally write markdown."""
from __future__ import annotations

import os

from .report import check_targets, environment, render_markdown, render_text, write_section
from .startup import measure_startup, render_startup
from .suite import run_case
from .workloads import SYSTEMS, select_cases


def command_line(args) -> str:
    """The command that reproduces this session (for the report)."""
    parts = ["python -m fedcore bench", *args.workloads, "--systems", args.systems, "--device", args.device,
             "--threads", str(args.threads), "--repeat", str(args.repeat)]
    parts += ["--quick"] if args.quick else []
    parts += ["--in-process"] if args.in_process else []
    parts += ["--profile"] if args.profile else []
    parts += [f"--set {s}" for s in args.set or []]
    return " ".join(parts)


def run(args) -> int:
    from fedcore.layering import build_config
    from fedcore.engine.device import resolve_device

    device = resolve_device(args.device)  # --device cuda on a host without one: one-line error, exit 2
    if "frontier" in args.workloads:
        from .frontier import run_frontier_bench

        return run_frontier_bench(args)
    if "scaling" in args.workloads:
        from .scaling import run_scaling_bench

        return run_scaling_bench(args)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise KeyError(f"unknown system {unknown[0]!r}; known: {', '.join(SYSTEMS)}")
    extra = {}
    for item in args.set or []:
        key, _, value = item.partition("=")
        extra[key.strip()] = value.strip()
    build_config(None, None, [f"{k}={v}" for k, v in extra.items()])  # fail early on a bad --set
    names = [w for w in args.workloads if w != "startup"]
    command = command_line(args)
    key = "-".join(args.workloads) + f"-{device.type}" + ("-quick" if args.quick else "")
    key += f"-threads{args.threads}" if args.threads != 1 else ""

    if "startup" in args.workloads:
        print("startup: timing `python -m fedcore run --preset demo` ...", flush=True)
        text = render_startup(measure_startup(args.repeat, args.threads))
        print(text, flush=True)
        if args.out:
            write_section(args.out, f"startup-{device.type}", f"Command: `{command}`\n\n" + text)
        if not names:
            return 0

    cases, skipped = select_cases(names, device.type, args.quick)
    for line in skipped:
        print(f"skipped {line}", flush=True)
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    results = []
    for case in cases:
        print(f"{case.label}: {case.summary}", flush=True)
        results.append(run_case(case, systems, device=device.type, threads=args.threads, repeat=args.repeat,
                                isolate=not args.in_process, profile=args.profile, trace_dir=args.trace_dir,
                                flower_python=args.flower_python, extra=extra,
                                log=lambda line: print(line, flush=True)))
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    meta = environment(device, args.threads, args.repeat, load_before, load_after)
    targets = check_targets(results, device.type)
    print()
    print(render_text(results, device, meta, targets, skipped))
    if args.out:
        write_section(args.out, key, render_markdown(results, device, meta, targets, skipped, command))
        print(f"\nwrote section '{key}' of {args.out}")
    return 0
