"""`scalelab forecast` as a library call: read runs, forecast larger ones from the smaller,
answer "data needed for loss X", the compute-optimal split for a budget, and score every
method on held-out runs (a `ForecastResult`); optionally write forecast.json, and with a
`draw` (the CLI passes `report.forecast.write_forecast_report`: report/ stands above laws/) the
report, to a folder.

The runs are read from what scalelab writes or from a plain table:
- a sweep folder: `runs.csv` (one row per finished run);
- a validate folder: `sweep/runs.csv` (the data sweep), `model-sweep/runs.csv`, and one
  `d/NN-label/source.json` per source of d (d and its batch/K range);
- a table (.csv/.tsv/.parquet/.jsonl) of sizes and losses; an optional `corpus` column splits
  it into corpora, and optional columns `d:LABEL` (with `d_lo:LABEL`, `d_hi:LABEL` for a range)
  give each corpus's d sources (one value per corpus).

Nothing is written unless every computation succeeded; the folder's files are each written
atomically (forecast.json last).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalelab.config import OMIT_DEFAULT, Record
from scalelab.errors import InputError
from scalelab.io import atomic_write_json, provenance
from scalelab.laws.forecast.config import ForecastConfig, ForecastRequest
from scalelab.laws.forecast.fits import Exponent, JointFit, fit_forecast, fit_joint, forecast_table
from scalelab.laws.forecast.holdout import CorpusRuns, ScoreResult, forecast_fans, score_corpora
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


@dataclass(frozen=True)
class ExponentChoice(Record):
    """Where the exponent comes from: a number (`alpha`), a d (`d`), a d source of the input
    (`source`), or none of them (free); with a fixed exponent, `floor` keeps the term E. A
    record: a forecast's result says which was used."""

    alpha: float | None = None
    d: float | None = None
    source: str | None = None
    floor: bool = True  # fit E + A·n^-α with a fixed α (False: A·n^-α)

    def __post_init__(self) -> None:
        given = [v for v in (self.alpha, self.d, self.source) if v is not None]
        if len(given) > 1:
            raise InputError("give at most one of --alpha, --d, --source (none: exponent free)")
        for name, v in (("--alpha", self.alpha), ("--d", self.d)):
            if v is not None and not v > 0:
                raise InputError(f"{name} must be a positive number, got {v}")

    def exponent(self, runs: CorpusRuns) -> Exponent | None:
        if self.alpha is not None:
            return Exponent(f"alpha {self.alpha:g}", self.alpha)
        if self.d is not None:
            return Exponent.from_d(f"d {self.d:g}", self.d)
        if self.source is not None:
            return pick_source(runs, self.source)
        return None


def _fit_part(runs: CorpusRuns, fit_upto: float | None, k: int | None) -> int:
    """How many of the smallest runs the fit uses."""
    if fit_upto is not None and k is not None:
        raise InputError("give --fit-upto or --k, not both")
    n = runs.x.size if k is None else k
    if fit_upto is not None:
        n = int(np.sum(runs.x <= fit_upto * (1 + 1e-12)))
    if runs.x.size < 3:
        raise InputError(
            f"{runs.name}: {runs.x.size} run(s); a forecast needs at least 3: add runs"
        )
    if not 3 <= n <= runs.x.size:
        raise InputError(
            f"{runs.name}: the fit would use {n} of {runs.x.size} runs; choose --fit-upto or "
            f"--k so that it uses 3 to {runs.x.size} runs (or add runs)"
        )
    return n


@dataclass(frozen=True)
class CorpusForecast(Record):
    """One corpus's forecast: the fitted law as saved (`PowerForecast.to_dict`: its draws
    stay behind), the table of sizes forecast (with observed losses and ARE where a run
    exists), and the data needed for a loss where one was asked."""

    corpus: str
    forecast: dict[str, Any]
    at: list[dict[str, Any]]
    data_needed: dict[str, Any] | None = field(default=None, metadata=OMIT_DEFAULT)


def forecast_one(
    runs: CorpusRuns,
    choice: ExponentChoice,
    cfg: ForecastConfig,
    *,
    fit_upto: float | None = None,
    k: int | None = None,
    at: list[float] | None = None,
    loss: float | None = None,
) -> CorpusForecast:
    """Fit on the smallest runs, forecast `at` (default: the runs left out, else 10× the
    largest), with observed losses and ARE where a run exists there."""
    n = _fit_part(runs, fit_upto, k)
    exp = choice.exponent(runs)
    fc = fit_forecast(
        runs.x[:n],
        runs.y[:n],
        method=("fixed" if choice.floor else "fixed, E=0") if exp else "free",
        exponent=exp,
        n_boot=cfg.n_boot,
        level=cfg.level,
        seed=cfg.seed,
    )
    sizes = at or (runs.x[n:].tolist() or [10.0 * runs.x[-1]])
    rows = forecast_table(fc, sizes)
    observed = dict(zip(runs.x.tolist(), runs.y.tolist(), strict=True))
    for row in rows:
        obs = observed.get(row["n"])
        row["observed"] = obs
        row["are"] = abs(row["loss"] - obs) / obs if obs else None
    needed = fc.data_needed(loss) if loss is not None else None
    return CorpusForecast(runs.name, fc.to_dict(), rows, needed)


@dataclass(frozen=True)
class JointSplit(Record):
    """The joint law fitted on a grid (its path) and its compute-optimal split per budget
    (table rows)."""

    grid: str
    fit: JointFit
    compute_optimal: list[dict[str, Any]]


def joint_split(
    grid_path: str | Path,
    budgets: list[float],
    choice: ExponentChoice,
    runs: Any = None,
    **cols: Any,
) -> JointSplit:
    """The joint law on a data × model grid and its compute-optimal split per budget. From d
    both exponents are fixed (a = 2/d, b = 2/(2+d)); from --alpha only b (the data one)."""
    g = load_grid(grid_path, **cols)
    a = b = None
    if choice.source is not None and runs is None:
        raise InputError("--source needs a validate folder as input (its d/ holds the sources)")
    exp = choice.exponent(runs)  # runs is read only for a source
    if exp is not None and exp.d is not None:
        a, b = 2.0 / exp.d, exp.alpha
    elif exp is not None:
        b = exp.alpha
    fit = fit_joint(g["N"], g["D"], g["L"], a=a, b=b)
    return JointSplit(str(grid_path), fit, fit.compute_optimal(budgets))


@dataclass(frozen=True)
class ForecastResult(Record):
    """Everything `scalelab forecast` prints and saves as forecast.json (with provenance):
    the config and exponent used, a forecast per corpus, and where asked the joint split, the
    held-out scores and the report's files.

    The saved layout adds each corpus's flat score table (`ScoreResult.tables`) inside
    `score`: derived from its rows, so not a field."""

    config: ForecastConfig
    choice: ExponentChoice
    forecasts: tuple[CorpusForecast, ...]
    joint: JointSplit | None = field(default=None, metadata=OMIT_DEFAULT)
    score: ScoreResult | None = field(default=None, metadata=OMIT_DEFAULT)
    report: dict[str, str] | None = field(default=None, metadata=OMIT_DEFAULT)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.score is not None:
            out["score"]["tables"] = self.score.tables()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ForecastResult:
        if data.get("score") is not None:
            score = {k: v for k, v in data["score"].items() if k != "tables"}
            data = {**data, "score": score}
        return super().from_dict(data)


def run_forecast(
    inputs: list[str | Path],
    request: ForecastRequest = ForecastRequest(),
    cfg: ForecastConfig = ForecastConfig(),
    *,
    out: str | Path | None = None,
    draw: Callable[..., tuple[Path, Path]] | None = None,
) -> ForecastResult:
    """Everything `scalelab forecast` prints, as one record (also OUT/forecast.json). The
    request's `corpus` limits the forecasts (not the scoring, whose leave-one-out needs every
    corpus) to one. `draw(score, fans, cfg, out)` writes the report of a --score run into
    `out` (the CLI passes `scalelab.report.forecast.write_forecast_report`); None:
    forecast.json alone."""
    r = request
    choice = ExponentChoice(alpha=r.alpha, d=r.d, source=r.source, floor=r.floor)
    budgets, at, corpus = list(r.budget), list(r.at) or None, r.corpus
    corpora = (
        []
        if (budgets and r.grid is None and not r.score and _grid_only(inputs))
        else (load_corpora(list(inputs), r.x, r.y))
    )
    chosen = [c for c in corpora if corpus is None or c.name == corpus]
    if corpus is not None and not chosen:
        have = ", ".join(c.name for c in corpora)
        raise InputError(f"no corpus {corpus!r} in the input (corpora: {have}); name one of those")
    forecasts = tuple(
        forecast_one(c, choice, cfg, fit_upto=r.fit_upto, k=r.k, at=at, loss=r.loss) for c in chosen
    )
    joint = None
    if budgets:
        src = r.grid if r.grid is not None else inputs[0]
        runs = corpora[0] if corpora and Path(inputs[0]).is_dir() else None
        cols = {"n_col": r.n_col, "d_col": r.d_col, "c_col": r.c_col}
        joint = joint_split(src, budgets, choice, runs, y=r.y, **cols)
    score = score_corpora(corpora, cfg) if r.score else None
    result = ForecastResult(cfg, choice, forecasts, joint, score)
    if out is not None:
        result = _write(Path(out), result, corpora, cfg, draw)
    return result


def _grid_only(inputs: list[str | Path]) -> bool:
    """With --budget and no --grid, a single table input is the grid (e.g. Epoch's Chinchilla
    data), not a data sweep to forecast."""
    return len(inputs) == 1 and Path(inputs[0]).is_file()


def _write(
    out: Path, result: ForecastResult, corpora: list[CorpusRuns], cfg, draw
) -> ForecastResult:
    """forecast.json (after the report, whose files it names); the result with them."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder")
    if result.score is not None and draw is not None:
        html, md = draw(result.score, forecast_fans(corpora, cfg), cfg, out)
        result = result.replace(report={"html": str(html), "md": str(md)})
    atomic_write_json(out / "forecast.json", {**result.to_dict(), "provenance": provenance()})
    return result
