"""What a paper's headline experiments are here: tables of presets, the paper's numbers, its claims.

Shared by the five paper modules of :mod:`fedcore.papers` (one per paper, like
:mod:`fedcore.recipes`). A :class:`Paper` holds :class:`Table` s (one experiment of the paper: a
dataset and a setting); a table holds :class:`Row` s (one method or budget each; every row is a
named preset in :data:`fedcore.presets.PRESETS`) and the :class:`Claim` s the paper makes about
them. Numbers are fractions (0.887, not 88.7 %) everywhere in code and JSON.
:func:`register_paper` adds a paper to :data:`PAPERS` (in registration order: the order of the
CLI, the Papers page and docs/reproduction.md) and each of its rows to the preset registry.

Claims are judged by one rule, :func:`fedcore.papers.verdict.paired_rule` (stated in
:data:`fedcore.papers.verdict.RULE_TEXT`): the rows are paired by seed, and the verdict reads a
95 % interval of the paired differences against the claim's threshold:

- ``order``: ``rows[0] >= rows[1] >= ...`` on final accuracy, each step allowed to fall
  short by ``tol`` (e.g. PLDP-FL's C >= B >= A, KDP-FL > DP-FedAvg);
- ``faster``: each of ``rows`` first reaches the table's target accuracy in fewer rounds
  than ``than`` (ULDP-FED: DSDP / DCDP reach 0.95 before DP-FedAvg), each seed read at the
  rounds where every seed of the claim's rows was evaluated.

A decided claim whose rows are not at equal privacy (headline ε more than 1 % apart, or from
different accountants) reads "unequal privacy", unless ``equal_privacy`` is False (a claim that
compares budgets by design, e.g. LDP-FL's ε sweep).

>>> Claim("order", ("c", "b", "a")).describe({"a": "A", "b": "B", "c": "C"})
'C ≥ B ≥ A (final accuracy)'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..presets import PRESETS, register_preset

CLAIM_KINDS = ("order", "faster")


@dataclass(frozen=True)
class Row:
    """One preset of a table: a method (or budget) with what the paper reports for it.

    ``paper``: the reported final accuracy; ``paper_gain``: the reported gain over the
    table's reference row (PLDP-FL reports gains of B and C over A, not their accuracy);
    ``paper_rounds``: the reported rounds to first reach the table's target accuracy.
    ``short``: the name claims use (e.g. ``C``; default the label).
    """

    key: str
    label: str
    preset: str
    overrides: dict
    paper: Optional[float] = None
    paper_gain: Optional[float] = None
    paper_rounds: Optional[int] = None
    short: str = ""

    @property
    def name(self) -> str:
        """Short name for claims (``C``), else the label."""
        return self.short or self.label


@dataclass(frozen=True)
class Claim:
    """A qualitative claim of the paper about a table's rows (see the module docstring)."""

    kind: str
    rows: tuple
    than: str = ""
    tol: float = 0.0
    text: str = ""
    equal_privacy: bool = True

    def __post_init__(self):
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim kind {self.kind!r} is not one of {CLAIM_KINDS}")
        if self.kind == "faster" and not self.than:
            raise ValueError("a 'faster' claim needs the baseline row 'than'")

    def describe(self, labels: dict) -> str:
        """The claim in words, e.g. ``C ≥ B ≥ A (final accuracy)``."""
        if self.text:
            return self.text
        names = [labels.get(k, k) for k in self.rows]
        if self.kind == "order":
            slack = f", each within {100 * self.tol:g} points" if self.tol else ""
            return " ≥ ".join(names) + f" (final accuracy{slack})"
        return f"{', '.join(names)} reach the target in fewer rounds than {labels.get(self.than, self.than)}"

    def check(self, stats: dict, labels: dict, target: Optional[float] = None) -> dict:
        """``{"claim", "verdict", "holds" (True / False / None), "detail", "steps", "privacy"}``;
        ``stats``: row key -> :class:`fedcore.reproduce.stats.RowStats`. ``steps``: one
        :func:`~fedcore.papers.verdict.paired_rule` result per compared pair."""
        claim = self.describe(labels)
        needed = list(self.rows) + ([self.than] if self.kind == "faster" else [])
        missing = [k for k in needed if k not in stats or not stats[k].finals]
        rows = self.rows
        if missing and self.kind == "order" and len(needed) - len(missing) >= 2:
            rows = tuple(k for k in self.rows if k not in missing)
        elif missing:
            return {"claim": claim, "verdict": "not checked", "holds": None, "steps": [],
                    "detail": "not checked: no results for " + ", ".join(labels.get(k, k) for k in missing)}
        if self.kind == "faster" and target is None:
            return {"claim": claim, "verdict": "not checked", "holds": None, "steps": [],
                    "detail": "not checked: the table has no target accuracy"}
        result = (_check_order(rows, self.tol, stats, labels) if self.kind == "order"
                  else _check_faster(self, stats, labels, target))
        skipped = f" ({', '.join(labels.get(k, k) for k in missing)} not run)" if missing else ""
        return {"claim": claim, **_privacy_gate(result, [*rows, *([self.than] if self.kind == "faster" else [])],
                                                stats, labels, self.equal_privacy, skipped)}


def _paired(hi, lo: dict) -> tuple[list, list]:
    """The seeds both rows ran and ``hi − lo`` on each (``hi``, ``lo``: ``{seed: value}``)."""
    seeds = [s for s in hi if s in lo]
    return seeds, [hi[s] - lo[s] for s in seeds]


def _step_text(name: str, step: dict, scale: float = 100.0, unit: str = "") -> str:
    if step["low"] is None:
        return f"{name} {scale * step['mean']:+.2f}{unit} (one seed: no interval)"
    return f"{name} {scale * step['mean']:+.2f}{unit} [{scale * step['low']:+.2f}, {scale * step['high']:+.2f}]"


def _combine(steps: list) -> str:
    verdicts = [s["verdict"] for s in steps]
    if "does not hold" in verdicts:
        return "does not hold"
    return "holds" if verdicts and all(v == "holds" for v in verdicts) else "inconclusive"


def _needed(steps: list) -> Optional[int]:
    """Seeds that would decide every undecided step (None: some step never would)."""
    needs = [s["seeds_needed"] for s in steps if s["verdict"] == "inconclusive"]
    return None if not needs or None in needs else max(needs)


def _check_order(rows: tuple, tol: float, stats: dict, labels: dict) -> dict:
    """Each consecutive step ``rows[i - 1] ≥ rows[i] − tol`` by :func:`~fedcore.papers.verdict.paired_rule`."""
    from .verdict import paired_rule

    name = lambda k: labels.get(k, k)   # noqa: E731
    means = [stats[k].mean for k in rows]
    parts = [f"{name(rows[0])} {100 * means[0]:.2f}"]
    steps, texts, n = [], [], set()
    for i in range(1, len(rows)):
        seeds, diffs = _paired(stats[rows[i - 1]].by_seed(), stats[rows[i]].by_seed())
        step = paired_rule(diffs, -tol)
        steps.append(step)
        n.add(len(seeds))
        ok = means[i - 1] >= means[i] - tol
        parts.append(f"{'≥' if ok else '<'} {name(rows[i])} {100 * means[i]:.2f}")
        texts.append(_step_text(f"{name(rows[i - 1])} − {name(rows[i])}", step))
    slack = f", threshold −{100 * tol:g} points" if tol else ""
    detail = " ".join(parts) + f"; paired by seed (n={'/'.join(str(x) for x in sorted(n))}{slack}): " + ", ".join(texts)
    return {"verdict": _combine(steps), "detail": detail, "steps": steps, "seeds_needed": _needed(steps)}


def _check_faster(claim: Claim, stats: dict, labels: dict, target: float) -> dict:
    """Each row's first round at ``target`` against ``than``'s, seed by seed, on the rounds where
    every seed of every row of the claim was evaluated."""
    from .verdict import common_rounds, paired_rule

    keys = [*claim.rows, claim.than]
    base = stats[claim.than]
    if any(list(stats[k].rounds) != list(base.rounds) for k in keys):
        return {"verdict": "not checked", "detail": "not checked: the rows were evaluated at different rounds",
                "steps": []}
    grid = common_rounds([c for k in keys for c in stats[k].curves])
    per_seed = {k: stats[k].rounds_to_by_seed(target, grid) for k in keys}
    steps, texts = [], []
    for k in claim.rows:
        _, diffs = _paired(per_seed[claim.than], per_seed[k])
        step = paired_rule(diffs, 0.0)
        steps.append(step)
        texts.append(_step_text(f"{labels.get(claim.than, claim.than)} − {labels.get(k, k)}", step, 1.0,
                                " rounds"))

    def show(k):
        r = stats[k].rounds_to(target, grid)
        return f"{labels.get(k, k)} {'never' if r is None else f'{r} rounds'}"

    every = int(base.rounds[grid[1]] - base.rounds[grid[0]]) if len(grid) > 1 else None
    on = f"every {every} rounds" if every and all(
        base.rounds[b] - base.rounds[a] == every for a, b in zip(grid, grid[1:])) else f"{len(grid)} rounds"
    detail = (", ".join(show(k) for k in claim.rows) + f" vs {show(claim.than)} (target {100 * target:g} %, "
              f"seed-mean curve read {on}, where every seed was evaluated); paired by seed: " + ", ".join(texts)
              + "; a seed that never reaches it counts as the last round + 1")
    return {"verdict": _combine(steps), "detail": detail, "steps": steps, "seeds_needed": _needed(steps)}


def _privacy_gate(result: dict, keys: list, stats: dict, labels: dict, equal_privacy: bool, skipped: str) -> dict:
    """Equal privacy or no verdict: a decided ``result`` becomes "unequal privacy" when the rows'
    headline ε differ by more than 1 % or come from different accountants."""
    from ..accounting.headline import format_epsilon

    eps = {k: stats[k].epsilon for k in keys}
    accountants = {stats[k].accountant for k in keys if stats[k].accountant}
    known = [e for e in eps.values() if e is not None]
    equal = (len(known) == len(eps) and len(accountants) <= 1
             and (max(known) == min(known) or max(known) <= 1.01 * min(known)))
    privacy = "equal" if equal else ("compares budgets by design" if not equal_privacy else "unequal")
    verdict, detail = result["verdict"], result["detail"] + skipped
    if not equal and equal_privacy:
        shown = ", ".join(f"{labels.get(k, k)} {'not recorded' if e is None else format_epsilon(e)}"
                          for k, e in eps.items())
        why = ("from different accountants (" + ", ".join(sorted(accountants)) + ")" if len(accountants) > 1
               else "more than 1 % apart")
        if verdict in ("holds", "does not hold"):
            detail += f"; headline ε {shown}: {why}, so no verdict (paired rule alone: {verdict})"
            verdict = "unequal privacy"
        else:
            detail += f"; headline ε {shown}: {why}"
    elif not equal:
        detail += "; the rows differ in ε by design"
    if verdict == "inconclusive":
        need = result.get("seeds_needed")
        detail += (f"; at this spread about {need} seeds would decide it" if need
                   else "; no number of seeds would decide it at this spread")
    holds = {"holds": True, "does not hold": False}.get(verdict)
    return {**result, "verdict": verdict, "holds": holds, "detail": detail, "privacy": privacy}


@dataclass(frozen=True)
class Table:
    """One experiment of a paper: its rows, claims and settings.

    ``notes``: every setting the paper leaves unspecified and the value we chose.
    ``quick``: config overrides of ``--quick`` (CPU, reduced), applied to every row;
    ``in_quick``: whether ``--quick`` runs this table at all. ``reference``: the row the
    gains are measured against. ``target`` / ``quick_target``: accuracy for the
    rounds-to-target column and the ``faster`` claims. ``quick_rows``: the rows
    ``--quick`` runs (empty: all).
    """

    key: str
    title: str
    rows: tuple
    claims: tuple = ()
    notes: str = ""
    quick: dict = field(default_factory=dict)
    quick_notes: str = ""
    in_quick: bool = True
    reference: Optional[str] = None
    target: Optional[float] = None
    quick_target: Optional[float] = None
    quick_rows: tuple = ()
    rule_rounds: Optional[int] = None

    def row(self, key: str) -> Row:
        return next(r for r in self.rows if r.key == key)

    def labels(self) -> dict:
        """Row key -> short name, as the claims print them."""
        return {r.key: r.name for r in self.rows}

    @property
    def dataset(self) -> str:
        return self.rows[0].overrides.get("dataset", "digits")


@dataclass(frozen=True)
class Paper:
    """A paper's headline experiments. ``seeds`` / ``quick_seeds``: default repetitions."""

    key: str
    title: str
    source: str
    claim: str
    tables: tuple
    seeds: int = 3
    quick_seeds: int = 2

    def table(self, key: str) -> Table:
        try:
            return next(t for t in self.tables if t.key == key)
        except StopIteration:
            known = ", ".join(t.key for t in self.tables)
            raise KeyError(f"paper {self.key!r} has no table {key!r}; known: {known}") from None


PAPERS: dict[str, Paper] = {}
"""Paper key -> :class:`Paper`, in registration order (:mod:`fedcore.papers` imports the modules in order)."""
PAPER_PRIVACY_CLAIMS: dict[str, str] = {}
"""Paper key -> privacy as the paper states it (shown beside our headline ε, labelled)."""


def register_paper(paper: Paper, *, privacy_claim: str) -> Paper:
    """Add ``paper`` to :data:`PAPERS` (and its ``privacy_claim`` to :data:`PAPER_PRIVACY_CLAIMS`)
    and each of its rows to the preset registry."""
    if paper.key in PAPERS:
        raise ValueError(f"paper {paper.key!r} is registered twice")
    PAPERS[paper.key] = paper
    PAPER_PRIVACY_CLAIMS[paper.key] = privacy_claim
    for table in paper.tables:
        for row in table.rows:
            if row.preset in PRESETS and PRESETS.get(row.preset) == row.overrides:
                continue   # the same experiment in two tables (e.g. FedAvg beside eps 1 and eps 5)
            register_preset(row.preset, summary=f"{paper.title}: {table.title} — {row.label}.",
                            paper=paper.source, overrides=row.overrides)
    return paper
