"""Command line: ``python -m fedcore run|list ...`` (headless runs, presets, registries).

Exit codes: 0 success, 2 invalid configuration or unavailable data (one-line message),
1 any other failure.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import FedcoreError
from .layering import build_config, read_config_file  # noqa: F401  (the CLI's layering)


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = int(width * done / max(total, 1))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _accountant_words(accountant: str) -> str:
    """The finished line's accountant (:data:`.accounting.headline.ACCOUNTANTS`): ``"; exact (PLD) accountant"``, or
    RDP's where the PLD is not composed each round (ULDP-FED's decaying clips); nothing when nothing is noised."""
    from .accounting.headline import ACCOUNTANTS

    return "; " + ACCOUNTANTS[accountant] if accountant in ACCOUNTANTS and accountant != "none" else ""


def cmd_run(args) -> int:
    from .accounting.headline import THREAT_MODEL_NAMES, bound_words, format_epsilon
    from .accounting.words import EMPTY_RUN_TEXT
    from .api import run
    from .events import RoundEvent, RunFinished, RunStarted

    cfg = build_config(args.preset, args.config, args.set or [])
    if getattr(args, "limits", None):  # a host's limits, only when asked (README, "Hosting")
        from .runner.limits import HostLimits, check_submission, read_toml

        check_submission(cfg, HostLimits.from_mapping(read_toml(Path(args.limits)), source=args.limits))
    seen = {"headline": None, "threat": "", "caveat": "", "accountant": ""}

    def show(event) -> None:
        if isinstance(event, RunStarted):
            seen["caveat"] = event.caveat
            print(f"run {event.config_hash}: {cfg.dataset} / {cfg.model} / {cfg.num_clients} clients / "
                  f"{cfg.privacy.mechanism} + {cfg.privacy.aggregator} on {event.device}; threat model: "
                  f"{THREAT_MODEL_NAMES.get(event.threat_model, event.threat_model)}", flush=True)
        elif isinstance(event, RoundEvent):
            acc = "   -  " if event.accuracy is None else f"{event.accuracy:.4f}"
            loss = "   -  " if event.loss is None else f"{event.loss:.4f}"
            seen.update(headline=event.epsilon_headline_run, threat=event.threat_model, accountant=event.accountant)
            print(f"{_bar(event.round, cfg.rounds)} round {event.round:>4}/{cfg.rounds}  acc {acc}  "
                  f"loss {loss}  ε {format_epsilon(seen['headline'])}  {event.seconds:.3f}s", flush=True)
        elif isinstance(event, RunFinished):
            headline, threat = seen["headline"], seen["threat"]
            print(f"{event.status}: {event.rounds_done} rounds in {event.elapsed:.2f}s, "
                  f"final accuracy {_accuracy(event.final_accuracy)}, headline ε {format_epsilon(headline)} "
                  f"({THREAT_MODEL_NAMES.get(threat, threat or 'no round run')}; largest over clients, "
                  f"{bound_words(seen['caveat'], headline)}){_accountant_words(seen['accountant'])}", flush=True)
            if event.aggregated_rounds == 0:
                print(EMPTY_RUN_TEXT, flush=True)

    run(cfg, out=args.out, track=getattr(args, "track", None) or (), on_event=show)   # the API's run (fedcore.api)
    return 0


def cmd_list(args) -> int:
    from .catalog import REGISTRIES

    for kind, registry in REGISTRIES.items():
        print(f"{kind}:")
        for e in registry.entries():
            paper = f"  [{e.paper}]" if e.paper else ""
            print(f"  {e.name:<16} {e.summary}{paper}")
    return 0


def cmd_bench(args) -> int:
    from benchmarks.command import run   # the benchmarks live outside the product (benchmarks/)

    return run(args)


def pinned_threads(args):
    """``--threads N`` as N (0: torch's default), None for ``auto`` (the default): the one policy
    chooses then, where the engine first uses torch (:mod:`fedcore.threads`)."""
    value = str(getattr(args, "threads", "auto")).strip().lower()
    if value == "auto":
        return None
    if not value.isdigit():
        raise FedcoreError(f"--threads {value}: must be a whole number of threads (0: torch's default) or auto")
    return int(value)


class OneLineParser(argparse.ArgumentParser):
    """argparse whose refusals are one line on stderr, exit 2, like every other refusal of the CLI
    (argparse's own prints the usage first: 5-8 lines). Its sub-commands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"error: {' '.join(message.split())} (see {self.prog} --help)\n")


def make_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m fedcore", description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="auto",
                   help="torch threads: N, 0 for torch's default, or auto (default: one thread for a model "
                        "without convolutions or on a busy host, a convolution's measured best otherwise)")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train one configuration headlessly")
    run.add_argument("--preset", help="start from a named preset (see `list`)")
    run.add_argument("--config", help="JSON file with config fields")
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="override a field by dotted name, e.g. --set partition.alpha=0.3")
    run.add_argument("--out", help="write the events as JSON lines to this file")
    run.add_argument("--limits", metavar="HOST.TOML", help="refuse the run if it exceeds this host limits file")
    run.set_defaults(func=cmd_run)
    ls = sub.add_parser("list", help="print every registry")
    ls.set_defaults(func=cmd_list)
    from benchmarks import add_bench_arguments

    bench = sub.add_parser("bench", help="time fedcore against the plain loop and Flower (docs/benchmarks.md)")
    add_bench_arguments(bench)
    bench.set_defaults(func=cmd_bench)
    from .attacks.cli import add_attack_parser
    from .audit.cli import add_audit_parser
    from .reproduce.cli import add_reproduce_parser
    from .sweep.cli import add_sweep_parser

    for add_command in (add_reproduce_parser, add_sweep_parser, add_audit_parser, add_attack_parser):
        add_command(sub)
    from .api import tracked_command

    for name in ("run", "sweep", "reproduce"):    # README "From Python": fedcore.tracking
        sub.choices[name].add_argument("--track", action="append", metavar="mlflow|tensorboard",
                                       help="log to MLflow or TensorBoard (mlflow=URI, tensorboard=DIR; repeatable)")
        sub.choices[name].set_defaults(func=tracked_command(sub.choices[name].get_default("func")))
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        threads = pinned_threads(args)
        if threads is not None and argv is None:   # a process's own command, not a caller's
            from .threads import pin

            pin(threads)
        return args.func(args)
    except (FedcoreError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: the run needs more memory than this machine has; use fewer clients, "
              "steps or a smaller batch", file=sys.stderr)
        return 2
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _accuracy(value) -> str:
    """``0.7278`` (4 decimals, as the round lines print it), ``-`` when there is none."""
    return "-" if value is None else f"{float(value):.4f}"
