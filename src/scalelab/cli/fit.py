"""`scalelab fit`: fit a scaling law to two (or three) columns of a results table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scalelab.cli.common import (
    JSON,
    SEED,
    either,
    parse_list,
    print_json,
    print_record,
    print_table,
    renamed_option,
)
from scalelab.cli.options import From, derive
from scalelab.laws.fit.forms import FORMS
from scalelab.laws.regime.rules import RegimeConfig
from scalelab.runs.outdir import check_file

if TYPE_CHECKING:
    from scalelab.laws.fit_table import GroupFits, TableFit

# The regime inputs (defaults: RegimeInputs, tests/test_cli_defaults.py); the rules' constants
# are RegimeConfig's options.
_UNIGRAM_ENTROPY = typer.Option(
    None,
    "--unigram-entropy",
    help="Unigram entropy of the test tokens (nats/token): the fit range starts at the "
    "first size whose loss is --unigram-margin below it.",
)
_UNIGRAM_COL = typer.Option(
    None, "--unigram-col", help="Column holding the unigram entropy (one value per group)."
)
_STORE = typer.Option(
    None,
    "--store",
    help="Token store the runs trained on: its test split's unigram entropy and, for a "
    "synth:facts store, the exact floor E and the ideal learner's exponent.",
)
_BLOCK_SIZE = typer.Option(
    None, "--block-size", help="With --store: the runs' context length (scored test windows)."
)
_RETIRED_BLOCK_SIZE = renamed_option("--context-len", "--block-size")
_TEST_TOKENS = typer.Option(
    None, "--test-tokens", help="With --store: the runs' cap on scored test tokens."
)
_FLOOR = typer.Option(
    None, "--floor", help="Known irreducible loss E (default: the power+E fit's)."
)
_FLOOR_COL = typer.Option(None, "--floor-col", help="Column holding E (one value per group).")
_LIMITED_COL = typer.Option(
    None, "--limited-col", help="Column true for budget- or model-limited runs."
)
_LIMITED = typer.Option(
    None, "--limited", help="Comma-separated names (in --run-col) of limited runs."
)
_RUN_COL = typer.Option("run", "--run-col", help="Column of run names for --limited.")
_GROUP = typer.Option(None, "--group", help="Fit each value of this column apart (e.g. corpus).")
_FIGURES = typer.Option(
    None, "--figures", help="Write the loss and local-slope figures (PNG) to this folder."
)


_FORM_HELP = "; ".join(f"{name}: {f.help}" for name, f in FORMS.items())
_FORM_HELP += "; chinchilla: L = E + A/N^α + B/D^β."

_TABLE = typer.Argument(..., metavar="TABLE", help="Results table: .csv, .tsv, .parquet or .jsonl.")
TABLES = (".csv", ".tsv", ".parquet", ".jsonl", ".ndjson")


def _check_inputs(table: Path, form: str, x: str | None) -> None:
    """Refuse, before any table is read, what the options alone show to be wrong."""
    from scalelab.errors import ConfigError, InputError

    if table.suffix.lower() not in TABLES:
        hint = " (a point cloud is for `scalelab id`)" if table.suffix.lower() == ".npy" else ""
        raise InputError(f"TABLE {table}: give a {'/'.join(TABLES)} file{hint}")
    if form in FORMS and x is None:
        raise ConfigError(f"--form {form} needs --x: give the size column with --x COLUMN")


def fit_command(
    ctx: typer.Context,
    table: Path = _TABLE,
    x: str | None = typer.Option(None, "--x", help=f"Size column ({', '.join(FORMS)})."),
    y: str = typer.Option(..., "--y", help="Loss column (positive)."),
    form: str = typer.Option("power", "--form", help=_FORM_HELP),
    n_col: str | None = typer.Option(None, "--n-col", help="Parameters column (chinchilla)."),
    d_col: str | None = typer.Option(None, "--d-col", help="Tokens column (chinchilla)."),
    c_col: str | None = typer.Option(
        None, "--c-col", help="Training-FLOP column instead of --d-col: D = C / (6 N)."
    ),
    holdout: int = typer.Option(
        0, "--holdout", help="Also fit without the K largest sizes and report their error."
    ),
    compute: str | None = typer.Option(
        None,
        "--compute",
        help="chinchilla: comma-separated FLOP budgets C; prints N_opt, D_opt for C = 6ND.",
    ),
    n_boot: int = typer.Option(
        1000, "--n-boot", min=0, help="Bootstrap resamples for the intervals (0: none)."
    ),
    seed: int = SEED,
    unigram_entropy: float | None = _UNIGRAM_ENTROPY,
    unigram_col: str | None = _UNIGRAM_COL,
    store: Path | None = _STORE,
    block_size: int | None = _BLOCK_SIZE,
    retired_block_size: int | None = _RETIRED_BLOCK_SIZE,
    test_tokens: int | None = _TEST_TOKENS,
    floor: float | None = _FLOOR,
    floor_col: str | None = _FLOOR_COL,
    limited_col: str | None = _LIMITED_COL,
    limited: str | None = _LIMITED,
    run_col: str = _RUN_COL,
    group: str | None = _GROUP,
    rules: RegimeConfig = From(RegimeConfig),
    figures: Path | None = _FIGURES,
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

    _check_inputs(table, form, x)
    check_file(out)
    opts = ctx.params
    kwargs = {
        k: opts[k] for k in ("form", "x", "n_col", "d_col", "c_col", "holdout", "n_boot", "seed")
    }
    kwargs["compute"] = parse_list(compute, float, "--compute") if compute else None
    kwargs["regime"] = _regime_inputs(opts, rules)
    kwargs["name"] = str(table)
    df = read_table(table)
    result = fit_groups(df, y, group, **kwargs) if group else fit_table(df, y, **kwargs)
    if out is not None:
        atomic_write_json(out, {**result.to_dict(), "provenance": provenance()})
    _emit(
        result,
        df,
        group=group,
        figures=figures,
        json_out=json_out,
        y=y,
        x=x,
        n_boot=n_boot,
        holdout=holdout,
    )


def _emit(
    result: TableFit | GroupFits,
    df: Any,
    *,
    group: str | None,
    figures: Path | None,
    json_out: bool,
    **shown: Any,
) -> None:
    """Figures, then the result as JSON or as tables (one set per group)."""
    from scalelab.laws.fit_table import GroupFits

    parts = result.groups if isinstance(result, GroupFits) else {"": result}
    if figures is not None:
        _figures(parts, figures, shown["y"], Path(result.table).stem)
    if json_out:
        print_json(result)
        return
    for key, part in parts.items():
        rows = len(df) if not group else int((df[group].astype(str) == key).sum())
        if group:
            typer.echo(f"\n== {group} = {key}")
        _print(part, shown["y"], shown["x"], rows, shown["n_boot"], shown["holdout"])


def _regime_inputs(opts: dict[str, Any], config: RegimeConfig) -> Any:
    """The regime inputs from the command's options (`ctx.params`); a store gives its test
    split's unigram entropy and, when it holds a facts corpus, the exact floor and the ideal
    learner's exponent."""
    from scalelab.errors import InputError
    from scalelab.laws.fit_table import RegimeInputs

    names = ("unigram_entropy", "unigram_col", "floor", "floor_col", "limited_col", "run_col")
    given = {k: opts[k] for k in names}
    if opts["limited"]:
        given["limited"] = tuple(parse_list(opts["limited"], str, "--limited", "run names"))
    store = opts["store"]
    if store is None:
        return RegimeInputs(config=config, **given)
    if opts["group"] is not None:
        raise InputError("--store describes one corpus; with --group give --unigram-col")
    from scalelab.text.floors import facts_floor, store_unigram_entropy

    block_size = either(opts["block_size"], opts["retired_block_size"])
    given["unigram_entropy"] = store_unigram_entropy(store, block_size, opts["test_tokens"])
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
