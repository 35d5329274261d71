"""Are two validate folders the same result, bit for bit? (a refactor's proof of no change)

    python bench/same_outputs.py OLD NEW

Compares what a validation computed, leaving out only what differs between any two runs of
the same code: wall and CPU times, provenance (git revision, versions, clock) and the folder
paths themselves (OLD's path is read as NEW's).

- every runs.csv (data sweep, model sweep, check): the same rows, the same values;
- every *.safetensors: the same files, the same sha256;
- summary.json and fits.json: the same keys and values (d of every source, the fits, the
  regime analysis, the convergence verdicts, the runs).

Floats are compared exactly. Prints each difference and exits 1 if there is any.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

# Keys whose values differ between any two runs of the same code.
VOLATILE = {"provenance", "invocations", "stage_wall_s", "stage_cpu_s", "wall_s", "cpu_s"}
VOLATILE_SUFFIXES = ("time_s", "time_utc", "_wall_s", "_cpu_s")
TIME_COLUMNS = ("time_s", "cpu_s", "wall_s")


def volatile(key: str) -> bool:
    return key in VOLATILE or key.endswith(VOLATILE_SUFFIXES)


def diff_json(a: Any, b: Any, old: str, new: str, where: str = "") -> list[str]:
    """Differences between two JSON values, OLD's paths read as NEW's."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if volatile(k):
                continue
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'NEW' if k in b else 'OLD'}")
                continue
            out += diff_json(a[k], b[k], old, new, f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in diff_json(x, y, old, new, f"{where}[{i}]")
        ]
    if isinstance(a, str) and isinstance(b, str):
        a = a.replace(old, new)
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compare(old: Path, new: Path) -> tuple[list[str], dict[str, int]]:
    o, n = str(old.resolve()), str(new.resolve())
    out: list[str] = []
    counts = {"tables": 0, "rows": 0, "weights": 0, "json": 0}
    for kind, pattern in (("weights", "**/*.safetensors"), ("tables", "**/runs.csv")):
        a = {p.relative_to(old).as_posix() for p in old.glob(pattern)}
        b = {p.relative_to(new).as_posix() for p in new.glob(pattern)}
        out += [f"{f}: only in OLD" for f in sorted(a - b)]
        out += [f"{f}: only in NEW" for f in sorted(b - a)]
        for rel in sorted(a & b):
            counts[kind] += 1
            if kind == "weights":
                if sha256(old / rel) != sha256(new / rel):
                    out.append(f"{rel}: sha256 differs")
                continue
            ta, tb = pd.read_csv(old / rel), pd.read_csv(new / rel)
            keep = [c for c in ta.columns if not c.endswith(TIME_COLUMNS)]
            if list(ta.columns) != list(tb.columns):
                out.append(f"{rel}: columns {list(ta.columns)} != {list(tb.columns)}")
                continue
            counts["rows"] += len(ta)
            ta = ta[keep].replace(o, n, regex=False)
            for col in keep:
                if ta[col].dtype == object:
                    ta[col] = ta[col].str.replace(o, n, regex=False)
            if not ta.equals(tb[keep]):
                out.append(f"{rel}: values differ\n{ta.compare(tb[keep])}")
    for name in ("summary.json", "fits.json", "synthetic.json", "pipeline.json"):
        if (old / name).exists() or (new / name).exists():
            counts["json"] += 1
            a, b = (json.loads((d / name).read_text()) for d in (old, new))
            out += [f"{name}{d}" for d in diff_json(a, b, o, n)]
    return out, counts


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    old, new = Path(argv[0]), Path(argv[1])
    diffs, counts = compare(old, new)
    print("\n".join(diffs) if diffs else "identical")
    print(
        f"compared {counts['tables']} runs.csv ({counts['rows']} rows), {counts['weights']} "
        f"safetensors (sha256), {counts['json']} JSON files"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
