"""The declaration `scalelab validate-many` reads: which corpora, which sources of d, which
one is primary, and the scoring and decision rules, committed before any observation.

TOML or JSON with the same keys (docs/benchmarks/declared-corpora.toml is the committed one):

    [declaration]   primary (a source label), band, constant, scoring, decision, declared_utc
    [[reference]]   label, path: models given to every validate as --reference-model
    [[corpus]]      name, corpus (validate's --corpus), kind, options (PipelineConfig fields),
                    estimates ({label: an earlier `scalelab estimate` folder}), folder,
                    and provenance (package, version, licence, install) for the record
    [statistics]    StatisticsConfig fields for the second theory; gamma_model ("own" or a path)

Paths may use environment variables ($SMOL); relative ones are read from the folder the
command runs in (the repository root for the committed declaration).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scalelab.errors import ConfigError, InputError

SUMMARY, CONFIG = "summary.json", "pipeline.json"  # what a validate folder holds


@dataclass(frozen=True)
class Entry:
    """One corpus to validate or reuse: its validate folder, and how to make it."""

    name: str
    folder: Path
    corpus: str | None = None
    kind: str = "real"
    options: dict[str, Any] = field(default_factory=dict)
    estimates: dict[str, str] = field(default_factory=dict)


def _path(text: str) -> str:
    """Environment variables and ~ expanded; relative paths stay relative to the working
    folder the command runs in."""
    return os.path.expandvars(os.path.expanduser(text))


def read_declaration(path: str | Path) -> dict[str, Any]:
    """The parsed declaration, checked: at least one corpus, unique names, known kinds."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"declaration {path} does not exist; pass a .toml or .json file")
    try:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"declaration {path} does not parse ({err}); fix its syntax") from None
    corpora = doc.get("corpus", [])
    if not corpora:
        raise ConfigError(f"declaration {path} lists no [[corpus]]; add at least one")
    names = [c.get("name") for c in corpora]
    if any(not isinstance(n, str) or not n for n in names) or len(set(names)) != len(names):
        raise ConfigError(f"declaration {path}: every [[corpus]] needs a unique name")
    for c in corpora:
        if c.get("kind", "real") not in ("real", "synthetic"):
            raise ConfigError(f"corpus {c['name']!r}: kind must be 'real' or 'synthetic'")
        if "corpus" not in c and "folder" not in c:
            raise ConfigError(f"corpus {c['name']!r} needs 'corpus' (to run) or 'folder'")
    return doc


def entries(doc: dict[str, Any], out: Path) -> list[Entry]:
    """The declaration's corpora as entries; a corpus without `folder` is validated into
    OUT/corpora/NAME."""
    rows = []
    for c in doc["corpus"]:
        corpus = c.get("corpus")
        if corpus is not None and ("/" in corpus or corpus.startswith(("$", "~"))):
            corpus = _path(corpus)
        folder = Path(_path(c["folder"])) if "folder" in c else out / "corpora" / c["name"]
        est = {label: _path(p) for label, p in c.get("estimates", {}).items()}
        rows.append(
            Entry(c["name"], folder, corpus, c.get("kind", "real"), c.get("options", {}), est)
        )
    return rows


def references(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, path) of the declared reference models, paths expanded."""
    return [(r["label"], _path(r["path"])) for r in doc.get("reference", [])]


def entries_from_inputs(inputs: list[str], out: Path) -> list[Entry]:
    """Entries for plain arguments: a validate folder (holds pipeline.json or summary.json)
    is reused under its folder name; anything else is a corpus validated into
    OUT/corpora/NAME."""
    rows, seen = [], set()
    for text in inputs:
        p = Path(text)
        is_folder = p.is_dir() and any((p / f).is_file() for f in (SUMMARY, CONFIG))
        name = p.name if is_folder else p.stem or text
        if name in seen:
            raise ConfigError(f"two inputs are named {name!r}; rename one folder or corpus")
        seen.add(name)
        folder = p if is_folder else out / "corpora" / name
        rows.append(Entry(name, folder, None if is_folder else text))
    return rows
