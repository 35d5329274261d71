"""Report section for induction sweeps (sweep.json kind "induction"): accuracy against n for
one vs two layers (trained) and the two-layer construction, with h·m·p marked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from scalelab.errors import InputError
from scalelab.report.document import Report

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
    "d_model",
    "acc_all",
    "acc_non_bottom",
    "acc_last",
    "acc_hard",
    "steps",
    "stop_reason",
    "hmp",
    "wall_time_s",
    "cpu_time_s",
)


def _label(row: pd.Series) -> str:
    if row["model"] == "construction":
        return f"construction, |Σ|={row['alphabet_size']}"
    arch = f"h={row['n_head']} m={row['d_model']}"
    return f"{int(row['n_layer'])} layer(s), {arch}, |Σ|={row['alphabet_size']}"


def _figure(table: pd.DataFrame, metric_cols: tuple[tuple[str, str], ...]) -> Figure:
    fig = Figure(figsize=(5 * len(metric_cols), 4))
    axes = fig.subplots(1, len(metric_cols), squeeze=False)[0]
    table = table.assign(label=table.apply(_label, axis=1))
    one_layer_hmp = sorted(set(table.loc[table["n_layer"] == 1, "hmp"].dropna().astype(int)))
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
        for hmp in one_layer_hmp:
            if n_min / 2 <= hmp <= n_max * 2:
                ax.axvline(hmp, color="red", lw=0.8, ls="-.")
                label = f" h·m·p={hmp}"
                ax.text(hmp, 0.97, label, color="red", fontsize=8, ha="left", va="top")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("sequence length n")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("accuracy")
    axes[-1].legend(fontsize=7, loc="lower left")
    return fig


def build(sweep_dir: Path, report: Report) -> None:
    """Add the induction section for `sweep_dir` (reads its runs.csv) to `report`."""
    sweep_dir = Path(sweep_dir)
    try:
        table = pd.read_csv(sweep_dir / "runs.csv")
    except (OSError, pd.errors.EmptyDataError) as err:
        raise InputError(
            f"{sweep_dir} has no readable runs.csv ({err}); run `scalelab induction sweep` first"
        ) from err
    if table.empty or "acc_all" not in table:
        raise InputError(f"{sweep_dir}/runs.csv has no finished induction runs yet")
    report.heading("Induction heads: one layer vs two layers")
    report.paragraph(
        "Accuracy over all positions, non-⊥ positions and the last position is measured on "
        "uniform random sequences; 'hard' is the last-position accuracy on the INDEX hard "
        "instances (e_1, f_1, …, e_k, f_k, ?), where chance is 50%. On uniform sequences over "
        "small alphabets the previous match is usually a few positions back, so a one-layer "
        "model can look good there: the hard instances and the last position are what "
        "separate the models. The construction is the hand-set two-layer transformer "
        "(no training). Red lines mark n = h·m·p for the one-layer models when in range "
        "(p = 24 bits, the float32 significand, unless trained at lower precision); "
        "the one-layer lower bound says h·m·p = Ω(n) is needed."
    )
    one_layer_hmp = sorted(set(table.loc[table["n_layer"] == 1, "hmp"].dropna().astype(int)))
    if one_layer_hmp and max(one_layer_hmp) > 2 * table["n"].max():
        report.paragraph(
            f"Here h·m·p = {one_layer_hmp} exceeds every n in the sweep, so the bound "
            "allows one layer to succeed in principle; a failure of trained one-layer models "
            "at these sizes is a failure to learn, not forced by capacity."
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
