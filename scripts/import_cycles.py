"""Count import circles inside a package: strongly connected components of its module
import graph (every ``import`` / ``from ... import`` statement, including the ones inside
functions, since a lazy import still ties two modules together).

    python scripts/import_cycles.py fedcore        # prints each circle and the count
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, name: str, is_pkg: bool, known: set[str]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name if is_pkg else name.rpartition(".")[0]
            for _ in range(max(0, node.level - 1)):
                base = base.rpartition(".")[0]
            mod = (base + "." + node.module if node.module else base) if node.level else node.module
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def cycles(package: str) -> list[list[str]]:
    root = Path(package).resolve()
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    known = set(files)
    graph = {m: imports(p, m, p.name == "__init__.py", known) for m, p in files.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    found = cycles(sys.argv[1] if len(sys.argv) > 1 else "fedcore")
    for comp in found:
        print(f"{len(comp)} modules: " + ", ".join(comp))
    print(f"import circles: {len(found)}; modules in circles: {sum(map(len, found))}")
