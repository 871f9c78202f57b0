"""fedcore from Python: :func:`run`, :func:`frontier` (a sweep), :func:`attack`, :func:`reproduce_paper`.

(``fedcore.sweep`` and ``fedcore.reproduce`` are the packages behind the last two, hence their names.)

Each is a thin layer over what the CLI calls, with its layering, its validation and its one-line
errors (a :class:`~fedcore.errors.FedcoreError`, ``ConfigError`` for a bad setting, raised before
anything trains). Settings are keyword arguments: a field's last part where it is unique
(``epsilon``, ``rounds``, ``lr``, ``mechanism``), a short name of the lesson links (``clients``,
``eps``, ``batch``), or a dotted name as ``--set`` takes it (``**{"partition.alpha": 0.3}``);
``method=`` applies a recipe first, as ``--set method=`` does.

>>> import fedcore
>>> r = fedcore.run(preset="demo", method="dp_fedavg", epsilon=3, rounds=2)   # doctest: +SKIP
>>> r.final_accuracy, r.epsilon_headline, r.accountant                        # doctest: +SKIP
(0.23, 2.06, 'rdp')
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from .errors import ConfigError, FedcoreError


@dataclass(frozen=True)
class RunResult:
    """What a run produced, read from its events (:mod:`fedcore.events`).

    Attributes
    ----------
    config : the resolved config as a dict (``RunConfig.from_dict`` rebuilds it); ``config_hash`` its hash.
    status : ``finished``, ``stopped`` or ``failed``.
    rounds, accuracy, loss : per round (accuracy and loss are None before any evaluation).
    epsilon_rounds : the run's headline ε after each round (``math.inf``: no guarantee).
    epsilon_per_client : each client's headline ε at the end.
    epsilon_headline : the run's headline ε (the largest over clients; ``math.inf`` when nothing is noised).
    accountant : which of the round events' ledgers (``epsilon_accountant``) gave the headline, "" if none.
    threat_model, caveat : what the headline protects against, and what it does not prove ("" = rigorous).
    final_accuracy, elapsed : the last evaluation's accuracy and the run's wall seconds.
    events : every event, in order.
    """

    config: dict = field(repr=False)
    config_hash: str
    status: str
    rounds: list[int] = field(repr=False)
    accuracy: list[Optional[float]] = field(repr=False)
    loss: list[Optional[float]] = field(repr=False)
    epsilon_rounds: list[float] = field(repr=False)
    epsilon_per_client: list[float] = field(repr=False)
    epsilon_headline: float
    accountant: str
    threat_model: str
    caveat: str
    final_accuracy: Optional[float]
    elapsed: float
    events: list = field(default_factory=list, repr=False)

    @classmethod
    def from_events(cls, events: list) -> "RunResult":
        from .events import summarize

        state = summarize(events)
        rounds, last, end = list(state.rounds), state.last_round, state.end
        inf = lambda e: math.inf if e is None else float(e)   # noqa: E731  (events write ∞ as None)
        return cls(config=state.start.config, config_hash=state.start.config_hash,
                   status=end.status if end else state.status, rounds=[r.round for r in rounds],
                   accuracy=[r.accuracy for r in rounds], loss=[r.loss for r in rounds],
                   epsilon_rounds=[inf(r.epsilon_headline_run) for r in rounds],
                   epsilon_per_client=[inf(e) for e in last.epsilon_headline] if last else [],
                   epsilon_headline=inf(last.epsilon_headline_run if last else None),
                   accountant=headline_accountant(last), threat_model=state.threat_model, caveat=state.caveat,
                   final_accuracy=end.final_accuracy if end else None, elapsed=end.elapsed if end else 0.0,
                   events=list(events))

    @property
    def history(self) -> list[dict]:
        """One dict per round (round, accuracy, loss, epsilon_headline): ``pandas.DataFrame(r.history)``."""
        return [{"round": n, "accuracy": a, "loss": l, "epsilon_headline": e}
                for n, a, l, e in zip(self.rounds, self.accuracy, self.loss, self.epsilon_rounds)]


def headline_accountant(event) -> str:
    """The ledger of ``event.epsilon_accountant`` whose per-client ε are the headline's (none of the
    papers' own claims, ``paper…``); "" when none matches (∞, or no round)."""
    if event is None or not event.epsilon_headline or None in event.epsilon_headline:
        return ""
    for name, values in event.epsilon_accountant.items():
        if not name.startswith("paper") and len(values) == len(event.epsilon_headline) and all(
                v is not None and math.isclose(v, h, rel_tol=1e-9) for v, h in zip(values, event.epsilon_headline)):
            return name
    return ""


def setting_name(name: str) -> str:
    """A keyword's config field: ``epsilon`` -> ``privacy.epsilon``, ``privacy__delta`` ->
    ``privacy.delta``, a dotted name as it is.

    >>> setting_name("epsilon"), setting_name("clients"), setting_name("partition.alpha")
    ('privacy.epsilon', 'num_clients', 'partition.alpha')
    """
    from .links import setting_fields

    name = name.replace("__", ".")
    if "." in name or name == "method":
        return name
    fields = setting_fields(name)
    if all(f.startswith(name + ".") for f in fields):   # none, or a section (``local``): no setting
        raise ConfigError(name, "", "is not a setting; e.g. epsilon, rounds, lr, clients, method, or a dotted "
                          "name such as privacy.delta (`python -m fedcore run --help`, README 'Config fields')")
    return fields[0]


def as_text(value: Any) -> str:
    """A keyword's value as ``--set`` would take it (lists as ``1,5,10``, dicts as JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return ",".join(repr(v) for v in value)
    return json.dumps(value)


def sets_of(settings: dict) -> list[str]:
    """Keyword settings as the CLI's ``--set KEY=VALUE`` items, ``method`` first."""
    items = sorted(settings.items(), key=lambda kv: kv[0] != "method")
    return [f"{setting_name(k)}={as_text(v)}" for k, v in items]


ConfigLike = Union["RunConfig", dict, str, Path, None]   # noqa: F821  (fedcore.config.RunConfig)


def make_config(config: ConfigLike = None, *, preset: Optional[str] = None, **settings):
    """The validated, resolved :class:`~fedcore.config.RunConfig`: ``preset`` (or the defaults), then
    ``config`` (a ``RunConfig``, a dict of fields or a JSON file's path), then ``settings``: the CLI's
    layering (``run --preset P --config FILE --set ...``)."""
    from .config import RunConfig
    from .layering import build_config

    if isinstance(config, (str, Path)):
        return build_config(preset, str(config), sets_of(settings))
    fields = config.to_dict() if isinstance(config, RunConfig) else dict(config or {})
    return build_config(preset, None, sets_of(settings), config=fields)


def check_model(cfg) -> None:
    """Refuse, in one sentence, a model registered outside fedcore that the batched engine cannot
    train: it needs ``torch.func.vmap`` over clients and per-example gradients (no batch norm, no
    in-place state, logits of shape ``[batch, classes]``). fedcore's own models are not rebuilt."""
    from .data import dataset_facts
    from .models import MODELS, build_model, has_batch_norm

    if MODELS.get(cfg.model).__module__.startswith("fedcore."):
        return
    facts = dataset_facts(cfg.dataset)
    if facts is None:
        return
    import torch
    from torch.func import functional_call, grad, vmap

    model = build_model(cfg.model, facts.input_shape, facts.num_classes)
    why = "batch norm mixes a batch's examples and updates running statistics in place (use nn.GroupNorm)" \
        if has_batch_norm(model) else ""
    if not why:
        params = {k: v.detach() for k, v in model.named_parameters()}
        x = torch.zeros((2, *facts.input_shape))
        y = torch.zeros(2, dtype=torch.long)

        def loss(p, xi, yi):
            out = functional_call(model, p, (xi[None],))
            if tuple(out.shape) != (1, facts.num_classes):
                raise ValueError(f"its output has shape {tuple(out.shape)}, not [batch, {facts.num_classes}]")
            return torch.nn.functional.cross_entropy(out, yi[None])

        try:
            vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
        except Exception as exc:            # the model's own code: name what failed, in one line
            why = " ".join(str(exc).split())[:200] or type(exc).__name__
    if why:
        raise ConfigError("model", cfg.model, f"cannot be trained by the batched engine (torch.func.vmap over "
                          f"per-example gradients): {why}")


def run(config: ConfigLike = None, *, preset: Optional[str] = None, out: Union[str, Path, None] = None,
        track: Iterable[str] | str = (), on_event: Optional[Callable[[Any], None]] = None,
        **settings) -> RunResult:
    """Train one configuration; the CLI's ``python -m fedcore run``.

    Parameters
    ----------
    config : a ``RunConfig``, a dict of config fields or a JSON file, layered on ``preset``.
    preset : a preset's name (``fedcore.catalog.PRESETS``), e.g. ``"demo"``.
    out : write the events there as JSON lines (the CLI's ``--out``; appears once the run starts).
    track : ``"mlflow"``, ``"tensorboard"`` or both (``"mlflow=URI"``, ``"tensorboard=DIR"``):
        :mod:`fedcore.tracking`.
    on_event : called with each event as it comes (the CLI prints its lines from it).
    settings : config fields, e.g. ``method="dp_fedavg", epsilon=3, rounds=10, seed=1``.

    Raises
    ------
    FedcoreError
        (``ConfigError`` for a setting) before any training, in one line naming what to change.

    >>> r = run(preset="demo", rounds=2)          # doctest: +SKIP
    >>> r.rounds, r.epsilon_headline               # doctest: +SKIP
    ([1, 2], inf)
    """
    from .engine import iter_run
    from .events import RoundEvent, RunStarted, to_dict
    from .tracking import RunTracker, parse_track

    cfg = make_config(config, preset=preset, **settings)
    check_model(cfg)
    tracker = RunTracker(parse_track(track)) if track else None
    if out is not None and Path(out).is_dir():
        raise FedcoreError(f"--out {out}: is a folder; give a file name, e.g. --out events.jsonl")
    if out is not None and not Path(out).resolve().parent.is_dir():
        raise FedcoreError(f"--out {out}: the folder {Path(out).resolve().parent} does not exist")
    scratch = Path(tempfile.mkdtemp(prefix="fedcore-run-")) if tracker and out is None else None
    path = Path(out) if out is not None else scratch / "events.jsonl" if scratch else None
    # written under a temporary name, moved in place when the run starts: a refused run leaves no file
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial") if path else None
    sink = open(partial, "w") if partial else None
    events: list = []
    try:
        for event in iter_run(cfg):
            events.append(event)
            if sink:
                sink.write(json.dumps(to_dict(event), allow_nan=False) + "\n")
                sink.flush()
            if isinstance(event, RunStarted) and partial:
                os.replace(partial, path)
                partial = None
            if tracker:
                tracker.event(event)
            if on_event:
                on_event(event)
        result = RunResult.from_events(events)
        if sink:
            sink.close()
        if tracker:
            tracker.close(result.events[-1], result.accountant, path)
        return result
    finally:
        if sink:
            sink.close()
        if partial:
            partial.unlink(missing_ok=True)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def frontier(preset: str = "demo", *, methods: Union[str, Iterable[str]] = "", epsilons=None, seeds=3,
          match: str = "headline", scenario: str = "iid", reference: bool = True, audit: int = 0, attack: int = 0,
          out: Union[str, Path, None] = None, track: Iterable[str] | str = (), **settings) -> list[dict]:
    """Accuracy against the headline ε for several methods: the CLI's ``python -m fedcore sweep``
    (local, in lockstep; ``--ray`` and resuming stay the CLI's). Returns the frontier rows
    (README, "Headless runs"), written to ``out`` as ``{"rows": [...]}`` when given.

    >>> rows = frontier(methods="dp_fedavg", epsilons=[1, 10], seeds=1, rounds=3)   # doctest: +SKIP
    >>> [(r["method"], r["epsilon"], r["reference"]) for r in rows][:2]         # doctest: +SKIP
    [('dp_fedavg', 1.0, ''), ('dp_fedavg', 10.0, '')]
    """
    from .sweep.job import checked_groups
    from .sweep.rows import write_frontier
    from .sweep.runner import run_groups
    from .sweep.spec import SweepSpec
    from .tracking import parse_track, track_rows

    specs = parse_track(track)
    listed = lambda v: v if isinstance(v, str) or v is None or isinstance(v, int) else ",".join(map(str, v))  # noqa: E731
    spec = SweepSpec(preset=preset, methods=listed(methods), epsilons=listed(epsilons), seeds=listed(seeds),
                     sets=tuple(sets_of(settings)), reference=reference, match=match, scenario=scenario)
    rows = list(run_groups(checked_groups(spec), batched=True, audit=audit, attack=attack))
    if out is not None:
        write_frontier(out, rows)
    if specs:
        track_rows(specs, rows, Path(out) if out is not None else None, "sweep",
                   {"preset": preset, "match": match, "scenario": scenario, "sets": " ".join(spec.sets)})
    return rows


def attack(config: Union[str, Path, None] = None, *, preset: str = "demo", match: str = "headline",
           shadows: Optional[int] = 64, budget: float = 2.0, **settings) -> dict:
    """What an attacker recovers from a run, beside the cap its ε proves: the CLI's ``python -m
    fedcore attack --json`` as a dict (``shadows=None``: no membership inference)."""
    from .attacks.cli import attacked

    return attacked(preset, str(config) if config is not None else None, sets_of(settings), match, shadows, budget,
                    check=check_model)


def reproduce_paper(paper: str, out: Union[str, Path], *, quick: bool = True, seeds: Optional[int] = None,
              tables: Optional[list[str]] = None, rows: Optional[list[str]] = None,
              track: Iterable[str] | str = (), log: Callable[[str], None] = lambda line: None,
              **settings) -> dict:
    """A paper's experiments over seeds: the CLI's ``python -m fedcore reproduce PAPER`` (``--quick``
    by default here); writes ``<out>/<paper>.json`` and ``.md`` and returns the record."""
    from .config import parse_value
    from .reproduce.run import check_request, reproduce
    from .tracking import parse_track, reproduction_rows, track_rows

    specs = parse_track(track)
    extra = {setting_name(k): parse_value(v, None) for k, v in settings.items()} or None
    check_request(paper, quick=quick, seeds=seeds, out=out, tables=tables, extra=extra, rows=rows)
    record = reproduce(paper, quick=quick, seeds=seeds, out=out, tables=tables, extra=extra, log=log, rows=rows)
    if specs:
        track_rows(specs, reproduction_rows(record), Path(out) / f"{paper}.json", "reproduce", {})
    return record


def tracked_command(command: Callable[[Any], int]) -> Callable[[Any], int]:
    """A CLI command with ``--track`` (:mod:`fedcore.tracking`): the trackers are checked before it
    runs; ``run`` tracks its own rounds (:func:`run`), ``sweep`` and ``reproduce`` log their output's
    rows once they succeed."""
    from .tracking import parse_track, reproduction_rows, track_rows

    def tracked(args) -> int:
        specs = parse_track(getattr(args, "track", None))
        code = command(args)
        if code or not specs or args.command == "run":
            return code
        if args.command == "sweep":
            track_rows(specs, json.loads(Path(args.out).read_text(encoding="utf-8"))["rows"], Path(args.out), "sweep",
                       {"preset": args.preset, "match": args.match, "scenario": args.scenario,
                        "sets": " ".join(args.set or ())})
        elif args.paper and not args.report and not args.accounting:
            path = Path(args.out) / f"{args.paper}.json"
            track_rows(specs, reproduction_rows(json.loads(path.read_text(encoding="utf-8"))), path, "reproduce", {})
        return code

    return tracked
