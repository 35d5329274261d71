"""Read numeric columns from a results table (CSV, TSV, Parquet or JSON lines) with errors
that name the missing column or bad file instead of a pandas traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


FORMS = ("power", "power+E", "chinchilla")


def fit_table(
    df: pd.DataFrame,
    y: str,
    *,
    form: str = "power",
    x: str | None = None,
    n_col: str | None = None,
    d_col: str | None = None,
    c_col: str | None = None,
    holdout: int = 0,
    compute: list[float] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    name: str = "table",
) -> dict[str, Any]:
    """A scaling law fitted to columns of a tidy table (what `scalelab fit` prints): `fit`
    (the fit's `to_dict`), `holdout` (the extrapolation check without the `holdout` largest
    sizes) and, for chinchilla with `compute` budgets, `compute_optimal` (N_opt, D_opt)."""
    from scalelab.laws import fit as laws

    if compute and form != "chinchilla":
        raise InputError("--compute needs --form chinchilla (the joint fit gives N_opt, D_opt)")
    if form not in FORMS:
        raise InputError(f"unknown --form {form!r}; choose one of {', '.join(FORMS)}")
    if holdout < 0:
        raise InputError(f"--holdout must be >= 0, got {holdout}")
    result: dict[str, Any] = {"table": name, "form": form}
    if form == "chinchilla":
        if n_col is None or (d_col is None) == (c_col is None):
            raise InputError("--form chinchilla needs --n-col and one of --d-col or --c-col")
        cols = numeric_columns(df, [y, n_col, d_col or c_col], name)
        n = cols[n_col]
        d = cols[d_col] if d_col else cols[c_col] / (6.0 * n)
        fit = laws.fit_chinchilla(n, d, cols[y], n_boot=n_boot, seed=seed)
        result["fit"] = fit.to_dict()
        if compute:
            if any(not c > 0 for c in compute):
                raise InputError(f"--compute values must be positive numbers, got {compute}")
            n_opt, d_opt = fit.compute_optimal(compute)
            result["compute_optimal"] = [
                {"C": c, "N_opt": float(a), "D_opt": float(b), "tokens_per_param": float(b / a)}
                for c, a, b in zip(compute, n_opt, d_opt, strict=True)
            ]
        if holdout:
            result["holdout"] = laws.chinchilla_extrapolation_check(n, d, cols[y], holdout=holdout)
        return result
    if x is None:
        raise InputError(f"--form {form} needs --x COLUMN (the size column)")
    cols = numeric_columns(df, [x, y], name)
    fit = laws.fit_power_law(cols[x], cols[y], form=form, n_boot=n_boot, seed=seed)
    result["fit"] = fit.to_dict()
    if holdout:
        result["holdout"] = laws.extrapolation_check(
            cols[x], cols[y], form=form, holdout=holdout, n_boot=0
        )
    return result
