"""A data or model sweep's folder, analysed for its report (`report.lm` draws it): the runs
(runs.csv), the d estimate beside them (estimate.json), both fit forms of test loss against
size, always named (the log-log fit with no E, the paper's, and L = E + A·n^-α), and the
extrapolation check (fit without the largest size, predict it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalelab.errors import InputError, ScalelabError
from scalelab.io import read_json
from scalelab.laws.fit.fitted import PowerLawFit
from scalelab.laws.fit.power_law import Extrapolation, extrapolation_check, fit_power_law
from scalelab.probe.result import EstimateResult
from scalelab.runs.outdir import read_meta

N_BOOT = 1000
SEED = 0
LOSS = "test_loss_nats"
SIZE = {"data": "train_tokens", "model": "params_non_embedding"}
FORMS = ("power", "power+E")


def read_runs(sweep_dir: Path, kind: str) -> pd.DataFrame:
    """runs.csv with the columns the section needs, one row per finished run."""
    path = sweep_dir / "runs.csv"
    try:
        table = pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise InputError(
            f"{sweep_dir} has no readable runs.csv ({type(err).__name__}); run the sweep first"
        ) from None
    need = [SIZE[kind], LOSS]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise InputError(f"{path} lacks column(s) {missing}; is it a {kind} sweep's table?")
    return table


def read_estimate(sweep_dir: Path) -> EstimateResult | None:
    """`estimate.json` from `scalelab estimate` if the sweep folder has one."""
    from scalelab.probe.result import read_estimate as read_file

    path = sweep_dir / "estimate.json"
    return read_file(path) if path.is_file() else None


def boot_settings(sweep_dir: Path) -> tuple[int, int]:
    """(n_boot, seed): those of the sweep's `fits.json` (written by the pipeline) when it has
    one, so the page shows the same intervals the pipeline printed; else the defaults."""
    path = sweep_dir / "fits.json"
    try:
        power = read_json(path)["power"]
        return int(power["n_boot"]), int(power["seed"])
    except (OSError, ValueError, KeyError, TypeError):
        return N_BOOT, SEED


@dataclasses.dataclass(frozen=True, eq=False)
class SweepAnalysis:
    """What the report shows of one sweep. `runs`: the finished runs with a positive size and
    loss, smallest first; `fits`: each form that could be fitted (`notes` say which could
    not); `holdout`: (form, `extrapolation_check` result) for each form it could run."""

    kind: str
    config: dict[str, Any]
    table: pd.DataFrame
    runs: pd.DataFrame
    estimate: EstimateResult | None
    n_boot: int
    seed: int
    fits: list[PowerLawFit]
    notes: list[str]
    holdout: list[tuple[str, Extrapolation]]

    @property
    def x(self) -> np.ndarray:
        return self.runs[SIZE[self.kind]].to_numpy(float)

    @property
    def y(self) -> np.ndarray:
        return self.runs[LOSS].to_numpy(float)


def _fits(
    x: np.ndarray, y: np.ndarray, n_boot: int, seed: int
) -> tuple[list[PowerLawFit], list[str]]:
    """Both fit forms where the points allow; notes say what could not be fitted."""
    fits, notes = [], []
    for form in FORMS:
        try:
            fits.append(fit_power_law(x, y, form=form, n_boot=n_boot, seed=seed))
        except ScalelabError as err:
            notes.append(f"No {form} fit: {err}")
    return fits, notes


def _holdout(x: np.ndarray, y: np.ndarray) -> list[tuple[str, Extrapolation]]:
    out = []
    for form in FORMS:
        try:
            out.append((form, extrapolation_check(x, y, form=form, holdout=1)))
        except ScalelabError:
            continue
    return out


def analyse_sweep(sweep_dir: str | Path) -> SweepAnalysis:
    """The analysis of the data or model sweep in `sweep_dir` (it holds sweep.json)."""
    sweep_dir = Path(sweep_dir)
    meta = read_meta(sweep_dir / "sweep.json")
    kind = meta["kind"]
    if kind not in SIZE:
        raise InputError(f"report.lm handles data and model sweeps, not {kind!r}")
    table = read_runs(sweep_dir, kind)
    est = read_estimate(sweep_dir)
    size = SIZE[kind]
    ok = table[[size, LOSS]].notna().all(axis=1) & (table[size] > 0) & (table[LOSS] > 0)
    runs = table[ok].sort_values(size)
    x, y = runs[size].to_numpy(float), runs[LOSS].to_numpy(float)
    n_boot, seed = boot_settings(sweep_dir)
    fits, notes = (
        _fits(x, y, n_boot, seed) if len(runs) else ([], ["No finished runs with a positive loss."])
    )
    holdout = _holdout(x, y) if fits else []
    config = meta.get("config", {})
    return SweepAnalysis(kind, config, table, runs, est, n_boot, seed, fits, notes, holdout)
