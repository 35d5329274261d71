"""The fits of a results table's columns and the regime analysis of its loss-vs-size curve:
what `scalelab fit` prints (`fit_table` -> `TableFit`; `fit_groups` fits each value of a column
apart -> `GroupFits`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from scalelab.config import OMIT_DEFAULT, Record
from scalelab.errors import InputError
from scalelab.laws.fit import chinchilla, power_law
from scalelab.laws.fit.chinchilla import ChinchillaExtrapolation, ChinchillaFit
from scalelab.laws.fit.fitted import PowerLawFit
from scalelab.laws.fit.forms import FORMS
from scalelab.laws.fit.power_law import Extrapolation
from scalelab.laws.fit.request import FitRequest
from scalelab.laws.regime.analysis import RegimeAnalysis, analyse_regime
from scalelab.laws.regime.rules import RegimeConfig
from scalelab.laws.table import numeric_columns

#: The forms `scalelab fit --form` takes: the one-variable ones and the joint law.
TABLE_FORMS = (*FORMS, "chinchilla")


@dataclass(frozen=True)
class ComputeOptimal(Record):
    """The joint law's best split of a compute budget `C` = 6·N·D."""

    C: float
    N_opt: float
    D_opt: float
    tokens_per_param: float


@dataclass(frozen=True)
class TableFit(Record):
    """What `fit_table` measured (and `scalelab fit --out` saves): the fit, then what each
    form adds where asked: the compute-optimal split (chinchilla with budgets), the fit without
    the largest sizes beside its error on them (`holdout`), and the regime analysis of the
    curve (the one-variable forms)."""

    table: str
    form: str
    fit: PowerLawFit | ChinchillaFit
    compute_optimal: tuple[ComputeOptimal, ...] | None = field(default=None, metadata=OMIT_DEFAULT)
    holdout: Extrapolation | ChinchillaExtrapolation | None = field(
        default=None, metadata=OMIT_DEFAULT
    )
    regime: RegimeAnalysis | None = field(default=None, metadata=OMIT_DEFAULT)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableFit:
        """The fit and held-out check as the form's kinds (the type hints name two each)."""
        joint = data["form"] == "chinchilla"
        values = dict(data)
        values["fit"] = (ChinchillaFit if joint else PowerLawFit).from_dict(data["fit"])
        if data.get("holdout") is not None:
            kind = ChinchillaExtrapolation if joint else Extrapolation
            values["holdout"] = kind.from_dict(data["holdout"])
        return super().from_dict(values)


@dataclass(frozen=True)
class GroupFits(Record):
    """`fit_table` on each value of one column, keyed by the value (as text)."""

    table: str
    group: str
    groups: dict[str, TableFit]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupFits:
        groups = {k: TableFit.from_dict(v) for k, v in data["groups"].items()}
        return cls(table=data["table"], group=data["group"], groups=groups)


def fit_table(
    df: pd.DataFrame,
    y: str,
    *,
    form: str = FitRequest.form,
    x: str | None = None,
    n_col: str | None = None,
    d_col: str | None = None,
    c_col: str | None = None,
    holdout: int = FitRequest.holdout,
    compute: list[float] | None = None,
    n_boot: int = FitRequest.n_boot,
    seed: int = FitRequest.seed,
    name: str = "table",
    regime: RegimeInputs | None = None,
) -> TableFit:
    """A scaling law fitted to columns of a tidy table (what `scalelab fit` prints): see
    `TableFit`; `holdout` > 0 refits without that many largest sizes."""
    if compute and form != "chinchilla":
        raise InputError("--compute needs --form chinchilla (the joint fit gives N_opt, D_opt)")
    if form not in TABLE_FORMS:
        raise InputError(f"unknown --form {form!r}; choose one of {', '.join(TABLE_FORMS)}")
    if holdout < 0:
        raise InputError(f"--holdout must be >= 0, got {holdout}")
    if form == "chinchilla":
        if n_col is None or (d_col is None) == (c_col is None):
            raise InputError("--form chinchilla needs --n-col and one of --d-col or --c-col")
        cols = numeric_columns(df, [y, n_col, d_col or c_col], name)
        n = cols[n_col]
        d = cols[d_col] if d_col else cols[c_col] / (6.0 * n)
        joint = chinchilla.fit_chinchilla(n, d, cols[y], n_boot=n_boot, seed=seed)
        best = None
        if compute:
            if any(not c > 0 for c in compute):
                raise InputError(f"--compute values must be positive numbers, got {compute}")
            n_opt, d_opt = joint.compute_optimal(compute)
            best = tuple(
                ComputeOptimal(C=c, N_opt=float(a), D_opt=float(b), tokens_per_param=float(b / a))
                for c, a, b in zip(compute, n_opt, d_opt, strict=True)
            )
        check = (
            chinchilla.chinchilla_extrapolation_check(n, d, cols[y], holdout=holdout)
            if holdout
            else None
        )
        return TableFit(table=name, form=form, fit=joint, compute_optimal=best, holdout=check)
    if x is None:
        raise InputError(f"--form {form} needs --x COLUMN (the size column)")
    cols = numeric_columns(df, [x, y], name)
    fit = power_law.fit_power_law(cols[x], cols[y], form=form, n_boot=n_boot, seed=seed)
    check = (
        power_law.extrapolation_check(cols[x], cols[y], form=form, holdout=holdout, n_boot=0)
        if holdout
        else None
    )
    analysis = table_regime(df, x, y, regime or RegimeInputs(), n_boot=n_boot, seed=seed, name=name)
    return TableFit(table=name, form=form, fit=fit, holdout=check, regime=analysis)


@dataclass(frozen=True)
class RegimeInputs:
    """What the regime rules read besides sizes and losses (`scalelab fit` options).

    `unigram_col`/`floor_col`: columns holding the unigram entropy / the floor E (one value
    per table or group) instead of one number. `limited_col`: a column true for budget- or
    model-limited runs; `limited`: names of such runs in `run_col`. `ideal_exponent(lo, hi)`:
    a theory's exponent over the fitted range (the facts family's ideal learner), drawn and
    printed beside the observation."""

    config: RegimeConfig = field(default_factory=RegimeConfig)
    unigram_entropy: float | None = None
    unigram_col: str | None = None
    floor: float | None = None
    floor_col: str | None = None
    floor_source: str = "given"
    limited_col: str | None = None
    limited: tuple[str, ...] | None = None
    run_col: str = FitRequest.run_col
    predictions: dict[str, float] = field(default_factory=dict)
    ideal_exponent: Callable[[float, float], float] | None = None


def _limited_flags(df: pd.DataFrame, inputs: RegimeInputs, name: str) -> np.ndarray:
    flags = np.zeros(len(df), bool)
    if inputs.limited_col is not None:
        if inputs.limited_col not in df.columns:
            raise InputError(f"{name} has no column {inputs.limited_col!r} (--limited-col)")
        col = df[inputs.limited_col].astype(str).str.strip().str.lower()
        flags |= col.isin(("true", "1", "yes", "1.0")).to_numpy()
    if inputs.limited:
        if inputs.run_col not in df.columns:
            raise InputError(f"{name} has no column {inputs.run_col!r} to match --limited names")
        runs = df[inputs.run_col].astype(str)
        unknown = sorted(set(inputs.limited) - set(runs))
        if unknown:
            raise InputError(f"no run named {unknown} in {name}; runs are {sorted(set(runs))}")
        flags |= runs.isin(inputs.limited).to_numpy()
    return flags


def _one_value(df: pd.DataFrame, col: str | None, value: float | None, name: str) -> float | None:
    """The single value of `col` (a per-corpus constant) or `value` when no column is named."""
    if col is None:
        return value
    values = np.unique(numeric_columns(df, [col], name)[col])
    if values.size != 1:
        raise InputError(
            f"column {col!r} of {name} holds {values.size} different values; it must hold one "
            "per table (use --group to fit each corpus apart)"
        )
    return float(values[0])


def table_regime(
    df: pd.DataFrame,
    x: str,
    y: str,
    inputs: RegimeInputs,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    name: str = "table",
) -> RegimeAnalysis:
    """`analyse_regime` on two columns of a table, the limited runs named by `inputs`."""
    cols = numeric_columns(df, [x, y], name)
    return analyse_regime(
        cols[x],
        cols[y],
        unigram_entropy=_one_value(df, inputs.unigram_col, inputs.unigram_entropy, name),
        limited=_limited_flags(df, inputs, name),
        floor=_one_value(df, inputs.floor_col, inputs.floor, name),
        floor_source=inputs.floor_source,
        predictions=inputs.predictions,
        ideal_exponent=inputs.ideal_exponent,
        config=inputs.config,
        n_boot=n_boot,
        seed=seed,
    )


def fit_groups(df: pd.DataFrame, y: str, group: str, **kwargs: Any) -> GroupFits:
    """`fit_table` on each value of the `group` column (e.g. one fit per corpus); limited
    run names are checked against the whole table, then each group gets its own."""
    if group not in df.columns:
        raise InputError(
            f"no column {group!r} to group by; available: {list(map(str, df.columns))}"
        )
    name = kwargs.pop("name", "table")
    inputs: RegimeInputs = kwargs.pop("regime", None) or RegimeInputs()
    flags = _limited_flags(df, replace(inputs, limited_col=None), name)
    named = set(df[inputs.run_col].astype(str)[flags]) if inputs.limited else set()
    groups = {}
    for key, part in df.groupby(group, sort=False):
        mine = tuple(r for r in part[inputs.run_col].astype(str) if r in named) if named else None
        groups[str(key)] = fit_table(
            part, y, name=f"{name} [{group}={key}]", regime=replace(inputs, limited=mine), **kwargs
        )
    return GroupFits(table=name, group=group, groups=groups)
