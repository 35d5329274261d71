"""Where objects turn into dicts on the validate path, and how many config types it touches,
measured from the source (no import runs).

    python bench/conversions.py [SRC_DIR] [--list]

The validate path: every scalelab module that `scalelab.cli.validate` and
`scalelab.pipeline.run` reach through imports (module-level and inside functions, followed
transitively), minus the report/ and cli/ modules (they only read and print what the steps
wrote). A conversion site is a call (an `ast.Call` in the code, not a mention in a
docstring or a message) of `.to_dict()` (no arguments: pandas' `to_dict("records")` is not
one), `from_dict(` or `asdict(`. A config type is a frozen dataclass of those modules that
subclasses `Config`, or is named `StopRule`/`Preset` (the issue's list), and that the
modules of the validate path name outside its own definition; `Backend` and `SizeGrid` (not
built by a validate run on the local pool) are left out. Prints the counts, and with --list
every site and type.


Each site is also classed: inside a serialization method (a function named `to_dict`,
`from_dict`, `save`, `load` or nested in one: an object writing or reading its own JSON),
at a folder (in a function that writes or reads a file, or names a run by a hash: it calls
one of `FOLDER_CALLS`), or a crossing (anywhere else: an object turned into a dict, or back,
to pass it on). The crossings are what "dicts only at the folder boundary" removes.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOTS = ("scalelab.cli.validate", "scalelab.pipeline.run")
SKIP_ROOMS = ("scalelab.report", "scalelab.cli")
NOT_BUILT = {"Backend", "SizeGrid"}  # Configs a local validate run never constructs
NAMED = {"StopRule", "Preset"}  # config dataclasses that do not subclass Config
PATTERNS = ("to_dict()", "from_dict(", "asdict(")


def _pattern(call: ast.Call) -> str | None:
    """Which conversion `call` is, if any."""
    name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
    if name == "to_dict" and isinstance(call.func, ast.Attribute):
        return None if call.args or call.keywords else "to_dict()"
    return {"from_dict": "from_dict(", "asdict": "asdict("}.get(name or "")


def modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in sorted((src / "scalelab").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported(tree: ast.AST, known: dict[str, Path]) -> set[str]:
    """scalelab modules this tree imports (anywhere in it)."""
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found |= {n for n in names if n in known}
    return found


def validate_path(src: Path) -> list[str]:
    known = modules(src)
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in known.items()}
    seen, todo = set(), list(ROOTS)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += sorted(imported(trees[m], known) - seen)
    return sorted(m for m in seen if not m.startswith(SKIP_ROOMS) and m != "scalelab")


SERIALIZERS = {"to_dict", "from_dict", "save", "load"}
FOLDER_CALLS = {
    "atomic_write_json",
    "atomic_write",
    "atomic_write_bytes",
    "read_json",
    "claim",
    "claimed",
    "check",
    "same_config",
    "open_sweep",
    "opened_sweep",
    "to_json",
    "dumps",
    "save",
    "save_state",
    "load_state",
    "sha256",
}


def _lines(node: ast.AST) -> set[int]:
    return set(range(node.lineno, (node.end_lineno or node.lineno) + 1))  # type: ignore[attr-defined]


def _classes(tree: ast.AST) -> dict[int, str]:
    """Line -> 'serializer' or 'folder' for the lines of such functions (innermost wins)."""
    out: dict[int, str] = {}
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    for node in sorted(funcs, key=lambda n: -len(_lines(n))):  # outer first, inner overrides
        calls = {
            getattr(c.func, "id", None) or getattr(c.func, "attr", None)
            for c in ast.walk(node)
            if isinstance(c, ast.Call)
        }
        kind = (
            "serializer" if node.name in SERIALIZERS else ("folder" if calls & FOLDER_CALLS else "")
        )
        for i in _lines(node):
            if kind or i not in out:
                out[i] = kind if kind else out.get(i, "")
    for node in funcs:  # a serializer's nested helpers stay serializers
        if node.name in SERIALIZERS:
            out.update(dict.fromkeys(_lines(node), "serializer"))
    return out


def sites(src: Path, mods: list[str]) -> dict[str, list[str]]:
    """Each pattern's sites as 'module:line', tagged ' (serializer)' or ' (folder)'."""
    known = modules(src)
    out: dict[str, list[str]] = {k: [] for k in PATTERNS}
    for m in mods:
        tree = ast.parse(known[m].read_text(encoding="utf-8"))
        kinds = _classes(tree)
        calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and _pattern(c)]
        for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
            tag = f" ({kinds[c.lineno]})" if kinds.get(c.lineno) else ""
            out[_pattern(c)].append(f"{m}:{c.lineno}{tag}")  # type: ignore[index]
    return out


def config_types(src: Path, mods: list[str]) -> list[str]:
    known = modules(src)
    trees = {m: ast.parse(known[m].read_text(encoding="utf-8")) for m in mods}
    defined: dict[str, str] = {}
    for m, tree in trees.items():
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
            frozen = any("frozen=True" in ast.unparse(d) for d in node.decorator_list)
            if frozen and ("Config" in bases or node.name in NAMED):
                defined[node.name] = m
    used = set()
    for m, tree in trees.items():
        for node in ast.walk(tree):
            name = getattr(node, "id", None) or getattr(node, "attr", None)
            if name in defined and not (defined[name] == m and _only_defined(tree, name)):
                used.add(name)
    return sorted(used - NOT_BUILT)


def _only_defined(tree: ast.AST, name: str) -> bool:
    """Whether `name` appears in its own module only as its class statement."""
    uses = [n for n in ast.walk(tree) if getattr(n, "id", None) == name]
    uses += [n for n in ast.walk(tree) if getattr(n, "attr", None) == name]
    return not uses


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    src = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "src"
    mods = validate_path(src)
    found = sites(src, mods)
    types = config_types(src, mods)
    total = sum(len(v) for v in found.values())
    parts = ", ".join(f"{len(v)} {k}" for k, v in found.items())
    print(f"validate path: {len(mods)} modules; {total} conversion sites ({parts})")
    for label, tag in (("in serializers", "(serializer)"), ("at a folder", "(folder)")):
        n = sum(w.endswith(tag) for v in found.values() for w in v)
        print(f"  {label}: {n}")
    crossing = {k: [w for w in v if not w.endswith(")")] for k, v in found.items()}
    n = sum(len(v) for v in crossing.values())
    parts = ", ".join(f"{len(v)} {k}" for k, v in crossing.items())
    print(f"  crossings (the rest): {n} ({parts})")
    print(f"config types: {len(types)} ({', '.join(types)})")
    if "--list" in argv:
        for key, where in found.items():
            print(f"\n{key}")
            print("\n".join(f"  {w}" for w in where))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
