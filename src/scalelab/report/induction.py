"""Report section for induction sweeps (sweep.json kind "induction"): accuracy against n for
one vs two layers (trained) and the two-layer construction, with the n from which the
one-layer bound forces errors marked (the protocol's message, `protocol.message_bits`,
shorter than the k = (n − 1)/2 bits INDEX needs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from scalelab.errors import InputError
from scalelab.induction.protocol import MESSAGE_BITS_PER_HMP
from scalelab.induction.sweep import FLOAT32_BITS, bound_columns
from scalelab.report.document import Report
from scalelab.runs.migrate import migrate_table

METRICS = (
    ("acc_all", "all positions (uniform)"),
    ("acc_last", "last position (uniform)"),
    ("acc_hard", "INDEX hard instances (last position)"),
)
TABLE_COLS = (
    "run",
    "model",
    "alphabet_size",
    "n",
    "n_layer",
    "n_head",
    "n_embd",
    "acc_all",
    "acc_non_bottom",
    "acc_last",
    "acc_hard",
    "steps",
    "stop_reason",
    "hmp",
    "message_bits",
    "errors_forced_from",
    "wall_time_s",
    "cpu_time_s",
)


def _label(row: pd.Series) -> str:
    if row["model"] == "construction":
        return f"construction, |Σ|={row['alphabet_size']}"
    arch = f"h={row['n_head']} m={row['n_embd']}"
    return f"{int(row['n_layer'])} layer(s), {arch}, |Σ|={row['alphabet_size']}"


def with_bound(table: pd.DataFrame) -> pd.DataFrame:
    """The table with `hmp`, `message_bits` and `errors_forced_from` recomputed from each
    run's shape (runs.csv files written before these columns had h·n_embd·p in `hmp`)."""
    bits = table.get("train_bits_effective", pd.Series(FLOAT32_BITS, index=table.index))
    cols = [
        bound_columns(int(h), int(m) // int(h), int(p))
        for h, m, p in zip(table["n_head"], table["n_embd"], bits.fillna(FLOAT32_BITS), strict=True)
    ]
    return table.assign(**pd.DataFrame(cols, index=table.index))


def bound_markers(table: pd.DataFrame) -> list[int]:
    """The n at which the marker lines are drawn: `errors_forced_from` of the one-layer runs."""
    one = table.loc[table["n_layer"] == 1, "errors_forced_from"].dropna()
    return sorted(set(one.astype(int)))


def _figure(table: pd.DataFrame, metric_cols: tuple[tuple[str, str], ...]) -> Figure:
    fig = Figure(figsize=(5 * len(metric_cols), 4))
    axes = fig.subplots(1, len(metric_cols), squeeze=False)[0]
    table = table.assign(label=table.apply(_label, axis=1))
    markers = bound_markers(table)
    n_min, n_max = table["n"].min(), table["n"].max()
    for ax, (col, title) in zip(axes, metric_cols, strict=True):
        for label, grp in table.groupby("label", sort=True):
            grp = grp.groupby("n", as_index=False)[col].mean().sort_values("n")
            built = label.startswith("construction")
            style = "--" if built else ("-" if "2 layer" in label else ":")
            ax.plot(grp["n"], grp[col], style, marker="o", label=label)
        if col.startswith("acc_hard"):
            ax.axhline(0.5, color="grey", lw=0.8)
            ax.text(n_min, 0.51, "chance", color="grey", fontsize=8)
        for n_forced in markers:
            if n_min / 2 <= n_forced <= n_max * 2:
                ax.axvline(n_forced, color="red", lw=0.8, ls="-.")
                label = f" 1 layer must err from n={n_forced}"
                ax.text(n_forced, 0.97, label, color="red", fontsize=8, ha="left", va="top")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("sequence length n")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("accuracy")
    axes[-1].legend(fontsize=7, loc="lower left")
    return fig


def draw(analysis: None, report: Report, sweep_dir: Path) -> None:
    """Add the induction section for `sweep_dir` (reads its runs.csv; its kind has no
    analysis) to `report`."""
    sweep_dir = Path(sweep_dir)
    try:
        table = migrate_table(pd.read_csv(sweep_dir / "runs.csv"))
    except (OSError, pd.errors.EmptyDataError) as err:
        raise InputError(
            f"{sweep_dir} has no readable runs.csv ({err}); run `scalelab induction sweep` first"
        ) from err
    if table.empty or "acc_all" not in table:
        raise InputError(f"{sweep_dir}/runs.csv has no finished induction runs yet")
    table = with_bound(table)
    report.heading("Induction heads: one layer vs two layers")
    report.paragraph(
        "Accuracy over all positions, non-⊥ positions and the last position is measured on "
        "uniform random sequences; 'hard' is the last-position accuracy on the INDEX hard "
        "instances (e_1, f_1, …, e_k, f_k, ?), where chance is 50%. On uniform sequences over "
        "small alphabets the previous match is usually a few positions back, so a one-layer "
        "model can look good there: the hard instances and the last position are what "
        "separate the models. The construction is the hand-set constant-width two-layer "
        "transformer (no training). Red lines, when in range, mark the n from which the "
        "one-layer lower bound forces errors: there the protocol's message, "
        f"{MESSAGE_BITS_PER_HMP:g}·h·d_head·p bits (p = 24, the float32 significand, unless "
        "trained at lower precision), is shorter than the k = (n − 1)/2 bits INDEX needs."
    )
    markers = bound_markers(table)
    if markers and min(markers) > table["n"].max():
        report.paragraph(
            f"Here the bound forces errors only from n = {markers} on, beyond every n in the "
            "sweep, so it allows one layer to succeed in principle; a failure of trained "
            "one-layer models at these sizes is a failure to learn, not forced by capacity."
        )
    report.figure(_figure(table, METRICS), "accuracy vs n: 1 vs 2 layers and the construction")
    bit_cols = sorted(
        (c for c in table if c.startswith("acc_hard_p")), key=lambda c: int(c[len("acc_hard_p") :])
    )
    if bit_cols:
        labels = tuple((c, f"hard, p = {c.removeprefix('acc_hard_p')} bits") for c in bit_cols)
        report.figure(_figure(table, labels), "hard-instance accuracy, values rounded to p bits")
    cols = [c for c in TABLE_COLS if c in table] + [
        c for c in table if c.startswith("acc_") and c[-1].isdigit()
    ]
    rows = table[cols].replace({np.nan: None}).to_dict("records")
    report.table(rows, "one row per finished run (wall and CPU seconds on the machine that ran it)")
