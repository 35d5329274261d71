"""Read numeric columns from a results table (CSV, TSV, Parquet or JSON lines) with errors
that name the missing column or bad file instead of a pandas traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scalelab.errors import InputError


def read_table(path: str | Path) -> pd.DataFrame:
    """Load a tidy table; the format follows the suffix (.csv, .tsv, .parquet, .jsonl)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"table {path} not found; give the path of a .csv/.tsv/.parquet file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            df = pd.read_parquet(path)
        elif suffix in (".jsonl", ".ndjson"):
            df = pd.read_json(path, lines=True)
        else:
            df = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(
            f"cannot read table {path}: {first}; give a UTF-8 {suffix[1:]} file with a header row"
        ) from None
    if df.empty:
        raise InputError(f"table {path} has no rows; fit a table with one row per run")
    return df


def numeric_columns(df: pd.DataFrame, columns: list[str], where: str) -> dict[str, np.ndarray]:
    """The named columns as float64 arrays; missing or non-numeric columns are an error."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(
            f"{where} has no column(s) {missing}; available: {list(map(str, df.columns))}: "
            "name one of those (--x, --y, ...)"
        )
    out = {}
    for col in columns:
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & df[col].notna().to_numpy()
        if bad.any():
            raise InputError(
                f"column {col!r} of {where} has {int(bad.sum())} non-numeric value(s), "
                f"e.g. {df[col][bad].iloc[0]!r}; fix or drop those rows"
            )
        out[col] = values
    return out
