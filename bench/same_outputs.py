"""Are two validate folders the same result, bit for bit? (a refactor's proof of no change)

    python bench/same_outputs.py OLD NEW

Compares what a validation computed, leaving out only what differs between any two runs of
the same code: wall and CPU times and the throughputs made from them, provenance (git
revision, versions, clock), the folder paths themselves (OLD's path is read as NEW's) and
what is derived from a path:

- check runs are named by a hash of their config, which holds the store's absolute path
  (`sweeps.check.check_name`): OLD's check folders are paired with NEW's by equal
  config.json (paths read as NEW's), and compared under that pairing;
- a safetensors file's header holds its metadata in the order of a Rust hash map, random
  per process (the same tensors and metadata saved twice give two sha256), so each file
  is compared as the sha256 of its tensor bytes plus its parsed header; hashes in that
  metadata of files holding provenance (a store's meta.json, a checkpoint file) are left
  out, the weights themselves are compared directly.

Compared: every runs.csv (data sweep, model sweep, check); every *.safetensors; every run's
config.json and result.json; summary.json, fits.json, synthetic.json and pipeline.json
(d of every source, the fits, the regime analysis, the convergence verdicts, the runs).
A description file (config.json, pipeline.json) is compared as `scalelab.runs.migrate` reads
it, and every other JSON and safetensors header in this version's names (`renamed`), so
folders of two formats compare by what they hold, not by what a key is called.
Floats are compared exactly. Prints each difference and exits 1 if there is any.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.runs.migrate import migrate, renamed

DESCRIPTIONS = {"config.json", "pipeline.json", "sweep.json", "experiment.json"}
VOLATILE = {"provenance", "invocations", "stage_wall_s", "stage_cpu_s", "wall_s", "cpu_s"}
VOLATILE |= {"meta_sha256", "weights_sha256", "time_utc"}
VOLATILE_SUFFIXES = ("time_s", "_wall_s", "_cpu_s", "per_s", "per_cpu_s")


def volatile(key: str) -> bool:
    return key in VOLATILE or key.endswith(VOLATILE_SUFFIXES)


class Reader:
    """OLD's paths and check-run names read as NEW's."""

    def __init__(self, old: Path, new: Path) -> None:
        self.old, self.new = old, new
        self.subs = [(str(old.resolve()), str(new.resolve())), (f"{old.name}/", f"{new.name}/")]
        self.subs += check_pairs(old, new, self.subs)

    def text(self, s: str) -> str:
        for a, b in self.subs:
            s = s.replace(a, b)
        return s

    def value(self, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        return self.text(v) if isinstance(v, str) else v


def check_pairs(old: Path, new: Path, subs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(OLD check-run name, NEW's) for check runs with equal config.json (paths as NEW's)."""

    def config(path: Path, replace: bool) -> str:
        text = path.read_text(encoding="utf-8")
        for a, b in subs if replace else ():
            text = text.replace(a, b)
        return json.dumps(migrate(json.loads(text)), sort_keys=True)

    news = {config(p, False): p.parent.name for p in new.glob("check/runs/*/config.json")}
    pairs = []
    for p in old.glob("check/runs/*/config.json"):
        twin = news.get(config(p, True))
        if twin is not None and twin != p.parent.name:
            pairs.append((p.parent.name, twin))
    return pairs


def diff_json(a: Any, b: Any, where: str = "") -> list[str]:
    """Differences between two JSON values (`a` already read as NEW's)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if volatile(k):
                continue
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'NEW' if k in b else 'OLD'}")
                continue
            out += diff_json(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in diff_json(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def safetensors_parts(path: Path) -> tuple[dict[str, Any], str]:
    """(parsed header, JSON-string metadata values parsed too; sha256 of the tensor bytes)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    meta = header.get("__metadata__", {})
    for k, v in meta.items():
        with contextlib.suppress(TypeError, ValueError):
            meta[k] = json.loads(v)
    return header, hashlib.sha256(raw[8 + n :]).hexdigest()


def _tables(r: Reader, rel: str) -> list[str]:
    ta, tb = pd.read_csv(r.old / rel), pd.read_csv(r.new / rel)
    if list(ta.columns) != list(tb.columns):
        return [f"{rel}: columns {list(ta.columns)} != {list(tb.columns)}"]
    keep = [c for c in ta.columns if not volatile(c)]
    ta, tb = ta[keep].copy(), tb[keep]
    for col in keep:
        if pd.api.types.is_string_dtype(ta[col]) or ta[col].dtype == object:
            ta[col] = ta[col].map(lambda v: r.text(v) if isinstance(v, str) else v)
    if ta.reset_index(drop=True).equals(tb.reset_index(drop=True)):
        return []
    return [f"{rel}: values differ\n{ta.compare(tb)}"]


def compare(old: Path, new: Path) -> tuple[list[str], dict[str, int]]:
    r = Reader(old, new)
    out: list[str] = []
    counts = {"tables": 0, "rows": 0, "weights": 0, "json": 0, "renamed": len(r.subs) - 2}
    kinds = (
        ("weights", "**/*.safetensors"),
        ("tables", "**/runs.csv"),
        ("json", "**/runs/*/*.json"),
        ("json", "*.json"),
    )
    for kind, pattern in kinds:
        a = {r.text(p.relative_to(old).as_posix()): p for p in old.glob(pattern)}
        a = {k: p for k, p in a.items() if not k.endswith("provenance.json")}
        b = {p.relative_to(new).as_posix() for p in new.glob(pattern)}
        b = {k for k in b if not k.endswith("provenance.json")}
        out += [f"{f}: only in OLD" for f in sorted(set(a) - b)]
        out += [f"{f}: only in NEW" for f in sorted(b - set(a))]
        for rel in sorted(set(a) & b):
            counts[kind] += 1
            if kind == "tables":
                counts["rows"] += len(pd.read_csv(new / rel))
                out += _tables(r, rel)
            elif kind == "weights":
                (ha, sa), (hb, sb) = safetensors_parts(a[rel]), safetensors_parts(new / rel)
                out += [f"{rel}: tensor bytes differ"] if sa != sb else []
                out += [f"{rel} header{d}" for d in diff_json(renamed(r.value(ha)), renamed(hb))]
            else:
                ja, jb = json.loads(a[rel].read_text()), json.loads((new / rel).read_text())
                to_now = migrate if Path(rel).name in DESCRIPTIONS else renamed
                ja, jb = to_now(ja), to_now(jb)
                out += [f"{rel}{d}" for d in diff_json(r.value(ja), jb)]
    return out, counts


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    diffs, c = compare(Path(argv[0]), Path(argv[1]))
    print("\n".join(diffs) if diffs else "identical")
    print(
        f"compared {c['tables']} runs.csv ({c['rows']} rows), {c['weights']} safetensors "
        f"(tensor bytes' sha256 and header), {c['json']} JSON files; {c['renamed']} check "
        "run(s) paired by config"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
