"""The import structure of the scalelab package, measured from its source (no import runs).

    python bench/imports.py [SRC_DIR] [--json]

Prints: module-level import cycles, imports that run against the declared layer order
(`LAYERS`, bottom first), folder-level loops, imports a room may not make (`FORBIDDEN`: report/
imports no fitting and no analysis), imports hidden inside functions, and, as a report, the
largest modules and the longest functions. Exit code 1 when any cycle, back-edge, forbidden
import or folder loop is found, so `tests/test_structure.py` can hold the line. Size is never
a failure: a file holds one concept whatever its length.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

# Bottom first. A room may import only rooms on a strictly lower floor (or itself).
LAYERS: list[set[str]] = [
    {"errors"},
    {"io", "seeds", "fields", "malloc"},
    {"config", "progress", "device", "scalars"},
    {"runs"},
    {"text", "intrinsic", "laws"},
    {"lm"},
    {"probe"},
    {"sweeps", "manifold", "induction"},
    {"report"},
    {"pipeline", "api"},
    {"cli"},
    {"__init__", "__main__"},
]
#: Modules (or packages: everything in them) a room may not import at run time, even from
#: below: report/ draws what the library computed and takes analysed objects, so it imports
#: neither the fits nor the sweeps' analyses (their types only under TYPE_CHECKING, for
#: annotations; the fitted law's record, `laws.fit.fitted`, is what it draws).
FORBIDDEN: dict[str, set[str]] = {
    "report": {
        "scalelab.laws.fit.power_law",
        "scalelab.laws.fit.chinchilla",
        "scalelab.manifold.analysis",
        "scalelab.manifold.results",
        "scalelab.sweeps.analysis",
    }
}
#: How many of the largest modules and longest functions the report lists.
SHOWN = 5


def floor(room: str) -> int:
    for i, rooms in enumerate(LAYERS):
        if room in rooms:
            return i
    raise KeyError(f"room {room!r} has no floor in LAYERS; add it")


def modules(src: Path) -> dict[str, Path]:
    """Dotted module name → file, for every .py under src/scalelab."""
    out = {}
    for path in sorted((src / "scalelab").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path, name: str, known: set[str]) -> list[tuple[str, bool]]:
    """(imported scalelab module, imported inside a function) for each import statement."""
    tree = ast.parse(path.read_text())
    found: list[tuple[str, bool]] = []
    is_pkg = path.name == "__init__.py"

    def resolve(mod: str) -> str | None:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or None

    def visit(node: ast.AST, in_func: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_func or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("scalelab"):
                        found.append((resolve(alias.name), in_func))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg = name if is_pkg else name.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = f"{pkg}.{base}" if base else pkg
                if not base.startswith("scalelab"):
                    continue
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append((full if full in known else resolve(base), in_func))
            elif isinstance(child, ast.If) and _type_checking(child):
                continue  # annotations only: never imported at run time
            else:
                visit(child, nested)

    visit(tree, False)
    return [(m, f) for m, f in found if m and m != name]


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """(name, lines) of every function and method of a file."""
    tree = ast.parse(path.read_text())
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def is_forbidden(room_name: str, target: str) -> bool:
    """`target` is a module FORBIDDEN names for the room, or lies in a package it names."""
    return any(target == f or target.startswith(f + ".") for f in FORBIDDEN.get(room_name, ()))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
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

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def measure(src: Path) -> dict:
    mods = modules(src)
    known = set(mods)
    graph: dict[str, set[str]] = defaultdict(set)
    rooms: dict[str, set[str]] = defaultdict(set)
    lazy = 0
    back: list[str] = []
    forbidden: list[str] = []
    for name, path in mods.items():
        graph[name]
        for target, in_func in imports(path, name, known):
            graph[name].add(target)
            lazy += in_func
            a, b = room(name), room(target)
            if is_forbidden(a, target):
                forbidden.append(f"{name} -> {target}")
            if a != b:
                rooms[a].add(b)
                if target != "scalelab" and floor(b) >= floor(a):
                    back.append(f"{name} -> {target}")
    sizes = {n: len(p.read_text().splitlines()) for n, p in mods.items()}
    funcs = [(f"{n}.{f}", k) for n, p in mods.items() for f, k in function_lengths(p)]
    funcs.sort(key=lambda fk: -fk[1])
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])
    room_graph = {a: {b for b in bs if b != "__init__"} for a, bs in rooms.items()}
    return {
        "modules": len(mods),
        "rooms": len({room(n) for n in mods}),
        "floors": len({floor(room(n)) for n in mods}),
        "lines": sum(sizes.values()),
        "module_cycles": cycles(graph),
        "folder_loops": cycles(room_graph),
        "back_edges": sorted(set(back)),
        "forbidden_imports": sorted(set(forbidden)),
        "imports_inside_functions": lazy,
        "largest_modules": dict(largest[:SHOWN]),
        "longest_functions": dict(funcs[:SHOWN]),
    }


def broken(m: dict) -> bool:
    """A cycle, a folder loop, an import against the layers or a forbidden import (never size)."""
    keys = ("module_cycles", "folder_loops", "back_edges", "forbidden_imports")
    return any(m[k] for k in keys)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    src = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "src"
    m = measure(src)
    if "--json" in argv:
        print(json.dumps(m, indent=1))
        return int(broken(m))
    print(f"source: {src}")
    print(f"modules {m['modules']}, rooms {m['rooms']} on {m['floors']} floors, {m['lines']} lines")
    print(f"module-level import cycles: {len(m['module_cycles'])} {m['module_cycles']}")
    print(f"folder loops: {len(m['folder_loops'])} {m['folder_loops']}")
    print(f"imports against the layer order: {len(m['back_edges'])}")
    for edge in m["back_edges"]:
        print(f"  {edge}")
    print(f"forbidden imports (FORBIDDEN): {len(m['forbidden_imports'])}")
    for edge in m["forbidden_imports"]:
        print(f"  {edge}")
    print(f"imports inside functions: {m['imports_inside_functions']}")
    print(f"largest modules (lines, a report: no limit): {m['largest_modules']}")
    print(f"longest functions (lines, a report: no limit): {m['longest_functions']}")
    return int(broken(m))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
