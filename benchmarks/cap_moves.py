"""How the caps of an attacked frontier moved between two versions of it (docs/benchmarks.md, issue 37).

    python -m benchmarks.cap_moves OLD.json NEW.json

One markdown row per (method, column ε): the seed means of each cap, old -> new, and the ε the new
one is proven at for its game (``reidentified_cap_epsilon``, ``mia_cap_epsilon``, ``worst_cap_epsilon``).
The old file's worst-case row was drawn against LiRA's cap (``mia_cap``), so that is its old value.
"""
from __future__ import annotations

import argparse

from fedcore.sweep import read_frontier
from fedcore.sweep.attack import attack_summary


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.3g} %"


def _eps(x) -> str:
    from fedcore.accounting.headline import format_epsilon

    return "∞" if x is None else format_epsilon(x)


def _mean(rows: list, key: str):
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else None


def table(old_rows: list, new_rows: list) -> list[str]:
    old = {(s["method"], s["epsilon"], s["reference"]): s for s in attack_summary(old_rows)}
    lines = ["| method (threat) | ε | re-identification cap | its ε (game) | LiRA cap @1 % | its ε | worst-case cap @1 % | its ε |",
             "|---|---|---|---|---|---|---|---|"]
    for s in attack_summary(new_rows):
        if s["epsilon"] is None:
            continue
        o = old.get((s["method"], s["epsilon"], s["reference"]), {})
        same = [r for r in new_rows if (r["method"], r["epsilon"]) == (s["method"], s["epsilon"])]
        worst = (f"{_pct(o.get('mia_cap'))} → {_pct(s['worst_cap'])}" if s.get("worst_tpr") is not None else "-")
        lines.append(f"| {s['method']} ({s['threat_model']}) | {s['epsilon']:g} | {_pct(o.get('cap'))} → {_pct(s['cap'])} "
                     f"| {_eps(s.get('cap_epsilon'))} | {_pct(o.get('mia_cap'))} → {_pct(s['mia_cap'])} "
                     f"| {_eps(s.get('mia_cap_epsilon'))} | {worst} | {_eps(_mean(same, 'worst_cap_epsilon'))} |")
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    args = p.parse_args(argv)
    print("\n".join(table(read_frontier(args.old), read_frontier(args.new))))


if __name__ == "__main__":
    main()
