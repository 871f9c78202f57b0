"""What a paper's headline experiments are here: tables of presets, the paper's numbers, its claims.

Shared by the five paper modules of :mod:`fedcore.papers` (one per paper, like
:mod:`fedcore.recipes`). A :class:`Paper` holds :class:`Table` s (one experiment of the paper: a
dataset and a setting); a table holds :class:`Row` s (one method or budget each; every row is a
named preset in :data:`fedcore.presets.PRESETS`) and the :class:`Claim` s the paper makes about
them. Numbers are fractions (0.887, not 88.7 %) everywhere in code and JSON.
:func:`register_paper` adds a paper to :data:`PAPERS` (in registration order: the order of the
CLI, the Papers page and docs/reproduction.md) and each of its rows to the preset registry.

Claims are checked on the mean over seeds (our numbers: :class:`fedcore.reproduce.stats.RowStats`):

- ``order``: ``rows[0] >= rows[1] >= ...`` on final accuracy, each step allowed to fall
  short by ``tol`` (e.g. PLDP-FL's C >= B >= A, KDP-FL > DP-FedAvg);
- ``faster``: each of ``rows`` first reaches the table's target accuracy in fewer rounds
  than ``than`` (ULDP-FED: DSDP / DCDP reach 0.95 before DP-FedAvg), measured on the
  seed-mean accuracy curve; a row that never reaches the target counts as infinitely slow.

>>> Claim("order", ("c", "b", "a")).describe({"a": "A", "b": "B", "c": "C"})
'C ≥ B ≥ A (final accuracy)'
"""
from __future__ import annotations

import math
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
        """``{"claim", "holds" (True / False / None = not checkable), "detail"}``; ``stats``: row key ->
        our numbers for the row (:class:`fedcore.reproduce.stats.RowStats`: ``finals``, ``mean``,
        ``std``, ``rounds_to``)."""
        claim = self.describe(labels)
        needed = list(self.rows) + ([self.than] if self.kind == "faster" else [])
        missing = [k for k in needed if k not in stats or not stats[k].finals]
        if missing and self.kind == "order" and len(needed) - len(missing) >= 2:
            present = Claim("order", tuple(k for k in self.rows if k not in missing), tol=self.tol)
            result = _check_order(present, stats, labels)
            skipped = ", ".join(labels.get(k, k) for k in missing)
            return {**result, "claim": claim, "detail": f"{result['detail']} ({skipped} not run)"}
        if missing:
            return {"claim": claim, "holds": None,
                    "detail": "not checked: no results for " + ", ".join(labels.get(k, k) for k in missing)}
        if self.kind == "order":
            return {"claim": claim, **_check_order(self, stats, labels)}
        if target is None:
            return {"claim": claim, "holds": None, "detail": "not checked: the table has no target accuracy"}
        return {"claim": claim, **_check_faster(self, stats, labels, target)}


def _check_order(claim: Claim, stats: dict, labels: dict) -> dict:
    """Each consecutive step; ``within_noise`` when some step's gap is below the larger
    seed std of its two rows (the verdict could flip with other seeds)."""
    means = [stats[k].mean for k in claim.rows]
    parts, holds, noisy = [f"{labels.get(claim.rows[0], claim.rows[0])} {100 * means[0]:.2f}"], True, False
    for i in range(1, len(means)):
        ok = means[i - 1] >= means[i] - claim.tol
        holds &= ok
        spread = max(stats[claim.rows[i - 1]].std, stats[claim.rows[i]].std)
        noisy |= len(stats[claim.rows[i]].finals) > 1 and abs(means[i - 1] - means[i]) < spread
        parts.append(f"{'≥' if ok else '<'} {labels.get(claim.rows[i], claim.rows[i])} {100 * means[i]:.2f}")
    detail = " ".join(parts) + (" (a gap is within the seed std)" if noisy else "")
    return {"holds": holds, "detail": detail, "within_noise": noisy}


def _check_faster(claim: Claim, stats: dict, labels: dict, target: float) -> dict:
    def rounds(k):
        r = stats[k].rounds_to(target)
        return math.inf if r is None else r

    def show(k):
        r = stats[k].rounds_to(target)
        return f"{labels.get(k, k)} {'never' if r is None else f'{r} rounds'}"

    base = rounds(claim.than)
    holds = all(rounds(k) < base for k in claim.rows)
    detail = ", ".join(show(k) for k in claim.rows) + f" vs {show(claim.than)} (target {100 * target:g} %)"
    return {"holds": holds, "detail": detail}


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
