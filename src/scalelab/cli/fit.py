"""`scalelab fit`: fit a scaling law to two (or three) columns of a results table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scalelab.cli.common import JSON, print_json, print_record, print_table
from scalelab.cli.options import From, derive
from scalelab.laws.fit.forms import FORMS
from scalelab.laws.fit.request import FitRequest
from scalelab.runs.outdir import check_file

if TYPE_CHECKING:
    from scalelab.laws.fit_table import GroupFits, TableFit

_TABLE = typer.Argument(..., metavar="TABLE", help="Results table: .csv, .tsv, .parquet or .jsonl.")
TABLES = (".csv", ".tsv", ".parquet", ".jsonl", ".ndjson")


def _check_inputs(table: Path, form: str, x: str | None, y: str) -> None:
    """Refuse, before any table is read, what the options alone show to be wrong."""
    from scalelab.errors import ConfigError, InputError

    if not y:
        raise ConfigError("--y is required: give the loss column with --y COLUMN")
    if table.suffix.lower() not in TABLES:
        hint = " (a point cloud is for `scalelab id`)" if table.suffix.lower() == ".npy" else ""
        raise InputError(f"TABLE {table}: give a {'/'.join(TABLES)} file{hint}")
    if form in FORMS and x is None:
        raise ConfigError(f"--form {form} needs --x: give the size column with --x COLUMN")


def fit_command(
    table: Path = _TABLE,
    req: FitRequest = From(FitRequest),
    figures: Path | None = typer.Option(
        None, "--figures", help="Write the loss and local-slope figures (PNG) to this folder."
    ),
    out: Path | None = typer.Option(None, "--out", help="Also write the result as JSON here."),
    json_out: bool = JSON,
) -> None:
    """Fit a scaling law to a table, with bootstrap 95% intervals.

    Also says where the curve is a power law: local slopes, the fit range by rule, a
    curvature test, the plain and excess exponents (docs/fitting.md). The printed form is
    always named: 'power' has no irreducible term, 'power+E' and 'chinchilla' do."""
    from scalelab.io import atomic_write_json, provenance
    from scalelab.laws.fit_table import fit_groups, fit_table
    from scalelab.laws.table import read_table

    _check_inputs(table, req.form, req.x, req.y)
    check_file(out)
    names = ("form", "x", "n_col", "d_col", "c_col", "holdout", "n_boot", "seed")
    kwargs: dict[str, Any] = {k: getattr(req, k) for k in names}
    kwargs["compute"] = list(req.compute) or None
    kwargs["regime"] = _regime_inputs(req)
    kwargs["name"] = str(table)
    df = read_table(table)
    fits = (
        fit_groups(df, req.y, req.group, **kwargs) if req.group else fit_table(df, req.y, **kwargs)
    )
    if out is not None:
        atomic_write_json(
            out, {**fits.to_dict(), "config": req.to_dict(), "provenance": provenance()}
        )
    _emit(fits, df, req, figures=figures, json_out=json_out)


def _emit(
    result: TableFit | GroupFits,
    df: Any,
    req: FitRequest,
    *,
    figures: Path | None,
    json_out: bool,
) -> None:
    """Figures, then the result as JSON or as tables (one set per group)."""
    from scalelab.laws.fit_table import GroupFits

    parts = result.groups if isinstance(result, GroupFits) else {"": result}
    if figures is not None:
        _figures(parts, figures, req.y, Path(result.table).stem)
    if json_out:
        print_json(result)
        return
    group = req.group
    for key, part in parts.items():
        rows = len(df) if not group else int((df[group].astype(str) == key).sum())
        if group:
            typer.echo(f"\n== {group} = {key}")
        _print(part, req.y, req.x, rows, req.n_boot, req.holdout)


def _regime_inputs(req: FitRequest) -> Any:
    """The regime inputs of the request; a store gives its test split's unigram entropy and,
    when it holds a facts corpus, the exact floor and the ideal learner's exponent."""
    from scalelab.errors import InputError
    from scalelab.laws.fit_table import RegimeInputs

    names = ("unigram_entropy", "unigram_col", "floor", "floor_col", "limited_col", "run_col")
    given: dict[str, Any] = {k: getattr(req, k) for k in names}
    given["limited"] = req.limited or None
    config = req.rules
    if req.store is None:
        return RegimeInputs(config=config, **given)
    if req.group is not None:
        raise InputError("--store describes one corpus; with --group give --unigram-col")
    from scalelab.text.floors import facts_floor, store_unigram_entropy

    store = Path(req.store)
    given["unigram_entropy"] = store_unigram_entropy(store, req.block_size, req.test_tokens)
    floor, where, theory = facts_floor(store)
    if theory is None:
        return RegimeInputs(config=config, **given)
    if given["floor"] is None:
        given["floor"], given["floor_source"] = floor, where
    return RegimeInputs(config=config, ideal_exponent=theory.effective_exponent, **given)


def _figures(parts: dict[str, TableFit], folder: Path, y: str, stem: str) -> None:
    """Two PNGs per group, named by the group (by the table's file name without groups)."""
    from scalelab.report.regime import write_regime_figures

    for key, part in parts.items():
        if part.regime is not None:
            title = f"{y} ({key or stem})"
            write_regime_figures(part.regime.to_dict(), folder, key or stem, title=title)


def _rows(result: TableFit) -> list[dict[str, Any]]:
    """The fitted parameters with their intervals, as table rows."""
    from scalelab.io import format_interval
    from scalelab.laws.fit.chinchilla import ChinchillaFit

    fit = result.fit
    if isinstance(fit, ChinchillaFit):
        return [
            {
                "param": k,
                "value": getattr(fit, k),
                "ci95": format_interval(fit.ci95.get(k), ".4g", ""),
            }
            for k in ("A", "B", "E", "alpha", "beta")
        ]
    rows = [
        {
            "param": "exponent",
            "value": fit.exponent,
            "ci95": format_interval(fit.exponent_ci95, ".4g", ""),
        },
        {"param": "A", "value": fit.A, "ci95": ""},
    ]
    if fit.E is not None:
        rows.append({"param": "E", "value": fit.E, "ci95": ""})
    return rows


def _print(result: TableFit, y: str, x: str | None, n_rows: int, n_boot: int, holdout: int) -> None:
    form = result.form
    print_table(f"{form} fit of {y} ({n_rows} rows, {n_boot} bootstrap resamples)", _rows(result))
    if result.compute_optimal is not None:
        print_table(
            "compute-optimal allocation (C = 6·N·D)",
            [c.to_dict() for c in result.compute_optimal],
        )
    if result.holdout is not None:
        h = result.holdout
        print_table(
            f"held out the {holdout} largest ({'6·N·D' if form == 'chinchilla' else x}); "
            f"fitted on {h.n_fit}",
            [
                {"observed": o, "predicted": p, "rel_error": r}
                for o, p, r in zip(h.observed, h.predicted, h.rel_error, strict=True)
            ],
        )
    if result.regime is not None:
        _print_regime(result.regime.to_dict())


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _outcome_line(regime: dict[str, Any], *, excess: bool) -> str:
    """'UNDECIDED, power 0.14; to decide: ...' for one observable."""
    from scalelab.laws.regime.analysis import outcome_of, power_words

    parts = [outcome_of(regime, excess=excess), power_words(regime, excess=excess)]
    plan = regime.get("excess_plan" if excess else "plan")
    if plan:
        chosen = plan["chosen"]
        parts.append(
            f"to decide: {chosen['seeds']} seed(s) per size over {chosen['decades']:.2f} decades "
            f"(power {chosen['power']:.2f})"
            if chosen
            else f"no rerun tried reaches power {plan['target']:.0%}"
        )
    return ", ".join(p for p in parts if p)


def _print_regime(regime: dict[str, Any]) -> None:
    """Local slopes with bands, then the range, the test, the verdict and the exponents."""
    from scalelab.io import format_interval

    s = regime["local_slopes"]
    print_table(
        f"local slopes ({s['level']:.0%} bands: {s['method']})",
        [
            {
                "from": f"{a:,.0f}",
                "to": f"{b:,.0f}",
                "slope": v,
                "band": format_interval((lo, hi), ".3f", ""),
            }
            for a, b, v, lo, hi in zip(
                s["x_lo"], s["x_hi"], s["slope"], s["lo"], s["hi"], strict=True
            )
        ],
    )
    rng, test = regime["fit_range"], regime["curvature"]
    record = {
        "outcome (plain slope)": _outcome_line(regime, excess=False),
    }
    if regime.get("excess_outcome"):
        record["outcome (excess L − E)"] = _outcome_line(regime, excess=True)
    record |= {
        "verdict": regime["verdict"],
        "fitted range": f"{rng['x_lo']:,.0f} … {rng['x_hi']:,.0f} ({rng['decades']:.2f} decades)"
        if rng["n_points"]
        else "none",
        "lower end": rng["lower_reason"],
        "upper end": rng["upper_reason"],
    }
    if test is not None and _finite(test["exponent_mid"]):
        record["exponent at the ends"] = (
            f"{test['exponent_lo_end']:.3f} → {test['exponent_hi_end']:.3f} (quadratic fit)"
        )
    if regime["plain"]:
        p = regime["plain"]
        record["plain exponent"] = f"{p['exponent']:.4f} {format_interval(p['exponent_ci95'])}"
    if regime["excess"]:
        e = regime["excess"]
        record["excess exponent"] = e["text"]
        record["E"] = f"{e['E']:.4g} {format_interval(e['E_ci95'], '.4g')} ({e['E_source']})"
    for label, value in regime["predictions"].items():
        record[f"predicted: {label}"] = f"{value:.4f}"
    print_record("where the curve is a power law", record)


def register(app: typer.Typer) -> None:
    """Add `scalelab fit` to the top-level app."""
    app.command("fit")(derive(fit_command))
