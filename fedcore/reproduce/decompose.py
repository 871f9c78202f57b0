"""Why PLDP-FL's rule C trails, decided by measured rows (issue 39 §3; METHODS section 1).

The paper claims C (probability-based selection) ≥ B (weighted) ≥ A (mean). Where C trails the
rule it should beat, two causes are possible, and each has a row that removes it alone:

- **empty rounds**: the literal rule draws one ω per round and selects every client with
  P_i > ω, so with P_i = ρ_i / Σ_j ρ_j nobody is selected in 1 − max_i P_i of the rounds and the
  model does not move. The record's ``empty_round`` signal (the seed mean of each run's share of
  empty rounds) measures it; **C-max** (P_i = ρ_i / max_j ρ_j) never has an empty round.
- **one upload instead of an average**: a round of C trains on the few selected clients' noisy
  uploads, where B averages every client's, whose independent noise partly cancels. C-max keeps
  that cost (its least noisy client alone), so B − C-max measures it.

A gap counts only when the paired rule of the table's claims
(:func:`fedcore.papers.verdict.paired_rule`: the rows paired by seed, a 95 % interval of the
differences) puts it wholly on one side of zero; otherwise the sentence says the rows do not separate.
"""
from __future__ import annotations

from typing import Optional

RIVALS = ("b", "a")
"""The rules C is claimed to beat, the first present in a failing claim being the one explained."""


def _row(table: dict, key: str) -> Optional[dict]:
    return next((r for r in table.get("rows", []) if r.get("key") == key and r.get("finals")), None)


def _gap(hi: dict, lo: dict) -> tuple[float, bool]:
    """``hi`` − ``lo`` in accuracy points (the mean of the paired differences), and whether its
    95 % interval excludes zero (:func:`fedcore.papers.verdict.paired_rule`)."""
    from .stats import paired_rule

    a = dict(zip(hi.get("seeds") or range(len(hi["finals"])), hi["finals"]))
    b = dict(zip(lo.get("seeds") or range(len(lo["finals"])), lo["finals"]))
    rule = paired_rule([a[s] - b[s] for s in a if s in b])
    return 100 * (rule["mean"] or 0.0), rule["verdict"] != "inconclusive"


def _failing_rival(table: dict) -> Optional[str]:
    """The rule (``b`` before ``a``) that a claim "C ≥ ..." not holding (or not decided) names
    and that measures above C, or None."""
    c = _row(table, "c")
    if c is None:
        return None
    for claim in table.get("claims", []):
        text = claim.get("claim", "")
        if not text.startswith("C ≥") or claim.get("verdict") == "holds":
            continue
        named = text.split("(")[0].split("≥")[1:]
        for rival in RIVALS:
            other = _row(table, rival)
            if any(part.strip() == rival.upper() for part in named) and other and other["mean"] > c["mean"]:
                return rival
    return None


def rule_c_causes(table: dict) -> list[str]:
    """Sentences saying which cause the rows support where C trails the rule it is claimed to beat
    ([] when it does not trail, or the table lacks C, C-max or that rule); every gap is the mean of
    the seeds' paired differences."""
    rival = _failing_rival(table)
    c, c_max = _row(table, "c"), _row(table, "c_max")
    if rival is None or c_max is None:
        return []
    other = _row(table, rival)
    name = rival.upper()
    total, total_sep = _gap(other, c)
    empty = (c.get("signals") or {}).get("empty_round")
    said_empty = (f"C selected nobody in {100 * empty:.0f} % of its rounds (the model stays put in them). "
                  if empty is not None else "")
    fixed, fixed_sep = _gap(c_max, c)
    rest, rest_sep = _gap(other, c_max)
    empty_cause, mean_cause = fixed_sep and fixed > 0, rest_sep and rest > 0
    seeds = min(len(r["finals"]) for r in (c, c_max, other))
    head = (f"Why C trails {name} by {total:.1f} points (mean over {seeds} seeds, paired"
            f"{'' if total_sep else '; its 95 % interval includes zero'}): "
            + said_empty + f"C-max, which never has an empty round, reaches {100 * c_max['mean']:.2f} % "
            f"against C's {100 * c['mean']:.2f} % and {name}'s {100 * other['mean']:.2f} %.")
    averaging = (f"training on one selected client's noisy upload per round where {name} averages every "
                 "client's, whose independent noise partly cancels")
    if empty_cause and mean_cause:
        why = (f"The numbers support both causes: the empty rounds cost {fixed:.1f} points (C-max − C) and "
               f"{averaging} costs the other {rest:.1f} ({name} − C-max).")
    elif empty_cause:
        why = (f"The numbers support the empty rounds as the cause: removing them recovers {fixed:.1f} points, "
               f"and C-max is {'not below' if rest <= 0 else 'within the paired interval of'} {name}.")
    elif mean_cause:
        why = (f"The numbers support the averaging as the cause, not the empty rounds (C-max is within the paired "
               f"interval of C): {averaging} costs {rest:.1f} points ({name} − C-max).")
    else:
        why = (f"Neither cause separates at {seeds} seeds: C-max − C = {fixed:+.1f} and {name} − C-max = "
               f"{rest:+.1f} points, neither with a paired 95 % interval above zero.")
    return [head, why]


def _paired_points(table: dict, hi: str, lo: str) -> Optional[str]:
    """``hi − lo`` as ``+3.58 [+1.2, +5.9]`` points (paired by seed, 95 %), or None when a row is missing."""
    from .stats import paired_rule

    a, b = _row(table, hi), _row(table, lo)
    if a is None or b is None:
        return None
    x = dict(zip(a.get("seeds") or range(len(a["finals"])), a["finals"]))
    y = dict(zip(b.get("seeds") or range(len(b["finals"])), b["finals"]))
    r = paired_rule([x[s] - y[s] for s in x if s in y])
    if r["low"] is None:
        return f"{100 * r['mean']:+.2f} (one seed)"
    return f"{100 * r['mean']:+.2f} [{100 * r['low']:+.2f}, {100 * r['high']:+.2f}]"


def gap_to_paper(table: dict) -> list[str]:
    """The gap between the paper's DP row and ours, decomposed by measured rows (issue 52 §4; KDP-FL):
    paper DP − ours DP = (paper no privacy − ours: the rounds T and the training) + (no privacy − clip
    only: clipping at our λ) + (clip only − DP: the noise over T) − (paper no privacy − paper DP: the
    paper's own cost of privacy). Said for tables with a rule for T (``rule_rounds``) that hold the rows
    ``fedavg``, ``clip`` and ``dpfedavg`` and the paper's numbers for the first and last ([] otherwise)."""
    rows = {k: _row(table, k) for k in ("fedavg", "clip", "dpfedavg", "clip_paper_lr", "dpfedavg_paper_lr")}
    f, c, d = rows["fedavg"], rows["clip"], rows["dpfedavg"]
    if not table.get("rule_rounds") or not (f and c and d) or f.get("paper") is None or d.get("paper") is None:
        return []
    rounds = sorted({(r.get("config") or {}).get("rounds") for r in (f, c, d)} - {None})
    at = " and ".join(f"T = {t}" for t in rounds) or "the stored T"
    pts = lambda x: f"{100 * x:.2f}"   # noqa: E731
    gap = lambda hi, lo: f"{100 * (hi - lo):.2f}"   # noqa: E731
    text = (f"Gap to the paper, decomposed by measured rows ({at}; paired differences over seeds with 95 % "
            f"intervals, points): the paper's {d['label']} {pts(d['paper'])} against our {pts(d['mean'])}, "
            f"{gap(d['paper'], d['mean'])} points = {gap(f['paper'], f['mean'])} (the paper's no-privacy row "
            f"{pts(f['paper'])} against ours {pts(f['mean'])}: rounds and training at {at}) + "
            f"{gap(f['mean'], c['mean'])} (clipping, with our λ: {f['label']} − {c['label']} "
            f"{_paired_points(table, 'fedavg', 'clip')}) + {gap(c['mean'], d['mean'])} (the noise over T: "
            f"{c['label']} − {d['label']} {_paired_points(table, 'clip', 'dpfedavg')}) − "
            f"{gap(f['paper'], d['paper'])} (the paper's own cost of privacy).")
    if rows["clip_paper_lr"] and rows["dpfedavg_paper_lr"]:
        text += (f" The λ: at the paper's, clipping costs {_paired_points(table, 'fedavg', 'clip_paper_lr')} and the "
                 f"noise {_paired_points(table, 'clip_paper_lr', 'dpfedavg_paper_lr')}; ours lifts clip only by "
                 f"{_paired_points(table, 'clip', 'clip_paper_lr')}.")
    return [text]
