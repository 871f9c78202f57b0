"""``python -m fedcore reproduce PAPER``: run a paper's presets over seeds, compare with the paper.

For every table of the paper (or the ``tables`` asked for), every row is trained once per
seed on the real data; the result is written as ``<out>/<paper>.json`` (per-round
accuracy of every seed, means, the paper's numbers, the claims checked) and
``<out>/<paper>.md`` (the "paper vs ours" tables, :mod:`fedcore.reproduce.report`). The
dashboard's Papers page draws its plots from the JSON.

``quick=True`` applies each table's ``quick`` reductions, runs only the tables and rows
marked for it and fewer seeds; such results are labelled :data:`QUICK_LABEL` everywhere.
A table whose dataset cannot be loaded here (no network for CIFAR-10 / Covertype) is
recorded as skipped with the loader's message, and the other tables still run.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from ..constraints import shorten
from ..errors import ConfigError, FedcoreError
from ..files import write_atomic
from ..papers import PAPERS
from ..papers.spec import Paper, Table
from .stats import RowStats

QUICK_LABEL = "quick (CPU, reduced)"
FULL_LABEL = "full (paper settings)"
DEFAULT_OUT = "assets/reproduction"
MAX_SEEDS = 100
"""Seeds per experiment at most (``--seeds``)."""


def row_configs(table: Table, *, quick: bool, extra: Optional[dict] = None,
                rows: Optional[list[str]] = None) -> dict:
    """``{row key: RunConfig}`` of the rows that run (seed not yet set); ``rows``: only these."""
    from ..resolve import preset_config

    out = {}
    for row in table.rows:
        if quick and table.quick_rows and row.key not in table.quick_rows:
            continue
        if rows and row.key not in rows:
            continue
        cfg = preset_config(row.preset)
        if quick and table.quick:
            cfg = cfg.with_overrides(table.quick)
        if extra:
            cfg = cfg.with_overrides(extra)
        out[row.key] = cfg
    return out


def train(cfg, memo: Optional[dict] = None) -> dict:
    """Run ``cfg`` to the end: ``{"rounds", "accuracy" (per round), "final", "seconds"}``.

    ``memo`` (config hash -> result) reuses a run another table already trained.
    """
    if memo is not None and cfg.config_hash() in memo:
        return memo[cfg.config_hash()]
    result = _train(cfg)
    if memo is not None:
        memo[cfg.config_hash()] = result
    return result


SIGNALS = ("recall_rate", "similarity", "kalman_gain", "noise_multiplier", "empty_round")
"""Per-round method signals whose run mean a reproduction record keeps (when present)."""


def train_lockstep(configs: list, memo: dict, log: Callable[[str], None] = print, max_batch: int = 0) -> None:
    """Train ``configs`` (not already in ``memo``) in lockstep batches of one
    :func:`~fedcore.engine.lockstep.batch_key` and put each result in ``memo`` in :func:`train`'s
    form (each run's ``seconds`` is its share of the batch's time). A batch that cannot be built
    here (e.g. its dataset is unavailable) is left out: its runs train alone later and say why."""
    from ..accounting import encode_epsilon
    from ..engine.lockstep import lockstep_batches, run_lockstep
    from ..sweep.runner import MAX_BATCH

    for chunk in lockstep_batches([c for c in configs if c.config_hash() not in memo], max_batch or MAX_BATCH):
        if len(chunk) == 1:
            continue   # alone: train() runs it with its round events
        t0 = time.perf_counter()
        try:
            results = run_lockstep(chunk, curves=True)
        except FedcoreError as exc:
            log(f"  (lockstep batch of {len(chunk)} left to train alone: {exc})")
            continue
        share, load = (time.perf_counter() - t0) / len(chunk), _load_average()
        for cfg, res in zip(chunk, results):
            memo[cfg.config_hash()] = {
                "rounds": list(range(1, cfg.rounds + 1)), "accuracy": res.accuracy, "final": res.final_accuracy,
                "seconds": share, "load_average": load, "nice": _nice(), "threat_model": res.threat_model,
                "epsilon": encode_epsilon(res.headline), "lockstep": len(chunk), "caveat": res.caveat,
                "signals": {k: v for k, v in res.signals.items() if k in SIGNALS}}


def _train(cfg) -> dict:
    from ..engine import iter_run
    from ..events import summarize

    t0 = time.perf_counter()
    run = summarize(iter_run(cfg))
    if run.status != "finished":
        raise RuntimeError(f"run {run.status}: {run.end.error if run.end else 'ended without its last event'}")
    seen = {name: [float(r.signals[name]) for r in run.rounds if name in r.signals] for name in SIGNALS}
    last = run.last_round
    return {"rounds": [r.round for r in run.rounds], "accuracy": [r.accuracy for r in run.rounds],
            "final": run.final_accuracy, "seconds": time.perf_counter() - t0, "load_average": _load_average(),
            "nice": _nice(), "threat_model": run.threat_model, "caveat": run.caveat,
            "epsilon": last.epsilon_headline_run if last else None, "accountant": last.accountant if last else "",
            "signals": {name: sum(values) / len(values) for name, values in seen.items() if values}}


def _nice() -> int:
    """This process's scheduling priority (``nice``; 0 where the platform has none): a run
    at a lowered priority took longer than its share of the CPU, so its seconds time nothing."""
    import os

    return os.nice(0) if hasattr(os, "nice") else 0


def _load_average() -> Optional[float]:
    """The host's 1-minute load average at the end of a run (how shared the CPU was), if known."""
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _mean_curve(curves: list[list]) -> tuple[list, list]:
    """Per-round mean and sample std over seeds (:func:`fedcore.sweep.rows.mean_std`), None at a round
    where some seed has no value (issue 52: never a mean of whichever seeds were evaluated)."""
    from ..sweep.rows import mean_std

    means, stds = [], []
    for values in zip(*curves):
        m, s = mean_std(list(values)) if all(v is not None for v in values) else (None, None)
        means.append(m)
        stds.append(s)
    return means, stds


def row_stats(entry: dict) -> RowStats:
    """A stored row's :class:`RowStats`: its seeds' finals and curves, and its headline ε (the
    largest over seeds, ``inf`` when a seed noised nothing, None when not recorded) with the
    accountant the record names (``accountant``; None in records from before the key)."""
    import math

    heads = entry.get("epsilon_headline")
    eps = None if not heads else (math.inf if any(h is None for h in heads) else max(heads))
    return RowStats(entry["finals"], entry.get("curves") or (), entry.get("rounds") or (),
                    entry.get("seeds") or (), eps, entry.get("accountant"))


def _stored_runs(entry: Optional[dict], config: dict) -> dict:
    """``{seed: result}`` of a stored row entry that ran ``config`` (resuming from a record)."""
    if not entry or entry.get("config") != config or not entry.get("finals"):
        return {}
    n = len(entry["finals"])
    secs = entry.get("seconds_per_seed") or [entry.get("seconds", 0.0) / n] * n
    eps = entry.get("epsilon_headline") or [None] * n
    loads = entry.get("load_average") or [None] * n
    batch, nice = entry.get("lockstep") or [1] * n, entry.get("nice") or [0] * n
    return {s: {"rounds": entry["rounds"], "accuracy": c, "final": f, "seconds": t, "epsilon": e,
                "threat_model": entry.get("threat_model", ""), "signals": dict(entry.get("signals") or {}),
                "accountant": entry.get("accountant") or "",
                "caveat": _stored_caveat(entry, config),
                "load_average": la, "lockstep": k, "nice": ni}
            for s, f, c, t, e, la, k, ni in zip(entry["seeds"], entry["finals"], entry["curves"], secs, eps, loads,
                                                batch, nice)}


def _stored_caveat(entry: dict, config: dict) -> str:
    """A stored row's caveat; a record from before the key gets the one its config implies (not "",
    which would drop the caveat of every seed resumed with it)."""
    from .report import caveat

    return entry["caveat"] if entry.get("caveat") is not None else caveat({"config": config})


def run_table(paper: Paper, table: Table, seeds: list[int], *, quick: bool, extra: Optional[dict] = None,
              log: Callable[[str], None] = print, memo: Optional[dict] = None,
              rows: Optional[list[str]] = None, stored: Optional[dict] = None,
              on_row: Optional[Callable[[dict], None]] = None, command: Optional[str] = None,
              lockstep: bool = True, resume: bool = True) -> dict:
    """Train every row of ``table`` (or ``rows``) for every seed; the table's JSON record.

    ``lockstep``: the rows x seeds that share a model, data and local training train together
    first (:func:`train_lockstep`), as a sweep's points do; then each row reads its seeds from
    ``memo``. Without it (or without a ``memo``) each run trains alone.

    ``stored``: this table's record from an earlier (interrupted) run: a row / seed it holds
    with the same configuration is reused, not retrained (unless not ``resume``), and a row not
    asked for keeps its stored entry. ``on_row(record)`` is called after each row (to write partial records)."""
    from ..data.root import public_message

    record = {"key": table.key, "title": table.title, "dataset": table.dataset, "notes": table.notes,
              "quick_notes": table.quick_notes if quick else "", "reference": table.reference,
              "target": (table.quick_target if quick and table.quick_target is not None else table.target),
              "paper_target": table.target,
              "status": "ran", "rows": [], "claims": []}
    try:
        configs = row_configs(table, quick=quick, extra=extra, rows=rows)
        every = row_configs(table, quick=quick, extra=extra) if rows else configs
    except (FedcoreError, KeyError) as exc:
        record["status"] = f"skipped: invalid configuration: {public_message(exc)}"
        log(f"  {table.key}: skipped: invalid configuration: {exc}")
        return record
    todo = []   # (entry, config, stored entry, seeds the record holds) of each row that trains
    for row in table.rows:
        entry = {"key": row.key, "label": row.label, "short": row.name, "preset": row.preset, "paper": row.paper,
                 "paper_gain": row.paper_gain, "paper_rounds": row.paper_rounds, "ran": row.key in configs}
        record["rows"].append(entry)
        old = next((e for e in (stored or {}).get("rows", []) if e.get("key") == row.key), None)
        if (row.key not in configs and rows and old and old.get("finals") and row.key in every
                and old.get("config") == {k: v for k, v in every[row.key].to_dict().items() if k != "seed"}):
            entry.update({k: v for k, v in old.items() if k not in ("label", "short", "preset", "paper",
                                                                      "paper_gain", "paper_rounds")})
        elif row.key in configs:
            entry["config"] = {k: v for k, v in configs[row.key].to_dict().items() if k != "seed"}
            todo.append((entry, configs[row.key], old, _stored_runs(old, entry["config"]) if resume else {}))
    if lockstep and memo is not None:
        train_lockstep([cfg.replace(seed=seed) for _, cfg, _, done in todo for seed in seeds if seed not in done],
                       memo, log)
    for entry, cfg, old, done in todo:
        if record["status"] != "ran":
            break
        runs = []
        if command:
            entry["command"] = command if any(seed not in done for seed in seeds) else \
                (old or {}).get("command", command)
        for seed in seeds:
            if seed in done:
                runs.append(done[seed])
                log(f"  {table.key} / {entry['key']} / seed {seed}: accuracy {done[seed]['final']:.4f} (from the record)")
                continue
            try:
                result = train(cfg.replace(seed=seed), memo)
            except FedcoreError as exc:   # dataset unavailable, or impossible once the data is known
                # the record is published (the Papers page, assets/): no path or exception text of
                # this machine in it; the log line keeps the whole message
                record["status"] = f"skipped: {public_message(exc)}"
                log(f"  {table.key}: skipped: {exc}")
                break
            runs.append(result)
            together = f", {result['lockstep']} runs in lockstep" if result.get("lockstep", 1) > 1 else ""
            log(f"  {table.key} / {entry['key']} / seed {seed}: accuracy {result['final']:.4f} "
                f"({result['seconds']:.1f}s{together})")
        if runs:
            curves = [r["accuracy"] for r in runs]
            entry.update({"seeds": seeds[:len(runs)], "finals": [r["final"] for r in runs],
                          "rounds": runs[0]["rounds"], "curves": curves,
                          "seconds": sum(r["seconds"] for r in runs),
                          "seconds_per_seed": [r["seconds"] for r in runs],
                          # runs trained together in each seed's lockstep batch (its seconds are a share)
                          "lockstep": [r.get("lockstep", 1) for r in runs],
                          "nice": [r.get("nice", 0) for r in runs],
                          "load_average": [r.get("load_average") for r in runs],
                          # headline epsilon of each seed (None = infinity), its threat model, and
                          # the seed-mean of the method signals
                          "threat_model": runs[0].get("threat_model", ""),
                          # what the headline does not prove for what ran ("" = a rigorous bound)
                          "caveat": next((r["caveat"] for r in runs if r.get("caveat")), ""),
                          "epsilon_headline": [r.get("epsilon") for r in runs],
                          "accountant": next((r["accountant"] for r in runs if r.get("accountant")), None),
                          "signals": {k: sum(r["signals"][k] for r in runs) / len(runs)
                                      for k in runs[0].get("signals", {})
                                      if all(k in r.get("signals", {}) for r in runs)}})
        if on_row is not None:
            on_row(fill_in(table, record))
    return fill_in(table, record)


def fill_in(table: Table, record: dict) -> dict:
    """Fill in a table record's means, gains, rounds to target and claims from its runs
    (``finals`` / ``curves`` per row), with ``table``'s current rows and claims."""
    stats = {}
    for entry in record["rows"]:
        if not entry.get("finals"):
            continue
        mean_curve, std_curve = _mean_curve(entry["curves"])
        s = row_stats(entry)
        stats[entry["key"]] = s
        entry.update({"mean": s.mean, "std": s.std, "curve_mean": mean_curve, "curve_std": std_curve})
        if record.get("target") is not None:
            entry["rounds_to_target"] = s.rounds_to(record["target"])
    ref = stats.get(table.reference) if table.reference else None
    for entry in record["rows"]:
        if ref is not None and entry.get("mean") is not None:
            entry["gain"] = entry["mean"] - ref.mean
    record["claims"] = [c.check(stats, table.labels(), record.get("target")) for c in table.claims]
    record["rule_rounds"] = table.rule_rounds
    return record


def refresh(record: dict) -> dict:
    """Recompute every table's summary, claims and notes of a stored record with the current
    spec (the runs are kept; e.g. after a claim's wording or check changed)."""
    paper = paper_named(record["paper"])
    for t in record["tables"]:
        try:
            spec = paper.table(t["key"])
        except KeyError:
            continue
        t["paper_target"] = spec.target
        t["notes"] = spec.notes   # wording only: the settings that ran are in each row's config
        for entry in t["rows"]:
            if any(r.key == entry["key"] for r in spec.rows):
                entry["short"] = spec.row(entry["key"]).name
        fill_in(spec, t)
    return record


def reproduce(paper_key: str, *, quick: bool = False, seeds: Optional[int] = None,
              out: str | Path = DEFAULT_OUT, tables: Optional[list[str]] = None,
              extra: Optional[dict] = None, log: Callable[[str], None] = print,
              memo: Optional[dict] = None, rows: Optional[list[str]] = None,
              resume: bool = True, lockstep: bool = True) -> dict:
    """Run ``paper_key``'s tables and write ``<out>/<paper>.json`` and ``.md``; returns the record.

    ``tables``: table keys to run (default: all, or those marked for ``quick``); ``rows``:
    row keys to run in them (default: all; the others keep what the record holds).
    ``extra``: config overrides applied to every run after the quick ones (tests use
    ``{"rounds": 2}``); a run with ``extra`` is labelled as such.
    The other tables of an existing ``<out>/<paper>.json`` are kept (each table records the
    mode, seeds, date and command it ran with). The record is written after every row, and
    with ``resume`` a row / seed the existing record already holds for the same
    configuration and mode is reused rather than retrained (an interrupted run continues).
    """
    from ..engine.device import resolve_device

    paper, chosen, n = check_request(paper_key, quick=quick, seeds=seeds, out=out, tables=tables, extra=extra,
                                     rows=rows)
    seed_list = list(range(n))
    label = QUICK_LABEL if quick else FULL_LABEL
    if extra:
        label += " + overrides " + ", ".join(f"{k}={v}" for k, v in extra.items())
    log(f"reproduce {paper.title}: {len(chosen)} table(s), seeds {seed_list}, {label}")
    t0 = time.perf_counter()
    command = _command(paper.key, quick, seeds, [t.key for t in chosen] if tables else None, extra, rows) \
        + ("" if resume else " --no-resume")
    record = {"paper": paper.key, "title": paper.title, "source": paper.source, "claim": paper.claim,
              "mode": label, "quick": quick, "extra": extra or {}, "seeds": seed_list,
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "device": str(resolve_device("auto")), "command": command,
              "tables": []}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{paper.key}.json"
    old = json.loads(path.read_text()) if path.exists() else None
    old_tables = {t["key"]: t for t in (old or {}).get("tables", [])}
    memo = {} if memo is None else memo  # results trained elsewhere (Ray: fedcore.distributed.reproduce)

    def write(current: list) -> dict:
        rec = {**record, "tables": list(current), "elapsed_s": time.perf_counter() - t0}
        if old is not None:
            rec = _merge(old, rec, paper)
        _write(out, paper.key, rec)
        return rec

    done_tables = []
    for table in chosen:
        log(f"- {table.key}: {table.title}")
        prev = old_tables.get(table.key)
        stored = prev if (prev and prev.get("mode") == label) else None
        if rows and prev and not stored:
            stored = {"rows": []}
        stamp = {"mode": label, "seeds": seed_list, "created": record["created"], "command": command}
        done = run_table(paper, table, seed_list, quick=quick, extra=extra, log=log, memo=memo, rows=rows,
                         stored=stored, on_row=lambda t: write(done_tables + [{**t, **stamp}]), command=command,
                         lockstep=lockstep, resume=resume)
        done.update(stamp)
        done_tables.append(done)
    record = write(done_tables)
    log(f"wrote {out / (paper.key + '.json')} and {out / (paper.key + '.md')} "
        f"in {record['elapsed_s']:.0f}s")
    return record


def replay_accounting(paper_key: str, out: str | Path = DEFAULT_OUT, log: Callable[[str], None] = print) -> int:
    """Fill in the headline ε (and threat model and caveat) of every stored row of ``paper_key``'s record
    that has runs but no ``epsilon_headline`` (records from before the field), by replaying each seed's
    accounting without training (:func:`fedcore.engine.replay.replay_headline`: the same client sampling,
    mechanism and ledger; exact for every mechanism whose releases do not follow the update values).
    Writes the record and its Markdown; returns the number of rows filled. A row whose dataset cannot be
    loaded here is left as it is, and the log says why."""
    from ..accounting import encode_epsilon
    from ..config import RunConfig
    from ..engine.replay import replay_headline
    from ..errors import DatasetUnavailable
    from ..mechanisms import MECHANISMS, caveat_of

    path = Path(out) / f"{paper_key}.json"
    if not path.is_file():
        raise FedcoreError(f"{path}: no stored record of {paper_key} to replay")
    record, filled, missing = json.loads(path.read_text()), 0, set()
    for table in record["tables"]:
        for entry in table["rows"]:
            if entry.get("epsilon_headline") or not entry.get("finals") or not entry.get("config"):
                continue
            if entry["config"]["dataset"] in missing:
                continue
            privacy = entry["config"]["privacy"]
            mech = MECHANISMS.get(privacy["mechanism"])
            try:
                heads = [replay_headline(RunConfig.from_dict({**entry["config"], "seed": seed, "device": "cpu"}))
                         for seed in entry["seeds"]]
            except DatasetUnavailable as exc:
                missing.add(entry["config"]["dataset"])
                log(f"  {entry['config']['dataset']}: not replayed here ({str(exc).splitlines()[0][:160]})")
                continue
            entry.update(epsilon_headline=[encode_epsilon(h) for h in heads], caveat=caveat_of(privacy),
                         threat_model=mech.threat_model_for(mech.parse_options(privacy.get("mechanism_options") or {},
                                                                                "privacy.mechanism_options")))
            filled += 1
            log(f"  {table['key']}/{entry['key']}: headline ε {max(heads):.4g} (replayed, {len(heads)} seeds)")
    _write(Path(out), paper_key, record)
    return filled


def _write(out: Path, key: str, record: dict) -> None:
    """Write ``<out>/<key>.json`` and ``.md``, each atomically (:func:`~fedcore.files.write_atomic`)."""
    from .report import markdown

    for name, text in ((f"{key}.json", json.dumps(record, indent=1)), (f"{key}.md", markdown(record))):
        write_atomic(out / name, text)


def check_request(paper_key: str, *, quick: bool = False, seeds: Optional[int] = None,
                  out: str | Path = DEFAULT_OUT, tables: Optional[list[str]] = None,
                  extra: Optional[dict] = None, rows: Optional[list[str]] = None) -> tuple[Paper, list[Table], int]:
    """Everything :func:`reproduce` can check before it trains: the paper and its tables, the
    number of seeds, every run's configuration with ``extra`` applied (``--set rounds=-3``
    names ``rounds``) and that ``out`` is a folder this process can write. Returns
    ``(paper, tables to run, seeds)``; raises :class:`FedcoreError` (the CLI: one line, exit 2).
    """
    paper = paper_named(paper_key)
    chosen = [paper.table(k) for k in tables] if tables else \
        [t for t in paper.tables if t.in_quick or not quick]
    n = seeds if seeds is not None else (paper.quick_seeds if quick else paper.seeds)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SEEDS:
        raise ConfigError("--seeds", n, f"must be an integer in [1, {MAX_SEEDS}]")
    if rows:
        known = {r.key for t in chosen for r in t.rows}
        unknown = [r for r in rows if r not in known]
        if unknown:
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise ConfigError("--rows", shorten(",".join(rows)), "unknown row(s) " + ", ".join(
                str(shorten(u, 40)) for u in unknown[:5]) + more + "; the chosen tables have: " + ", ".join(sorted(known)))
    for table in chosen:
        try:
            row_configs(table, quick=quick, extra=extra)
        except KeyError as exc:   # an unknown --set name
            raise ConfigError("--set", ", ".join(f"{k}={v}" for k, v in (extra or {}).items()),
                              str(exc.args[0] if exc.args else exc)) from None
    check_out_dir(out)
    return paper, chosen, n


def check_out_dir(out: str | Path) -> Path:
    """``out`` as a folder this process can write (created if missing), or a one-line
    :class:`FedcoreError` naming ``--out``: checked before hours of training, not after."""
    import os
    import tempfile

    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise FedcoreError(f"--out {str(out)!r}: cannot write results there ({why}); "
                           "pick a folder this user can write") from None
    for name in os.listdir(folder):
        if name.endswith((".json", ".md")) and not os.access(folder / name, os.W_OK):
            raise FedcoreError(f"--out {str(out)!r}: {name} there is read-only; pick another folder")
    return folder


def _merge(old: dict, new: dict, paper: Paper) -> dict:
    """``new`` with the tables of ``old`` that it did not run, in the paper's table order."""
    tables = {t["key"]: {"mode": old.get("mode"), "seeds": old.get("seeds"), "created": old.get("created"),
                         "command": old.get("command"), **t}
              for t in old.get("tables", [])}
    tables.update({t["key"]: t for t in new["tables"]})
    order = [t.key for t in paper.tables]
    new["tables"] = [tables[k] for k in order if k in tables]
    new["mode"] = "mixed (see each table)" if len({t.get("mode") for t in new["tables"]}) > 1 else new["mode"]
    return new


def paper_named(key: str) -> Paper:
    """The registered paper ``key`` (KeyError naming the known ones)."""
    try:
        return PAPERS[key]
    except KeyError:
        raise KeyError(f"unknown paper {key!r}; known: {', '.join(sorted(PAPERS))}") from None


def _command(paper: str, quick: bool, seeds, tables, extra, rows=None) -> str:
    parts = ["python -m fedcore reproduce", paper]
    if quick:
        parts.append("--quick")
    if seeds is not None:
        parts.append(f"--seeds {seeds}")
    if tables:
        parts.append("--tables " + ",".join(tables))
    if rows:
        parts.append("--rows " + ",".join(rows))
    for k, v in (extra or {}).items():
        parts.append(f"--set {k}={json.dumps(v) if not isinstance(v, str) else v}")
    return " ".join(parts)
