"""Runs to forecast from, read from what scalelab writes or from a plain table.

- a sweep folder: `runs.csv` (one row per finished run);
- a validate folder: `sweep/runs.csv` (the data sweep), `model-sweep/runs.csv`, and one
  `d/NN-label/source.json` per source of d (d and its batch/K range);
- a table (.csv/.tsv/.parquet/.jsonl) of sizes and losses; an optional `corpus` column splits
  it into corpora, and optional columns `d:LABEL` (with `d_lo:LABEL`, `d_hi:LABEL` for a range)
  give each corpus's d sources (one value per corpus).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalelab.errors import InputError
from scalelab.laws.forecast import Exponent
from scalelab.laws.forecast_score import CorpusRuns
from scalelab.laws.table import numeric_columns, read_table

SIZE, LOSS = "train_tokens", "test_loss_nats"


def _finished(df: pd.DataFrame, y: str) -> pd.DataFrame:
    return df[pd.to_numeric(df[y], errors="coerce").notna()] if y in df.columns else df


def _read_sources(folder: Path) -> tuple[Exponent, ...]:
    out = []
    for path in sorted((folder / "d").glob("*/source.json")):
        row = json.loads(path.read_text())
        out.append(
            Exponent.from_d(row["label"], float(row["dimension"]), row.get("dimension_range"))
        )
    return tuple(out)


def _from_frame(df: pd.DataFrame, name: str, x: str, y: str, sources=()) -> CorpusRuns:
    cols = numeric_columns(_finished(df, y), [x, y], name)
    return CorpusRuns(name, cols[x], cols[y], tuple(sources))


def _table_sources(df: pd.DataFrame, name: str) -> list[Exponent]:
    out = []
    for col in [c for c in df.columns if str(c).startswith("d:")]:
        label = str(col)[2:]
        vals = {}
        for key in ("d", "d_lo", "d_hi"):
            c = f"{key}:{label}"
            if c in df.columns:
                v = pd.to_numeric(df[c], errors="coerce").dropna().unique()
                if v.size > 1:
                    raise InputError(f"column {c!r} takes {v.size} values for {name}; give one")
                vals[key] = float(v[0]) if v.size else None
        if vals.get("d") is None:
            continue
        rng = (vals["d_lo"], vals["d_hi"]) if vals.get("d_lo") and vals.get("d_hi") else None
        out.append(Exponent.from_d(label, vals["d"], rng))
    return out


def load_corpora(paths: list[str | Path], x: str = SIZE, y: str = LOSS) -> list[CorpusRuns]:
    """One `CorpusRuns` per sweep or validate folder, or per `corpus` value of a table."""
    if not paths:
        raise InputError("give a sweep folder, a validate folder or a table of sizes and losses")
    out: list[CorpusRuns] = []
    for p in map(Path, paths):
        if (p / "sweep" / "runs.csv").is_file():
            df = read_table(p / "sweep" / "runs.csv")
            out.append(_from_frame(df, p.resolve().name, x, y, _read_sources(p)))
        elif (p / "runs.csv").is_file():
            out.append(_from_frame(read_table(p / "runs.csv"), p.resolve().name, x, y))
        elif p.is_dir():
            raise InputError(
                f"{p} holds no runs.csv or sweep/runs.csv: give a sweep or validate folder"
            )
        else:
            df = read_table(p)
            if "corpus" not in df.columns:
                out.append(_from_frame(df, p.stem, x, y, _table_sources(df, p.stem)))
                continue
            for name, part in df.groupby("corpus", sort=False):
                out.append(_from_frame(part, str(name), x, y, _table_sources(part, str(name))))
    return out


def pick_source(runs: CorpusRuns, label: str) -> Exponent:
    """The d source of `runs` named `label` (its label, or a prefix of it)."""
    hits = [s for s in runs.sources if s.label == label] or [
        s for s in runs.sources if s.label.startswith(label)
    ]
    if len(hits) != 1:
        have = ", ".join(repr(s.label) for s in runs.sources) or "none"
        raise InputError(
            f"{runs.name}: no single d source {label!r} (sources: {have}); name one of those"
        )
    return hits[0]


def load_grid(
    path: str | Path,
    y: str = LOSS,
    n_col: str = "params_non_embedding",
    d_col: str | None = SIZE,
    c_col: str | None = None,
) -> dict[str, np.ndarray]:
    """N, D, L of a data × model grid: a validate folder's two sweeps (data and model), or a
    table with N and D (or training FLOP C, D = C / 6N) columns."""
    p = Path(path)
    if (p / "sweep" / "runs.csv").is_file():
        frames = [
            read_table(f)
            for f in (p / "sweep" / "runs.csv", p / "model-sweep" / "runs.csv")
            if f.is_file()
        ]
        df = pd.concat(frames, ignore_index=True)
    else:
        df = read_table(p)
    df = _finished(df, y)
    cols: list[Any] = [n_col, y, c_col if c_col else d_col]
    vals = numeric_columns(df, cols, str(p))
    n = vals[n_col]
    d = vals[c_col] / (6.0 * n) if c_col else vals[d_col]
    key = np.round(np.stack([n, d], 1), 6)
    _, keep = np.unique(key, axis=0, return_index=True)  # a shared run appears in both sweeps
    keep = np.sort(keep)
    return {"N": n[keep], "D": d[keep], "L": vals[y][keep]}
