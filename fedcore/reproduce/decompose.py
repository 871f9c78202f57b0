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

A gap counts only when it is at least the larger seed standard deviation of its two rows, the
rule of the table's claims (:func:`fedcore.papers.spec._check_order`); otherwise the sentence
says the rows do not separate.
"""
from __future__ import annotations

from typing import Optional

RIVALS = ("b", "a")
"""The rules C is claimed to beat, the first present in a failing claim being the one explained."""


def _row(table: dict, key: str) -> Optional[dict]:
    return next((r for r in table.get("rows", []) if r.get("key") == key and r.get("finals")), None)


def _gap(hi: dict, lo: dict) -> tuple[float, bool]:
    """``hi`` − ``lo`` in accuracy points, and whether it exceeds the larger seed std of the two."""
    gap = hi["mean"] - lo["mean"]
    return 100 * gap, abs(gap) >= max(hi.get("std") or 0.0, lo.get("std") or 0.0) and len(hi["finals"]) > 1


def _failing_rival(table: dict) -> Optional[str]:
    """The rule (``b`` before ``a``) that a claim "C ≥ ..." not holding (or not decided) names
    and that measures above C, or None."""
    c = _row(table, "c")
    if c is None:
        return None
    for claim in table.get("claims", []):
        text = claim.get("claim", "")
        if not text.startswith("C ≥") or (claim.get("holds") and not claim.get("within_noise")):
            continue
        named = text.split("(")[0].split("≥")[1:]
        for rival in RIVALS:
            other = _row(table, rival)
            if any(part.strip() == rival.upper() for part in named) and other and other["mean"] > c["mean"]:
                return rival
    return None


def rule_c_causes(table: dict) -> list[str]:
    """Sentences saying which cause the rows support where C trails the rule it is claimed to beat
    ([] when it does not trail, or the table lacks C, C-max or that rule)."""
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
    head = (f"Why C trails {name} by {total:.1f} points{'' if total_sep else ' (within the seed spread)'}: "
            + said_empty + f"C-max, which never has an empty round, reaches {100 * c_max['mean']:.2f} % "
            f"against C's {100 * c['mean']:.2f} % and {name}'s {100 * other['mean']:.2f} %.")
    averaging = (f"training on one selected client's noisy upload per round where {name} averages every "
                 "client's, whose independent noise partly cancels")
    if empty_cause and mean_cause:
        why = (f"The numbers support both causes: the empty rounds cost {fixed:.1f} points (C-max − C) and "
               f"{averaging} costs the other {rest:.1f} ({name} − C-max).")
    elif empty_cause:
        why = (f"The numbers support the empty rounds as the cause: removing them recovers {fixed:.1f} points, "
               f"and C-max is {'not below' if rest <= 0 else 'within the seed spread of'} {name}.")
    elif mean_cause:
        why = (f"The numbers support the averaging as the cause, not the empty rounds (C-max is within the seed "
               f"spread of C): {averaging} costs {rest:.1f} points ({name} − C-max).")
    else:
        why = (f"Neither cause separates from the seed spread at {seeds} seeds: C-max − C = {fixed:+.1f} and "
               f"{name} − C-max = {rest:+.1f} points.")
    return [head, why]
