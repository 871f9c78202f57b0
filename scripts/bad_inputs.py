"""Feed the CLI a corpus of bad configurations and count how each one fails.

    python scripts/bad_inputs.py [--root PATH_TO_A_CHECKOUT] [--commands audit,reproduce]

Each case runs ``python -m fedcore run ...`` (or ``audit``, ``reproduce``, ``sweep``: the
:data:`COMMAND_CASES`) in a forked child of one warm interpreter, with a 6 GB address-space
limit and a time limit, and is classed as:

- ``clear``: exit 2 and one stderr line naming what is wrong (no traceback);
- ``traceback``: a Python traceback reached the user;
- ``accepted``: exit 0: the bad value ran (or was silently adjusted);
- ``other``: anything else (another exit code, a time-out, several lines).

The corpus holds the bad inputs reported in issue 12 plus one or more per config field:
out-of-range numbers, wrong types, NaN / Infinity, unknown names, malformed ``--set`` and
``--config`` files; and those of issue 22 for the other commands: numbers far out of range
(``audit --canaries 1000000000``), options the chosen audit would ignore, run settings that
used to end in an empty report (``reproduce --set rounds=-3``), an ``--out`` that cannot be
written (checked before training), a sweep far over its size cap.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import os
import resource
import sys
import tempfile
from pathlib import Path

SETS = [
    "rounds=0", "rounds=-5", "rounds=1.5", "rounds=abc", "rounds=100001", "rounds.x=1", "rounds=[[1]]",
    "num_clients=0", "num_clients=-3", "num_clients=2000", "num_clients=1e9", "num_clients=true",
    "participation=0", "participation=1.5", "participation=-0.1", "participation=NaN", "participation=abc",
    "sampling=random", "sampling=1", "dataset=imagenet", "dataset=", "dataset=MNIST ", "model=alexnet",
    "model=1", "method=magic", "seed=-1", "seed=999999999999999999999999999999", "seed=1.5", "seed=abc",
    "device=tpu", "device=1", "eval_every=0", "eval_every=-1", "train_size=-1", "train_size=100000",
    "test_size=-5", "test_size=100000", "partition.kind=zipf", "partition.alpha=0", "partition.alpha=-1",
    "partition.alpha=nan", "partition.min_size=-1", "partition.shards_per_client=0",
    "partition.classes_per_client=0", "partition.classes_per_client=11", "partition.iid_fraction=2",
    "partition.size_cv=-1", "partition.alhpa=1", "local.epochs=0", "local.epochs=-1",
    "local.steps=-1", "local.steps=1000000000", "local.steps=1000000", "local.batch_size=0",
    "local.batch_size=-32", "local.lr=0", "local.lr=-0.1", "local.lr=inf", "local.lr=1000",
    "local.optimizer=adam", "local.momentum=1", "local.momentum=-0.5", "local.weight_decay=-1",
    "local.speed=1", "privacy.epsilon=0", "privacy.epsilon=-3", "privacy.epsilon=abc",
    "privacy.epsilon=nan", "privacy.epsilon=inf", "privacy.epsilon=1,,2", "privacy.epsilon=1,2",
    "privacy.delta=0", "privacy.delta=1", "privacy.delta=-1e-5", "privacy.delta=abc",
    "privacy.mechanism=magic", "privacy.aggregator=magic", "privacy.server_lr=0", "privacy.server_lr=-1",
    "privacy.mechanism_options=5", "privacy.mechanism_options.speed=1", "privacy=123",
    "partition=1", "local=[]", "noequals", "=5", "privacy.epsilon=[[1]]",
]
MECHANISM_SETS = [
    ["privacy.mechanism=gaussian", "privacy.mechanism_options.clip=Infinity"],
    ["privacy.mechanism=gaussian", "privacy.mechanism_options.clip=-1"],
    ["privacy.mechanism=gaussian", "privacy.mechanism_options.clip=abc"],
    ["privacy.mechanism=gaussian", "privacy.mechanism_options.sample_rate=2"],
    ["privacy.mechanism=two_point", "privacy.aggregator=kalman"],
    ["privacy.mechanism=dp_sgd", "privacy.mechanism_options.calibration=magic"],
    ["privacy.mechanism=laplace", "privacy.mechanism_options.clip=0"],
    ["privacy.aggregator=kalman", "privacy.aggregator_options.q_over_r=0"],
    ["privacy.aggregator=probabilistic", "privacy.aggregator_options.m=0"],
    ["method=dsdp_fedavg", "privacy.aggregator=fedavg"],
]
CONFIG_FILES = [b"[1, 2]", b"null", b'{"privacy": [1, 2]}', b'{"rounds": ' + b"9" * 5001 + b"}",
                bytes(range(256)), b'{"rounds": NaN}', b'{"rounds": Infinity}', b"{", b'"text"',
                b'{"privacy": {"epsilon": "abc"}}']
PRESETS = ["nope", "pldp_mnist_iid"]
LAPLACE = ["--set", "privacy.mechanism=laplace", "--set", "privacy.aggregator=mean"]   # a distinguishing audit
BIG = "1000000000000"
COMMAND_CASES = [
    # audit: every number bounded, options the chosen audit does not use refused, --out checked first
    ["audit", "--preset", "demo", "--canaries", "1000000000"], ["audit", "--preset", "demo", "--canaries", "5"],
    ["audit", "--preset", "demo", "--trials", BIG], ["audit", "--preset", "demo", "--dim", BIG],
    ["audit", "--preset", "demo", "--trials", "5000"], ["audit", "--preset", "demo", "--dim", "10"],
    ["audit", "--preset", "demo", *LAPLACE, "--canaries", "100"], ["audit", "--preset", "demo", *LAPLACE, "--trials", "3"],
    ["audit", "--preset", "demo", *LAPLACE, "--trials", "100000000"],
    ["audit", "--preset", "demo", *LAPLACE, "--dim", "0"], ["audit", "--preset", "demo", "--seed", "-1"],
    ["audit", "--preset", "demo", "--confidence", "1.5"], ["audit", "--preset", "demo", "--confidence", "nan"],
    ["audit", "--preset", "demo", "--client", "99"], ["audit", "--preset", "demo", "--set", "rounds=-3"],
    ["audit", "--preset", "demo", "--out", "/proc/nope/audit.json"],
    ["audit", "--preset", "demo", "--kind", "distinguishing"],
    # reproduce: settings and --out checked before any training
    ["reproduce", "ldp_fl", "--quick", "--set", "rounds=-3"], ["reproduce", "ldp_fl", "--quick", "--set", "rounds=1e12"],
    ["reproduce", "ldp_fl", "--quick", "--set", "nope=1"], ["reproduce", "ldp_fl", "--quick", "--set", "noequals"],
    ["reproduce", "ldp_fl", "--quick", "--seeds", BIG], ["reproduce", "ldp_fl", "--quick", "--seeds", "0"],
    ["reproduce", "ldp_fl", "--quick", "--tables", "nope"], ["reproduce", "ldp_fl", "--quick", "--out", "/proc/nope"],
    # sweep: its size cap checked before the points are built
    ["sweep", "--preset", "demo", "--epsilons", ",".join(f"{1 + i / 100:g}" for i in range(10_000))],
    ["sweep", "--preset", "demo", "--seeds", BIG], ["sweep", "--preset", "demo", "--epsilons", "-1"],
    ["sweep", "--preset", "demo", "--audit", "3"], ["sweep", "--preset", "demo", "--set", "rounds=-3"],
    ["sweep", "--preset", "demo", "--attack", "2"],
    # issue 30: a binary limits file, rows that name nothing or 20,000 unknown ones, --out a folder
    ["run", "--preset", "demo", "--limits", "/bin/ls"], ["run", "--preset", "demo", "--out", "/tmp"],
    ["reproduce", "ldp_fl", "--quick", "--rows", ","],
    ["reproduce", "ldp_fl", "--quick", "--rows", ",".join(f"row{i}" for i in range(20_000))],
    # attack: shadows, budget and config checked before any training
    ["attack", "--preset", "demo", "--shadows", "3"], ["attack", "--preset", "demo", "--budget", "0"],
    ["attack", "--preset", "demo", "--set", "privacy.epsilon=-1"],
]
"""Bad input on the other commands; each writes (if it wrongly ran) into a scratch folder."""


def cases() -> list[list[str]]:
    out = [["--set", s, "--set", "rounds=1"] if not s.startswith("rounds") else ["--set", s] for s in SETS]
    out += [sum((["--set", s] for s in sets + ["rounds=1"]), []) for sets in MECHANISM_SETS]
    out += [["--preset", p] for p in PRESETS]
    folder = Path(tempfile.mkdtemp())
    for i, content in enumerate(CONFIG_FILES):
        path = folder / f"bad{i}.json"
        path.write_bytes(content)
        out.append(["--config", str(path)])
    out = [["run", *case] for case in out]
    for i, case in enumerate(COMMAND_CASES):
        if "--out" not in case:   # a case that wrongly runs must not write into the checkout
            scratch = folder / f"out{i}"
            case = [*case, "--out", str(scratch if case[0] == "reproduce" else scratch.with_suffix(".json"))]
        out.append(case)
    return out


def _child(args: list[str], conn) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))
    err, out = io.StringIO(), io.StringIO()
    code = None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            from fedcore.cli import main

            code = main(args)
        except SystemExit as exc:
            code = exc.code
        except BaseException:  # noqa: BLE001  (what a user would see: a traceback)
            import traceback

            traceback.print_exc()
            code = 1
    conn.send((code, err.getvalue()))


def classify(code, err: str) -> str:
    if "Traceback" in err:
        return "traceback"
    if code == 0:
        return "accepted"
    if code == 2 and err.strip().count("\n") == 0 and err.strip():
        return "clear"
    return "other"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("-v", action="store_true", help="print every case")
    p.add_argument("--commands", default="run,audit,reproduce,sweep",
                   help="only the cases of these commands (comma-separated; default all)")
    args = p.parse_args()
    os.chdir(args.root)
    sys.path.insert(0, args.root)
    os.environ.setdefault("FEDCORE_OFFLINE", "1")
    import fedcore.cli  # noqa: F401  (warm: torch and the registries load once)
    import fedcore.catalog  # noqa: F401

    ctx = mp.get_context("fork")
    counts: dict[str, int] = {}
    commands = set(args.commands.split(","))
    for case in [c for c in cases() if c[0] in commands]:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_child, args=(case, child))
        proc.start()
        if parent.poll(args.timeout):
            code, err = parent.recv()
            kind = classify(code, err)
        else:
            code, err, kind = None, "(time-out)", "other"
        proc.kill()
        proc.join()
        counts[kind] = counts.get(kind, 0) + 1
        if args.v or kind != "clear":
            line = err.strip().splitlines()[-1] if err.strip() else ""
            print(f"{kind:<9} exit {code}  {' '.join(case)[:70]:<70}  {line[:110]}", flush=True)
    total = sum(counts.values())
    print(f"{total} bad inputs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
