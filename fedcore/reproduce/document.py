"""docs/reproduction.md, generated from the stored records (``python -m fedcore reproduce --report``).

The document mixes hand-written prose (causes, readings; it quotes no number) with
generated blocks, each between ``<!-- generated: NAME -->`` and ``<!-- /generated: NAME -->``:

- ``rule``: the paired rule every verdict follows (:data:`fedcore.reproduce.stats.RULE_TEXT`);
- ``summary``: one line per paper table that ran here: mode, seeds per row, verdict;
- ``<paper>`` (``pldp``, ``ldp_fl``, ``hw_dpfl``, ``kdp_fl``, ``uldp``): the paper's claim,
  then each table as stored (paper vs ours, headline ε, claims and their verdicts, the
  command that made it, the settings the paper leaves open) and the tables not run here.

Every number, seed count, setting and verdict of the document is in a generated block.
:func:`write` rewrites the blocks in place (prose kept); :func:`check` lists the blocks that
differ from what the records generate (``--report --check`` exits 1 then; a test runs it).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

from .report import HOLDS, table_markdown, table_seeds, table_verdict

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproduction.md"
BLOCK = re.compile(r"<!-- generated: (?P<name>[a-z_]+) -->\n(?P<body>.*?)<!-- /generated: (?P=name) -->",
                   re.DOTALL)


def records(folder: Optional[Path] = None) -> dict:
    """``{paper key: stored record or None}`` for every registered paper."""
    from ..papers import PAPERS
    from .results import load

    return {key: load(key, folder) for key in PAPERS}


def summary_block(recs: dict) -> str:
    from ..papers import PAPERS

    lines = ["| paper | table | mode | seeds per row | verdict |", "|---|---|---|---|---|"]
    for key, paper in PAPERS.items():
        rec = recs.get(key) or {}
        for t in rec.get("tables", []):
            if t.get("status") != "ran":
                continue
            lines.append(f"| {paper.title} | {t['title']} | {t.get('mode') or rec.get('mode')} | "
                         f"{table_seeds(t)} | {table_verdict(t)} |")
    return "\n".join(lines) + "\n"


def paper_block(key: str, rec: Optional[dict]) -> str:
    from ..papers import PAPER_PRIVACY_CLAIMS, PAPERS

    paper = PAPERS[key]
    parts = [f"Paper's claim: {paper.claim}", "", f"Privacy as the paper states it: {PAPER_PRIVACY_CLAIMS[key]}", ""]
    if rec is None:
        return "\n".join(parts + ["*No stored record.*", ""])
    parts += [f"Record: device `{rec.get('device', '–')}` · {rec.get('created', '–')} · "
              f"mode {rec.get('mode', '–')}.", ""]
    done = {t["key"]: t for t in rec.get("tables", [])}
    for table in paper.tables:
        t = done.get(table.key)
        if t is None or t.get("status") != "ran":
            continue
        t = {**t, "mode": t.get("mode") or rec.get("mode"), "command": t.get("command") or rec.get("command")}
        parts.append(table_markdown(t, "###"))
        parts.append(f"Verdict: **{table_verdict(t)}** ({table_seeds(t)} seed(s) per row).")
        parts.append("")
    skipped = [(table, done.get(table.key)) for table in paper.tables
               if done.get(table.key) is None or done[table.key].get("status") != "ran"]
    if skipped:
        parts += ["Not run here:", ""]
        for table, t in skipped:
            why = t["status"] if t is not None else "not run (no record)"
            parts.append(f"- {table.title}: {why}")
        parts.append("")
    return "\n".join(parts)


def blocks(folder: Optional[Path] = None) -> dict:
    """``{block name: generated Markdown}`` from the records in ``folder``."""
    from .stats import RULE_TEXT

    from .run import refresh

    # every verdict by the current rule, recomputed from the stored runs (the records are not changed)
    recs = {k: refresh(json.loads(json.dumps(r))) if r else r for k, r in records(folder).items()}
    out = {"rule": RULE_TEXT + "\n", "summary": summary_block(recs)}
    out.update({key: paper_block(key, rec) for key, rec in recs.items()})
    return out


def render(text: str, generated: dict) -> str:
    """``text`` with every generated block replaced by ``generated[name]``."""
    def sub(m):
        name = m.group("name")
        body = generated.get(name, m.group("body"))
        return f"<!-- generated: {name} -->\n{body}<!-- /generated: {name} -->"
    return BLOCK.sub(sub, text)


PROSE_STATE = re.compile(r"\d+(?:\.\d+)? ?%|[+−-]?\d+\.\d+ points|\b(?:one|two|three|\d+) seeds? per row"
                         r"|--seeds \d|\bno GPU\b|multiples of ten|quotes no number")
"""What hand-written prose may not state (issue 52 §8): accuracies, gains in points, seed counts,
a seeds flag, the device, the evaluation grid; they are in the generated blocks."""


def prose_state(text: str) -> list[str]:
    """The phrases of ``text`` outside its generated blocks that state a result or a run's state."""
    return [m.group(0) for m in PROSE_STATE.finditer(BLOCK.sub("", text))]


def check(doc: Path = DOC, folder: Optional[Path] = None) -> list[str]:
    """Names of the blocks of ``doc`` that differ from what the records generate, of the papers
    with no block at all, and ``prose`` when the text outside the blocks states a result or a
    run's state (:func:`prose_state`; empty: the document is up to date)."""
    text = doc.read_text()
    generated = blocks(folder)
    present = {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}
    stale = [name for name, body in present.items() if name in generated and generated[name] != body]
    return stale + [name for name in generated if name not in present] + (["prose"] if prose_state(text) else [])


def write(doc: Path = DOC, folder: Optional[Path] = None) -> list[str]:
    """Rewrite the generated blocks of ``doc``; the names of those that changed."""
    stale = [name for name in check(doc, folder) if name != "prose"]   # prose is the author's to fix
    doc.write_text(render(doc.read_text(), blocks(folder)))
    return stale


__all__ = ["blocks", "check", "render", "write", "HOLDS"]
