"""The "paper vs ours" tables of a reproduction record, as Markdown and as plain rows.

Percentages are accuracy points (0.887 -> ``88.70``); ours are ``mean ± std`` over the
seeds (sample std, n - 1). The same rows feed the CLI's Markdown file, docs/reproduction.md
and the dashboard's Papers page.
"""
from __future__ import annotations

from typing import Optional

from .decompose import gap_to_paper, rule_c_causes
from .stats import common_rounds

HOLDS = {True: "holds", False: "does not hold", None: "not checked"}


def pct(x: Optional[float], signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{100 * x:+.2f}" if signed else f"{100 * x:.2f}"


def ours(entry: dict) -> str:
    """``mean ± std (n)`` of a row, or why it has no number."""
    if entry.get("mean") is None:
        return "not run" if not entry.get("ran", True) else "–"
    n = len(entry.get("finals") or [])
    return f"{100 * entry['mean']:.2f} ± {100 * (entry.get('std') or 0):.2f} (n={n})"


def caveat(entry: dict) -> str:
    """What the row's headline ε does not prove for what ran ("" = a rigorous bound): the record's
    own ``caveat``, else the one its stored config implies (records from before the key)."""
    if "caveat" in entry:
        return entry["caveat"] or ""
    from ..errors import FedcoreError
    from ..mechanisms import caveat_of

    try:
        return caveat_of((entry.get("config") or {}).get("privacy") or {})
    except FedcoreError:   # a record whose options no longer parse: nothing to add
        return ""


def headline(entry: dict) -> Optional[float]:
    """The row's headline ε: the largest over its seeds (None = ∞ or not recorded)."""
    values = entry.get("epsilon_headline")
    return None if not values or any(v is None for v in values) else max(values)


TARGETED = {"dp_sgd": lambda o: o.get("noise_multiplier", -1) == -1 and o.get("placement", "step") == "step",
            "uldp_gaussian": lambda o: o.get("reading") == "central" and o.get("noise", "auto") in ("auto", "accountant")}
"""Mechanisms (and options) whose ``privacy.epsilon`` is the whole run's headline ε they calibrate to:
DP-SGD per step (Abadi et al. 2016) and ULDP-FED's central reading (its accountant)."""


def over_target(entry: dict) -> Optional[float]:
    """``headline / target`` when the row spends more than the whole-run ε it was calibrated to
    (by more than 1 %), else None: such a row is not at the privacy its ε says."""
    privacy = (entry.get("config") or {}).get("privacy") or {}
    rule, head = TARGETED.get(privacy.get("mechanism")), headline(entry)
    if rule is None or head is None or not rule(privacy.get("mechanism_options") or {}):
        return None
    target = max(privacy.get("epsilon") or [0.0])
    return head / target if target > 0 and head > 1.01 * target else None


def epsilon_cell(entry: dict) -> str:
    """The row's headline epsilon (largest over its seeds; ∞ when nothing is noised) and threat model;
    ``*`` when a caveat says it is not proven for what ran, and how far it exceeds its target."""
    from ..accounting.headline import THREAT_MODEL_NAMES, format_epsilon

    if not entry.get("epsilon_headline"):
        return "–"
    threat = THREAT_MODEL_NAMES.get(entry.get("threat_model", ""), entry.get("threat_model", ""))
    text = format_epsilon(headline(entry)) + ("*" if caveat(entry) else "")
    over = over_target(entry)
    if over:
        target = max(entry["config"]["privacy"]["epsilon"])
        text += f", {over:.2f}× its target {target:g}"
    return f"{text} ({threat})" if threat else text


def unequal(entry: dict, ref: Optional[dict]) -> bool:
    """Whether ``entry`` and the reference row ``ref`` are *not* at equal privacy: either spends more
    than its target, or their headlines differ by more than 1 %."""
    if ref is None or over_target(entry) or over_target(ref):
        return bool(ref is not None)
    a, b = headline(entry), headline(ref)
    return a is not None and b is not None and abs(a - b) > 0.01 * max(a, b)


def caveat_notes(table: dict) -> list[str]:
    """One line per distinct caveat of the table's rows (the ``*`` of :func:`epsilon_cell`)."""
    notes: dict[str, list[str]] = {}
    for r in table["rows"]:
        if r.get("epsilon_headline") and caveat(r):
            notes.setdefault(caveat(r), []).append(r.get("short") or r["label"])
    return [f"\\* {', '.join(rows)}: the headline ε is not proven for what ran: {text}."
            for text, rows in notes.items()]


def table_rows(table: dict) -> list[dict]:
    """One dict per row: the columns of the comparison table (strings)."""
    ref_row = next((r for r in table["rows"] if r["key"] == table.get("reference")), None)
    ref = ref_row and (ref_row.get("short") or ref_row["label"])
    target = table.get("target")
    out = []
    for r in table["rows"]:
        row = {"method": r["label"], "preset": r["preset"], "paper acc %": pct(r.get("paper")),
               "ours acc % (mean ± std)": ours(r), "headline ε (threat model)": epsilon_cell(r)}
        if ref is not None and any(x.get("paper_gain") is not None or x.get("gain") is not None
                                   for x in table["rows"]):
            row[f"paper gain vs {ref}"] = pct(r.get("paper_gain"), signed=True)
            row[f"our gain vs {ref}"] = (("–" if r.get("gain") is None else pct(r.get("gain"), signed=True))
                                         + (" (unequal privacy)" if r.get("gain") is not None and unequal(r, ref_row)
                                            else ""))
        if target is not None:
            rt = r.get("rounds_to_target")
            paper_target = table.get("paper_target") or target
            row[f"paper rounds to {paper_target:g}"] = str(r["paper_rounds"]) if r.get("paper_rounds") else "–"
            row[f"our rounds to {target:g}"] = ("–" if r.get("mean") is None else str(rt) if rt is not None else
                                                "never" if common_rounds(r.get("curves") or [[None]]) else
                                                "no round where every seed was evaluated")
        out.append(row)
    return out


VERDICTS = ("holds", "does not hold", "inconclusive", "unequal privacy", "not checked")
"""A claim's verdicts (:func:`fedcore.reproduce.stats.paired_rule`, then the equal-privacy gate of
:meth:`fedcore.papers.spec.Claim.check`)."""


def verdict(claim: dict, table: Optional[dict] = None) -> str:
    """The claim's verdict as :meth:`fedcore.papers.spec.Claim.check` decided it (the paired rule,
    :data:`fedcore.reproduce.stats.RULE_TEXT`); a claim stored before that rule has none and reads
    "not checked" until its record is refreshed (:func:`fedcore.reproduce.run.refresh`)."""
    return claim.get("verdict") or HOLDS[None]


def table_seeds(table: dict) -> str:
    """The seeds a table's rows ran with, e.g. ``3`` or ``1-3`` when rows differ."""
    counts = sorted({len(r.get("finals") or []) for r in table.get("rows", []) if r.get("finals")})
    if not counts:
        return "0"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def table_verdict(table: dict) -> str:
    """One verdict per table, over its checked claims: "does not hold" if any does not hold, "holds"
    (or "unequal privacy") if all read so, "holds where ε is equal" if each reads one of the two, else
    "inconclusive" ("not checked" without claims or runs)."""
    verdicts = [verdict(c, table) for c in table.get("claims", [])]
    decided = [v for v in verdicts if v != HOLDS[None]]
    if not decided:
        return HOLDS[None]
    if "does not hold" in decided:
        return "does not hold"
    for v in ("holds", "unequal privacy"):
        if all(x == v for x in decided):
            return v
    return "holds where ε is equal" if set(decided) == {"holds", "unequal privacy"} else "inconclusive"


def rounds_status(table: dict) -> list[str]:
    """Which rows ran the T that the table's rule asks for (``rule_rounds``) and which did not, from
    each row's stored config, with what a run at that T would take at the pace its record measured
    ([] without a rule)."""
    want = table.get("rule_rounds")
    ran = [r for r in table.get("rows", []) if r.get("finals")]
    if not want or not ran:
        return []
    name = lambda r: r.get("short") or r["label"]   # noqa: E731
    at = [r for r in ran if (r.get("config") or {}).get("rounds") == want]
    off = [r for r in ran if r not in at]
    head = (f"Rows at the rule's T = {want}: " + ", ".join(f"{name(r)} ({len(r['finals'])} seeds)" for r in at)
            if at else f"No row of this table ran the rule's T = {want} yet")
    lines = [head + ("; not at it:" if off else ".")]
    for r in off:
        t = (r.get("config") or {}).get("rounds")
        secs = r.get("seconds_per_seed") or []
        pace = (f"; at T = {want} about {sum(secs) / len(secs) / t * want / 60:.0f} min per seed at the pace "
                f"its record measured ({sum(secs) / len(secs) / t:.1f} s a round)") if secs and t else ""
        lines.append(f"- {name(r)}: its record ran T = {t} ({len(r['finals'])} seeds){pace}")
    words = (table.get("command") or "").split()
    if off and words[:4] == ["python", "-m", "fedcore", "reproduce"] and len(words) > 4:
        seeds = max(len(r["finals"]) for r in ran)
        lines.append(f"\nCommand for them: `python -m fedcore reproduce {words[4]} --tables {table['key']} --seeds "
                     f"{seeds} --rows {','.join(r['key'] for r in off)} --set rounds={want} --out <folder>`")
    return lines


def claim_lines(table: dict) -> list[str]:
    return [f"- {c['claim']}: **{verdict(c, table)}** — {c['detail']}" for c in table.get("claims", [])]


def _md_table(rows: list[dict]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines)


def table_markdown(table: dict, level: str = "##") -> str:
    parts = [f"{level} {table['title']}", ""]
    if table.get("mode"):
        parts += [f"*{table['mode']} · {table_seeds(table)} seed(s) per row · {table.get('created', '')}*", ""]
    commands: dict = {}
    for r in table.get("rows", []):
        if r.get("finals"):
            commands.setdefault(r.get("command") or table.get("command"), []).append(r.get("short") or r["label"])
    commands.pop(None, None)
    if len(commands) == 1:
        parts += [f"Command: `{next(iter(commands))}`", ""]
    elif commands:
        parts += ["Commands (the rows each one trained):", ""]
        parts += [f"- `{c}`: {', '.join(rows)}" for c, rows in commands.items()] + [""]
    elif table.get("command"):
        parts += [f"Command: `{table['command']}`", ""]
    if table["status"] != "ran":
        parts += [f"*{table['status']}*", ""]
    parts += [_md_table(table_rows(table)), ""]
    if caveat_notes(table):
        parts += ["  \n".join(caveat_notes(table)), ""]
    claims = claim_lines(table)
    if claims:
        parts += ["Claims:", "", *claims, ""]
    for lines in (rule_c_causes(table), gap_to_paper(table)):
        if lines:
            parts += [" ".join(lines), ""]
    status = rounds_status(table)
    if status:
        parts += ["\n".join(status), ""]
    parts += [f"Settings the paper leaves open: {table['notes']}", ""]
    if table.get("quick_notes"):
        parts += [f"Quick-mode reductions: {table['quick_notes']}", ""]
    return "\n".join(parts)


def markdown(record: dict, level: str = "#") -> str:
    """The whole record: header, then one section per table."""
    from .stats import RULE_TEXT

    head = [f"{level} {record['source']} — paper vs ours", "", RULE_TEXT, "",
            f"**Mode: {record['mode']}** · seeds {record['seeds']} · device {record['device']} · "
            f"{record['created']} · {record.get('elapsed_s', 0):.0f} s", "",
            f"Command: `{record['command']}`", "",
            f"Paper's claim: {record['claim']}", ""]
    body = [table_markdown(t, level + "#") for t in record["tables"]]
    return "\n".join(head + body)
