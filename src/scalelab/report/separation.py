"""The separation figure: accuracy on INDEX hard instances against h·m·p / n, one layer vs
two, with the region where the one-layer lower bound forbids exactness shaded."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.induction.separation import (
    CONFIG,
    MESSAGE_BITS_PER_HMP,
    SeparationConfig,
    index_ceiling,
    run_separation,
)
from scalelab.io import atomic_write_bytes
from scalelab.runs import outdir

STYLE = {
    ("construction", 1): ("C0", "o", "1 layer, construction (gather)"),
    ("trained", 1): ("C0", "^", "1 layer, trained (MLP, hard instances)"),
    ("construction", 2): ("C3", "*", "2 layers, construction"),
    ("trained", 2): ("C3", "s", "2 layers, trained"),
}


def separation_figure(rows: list[dict[str, Any]]) -> Figure:
    """Scatter of acc_hard vs h·m·p/n (log x) by kind and depth; constructions at one n are
    joined; the proven region (Alice's ≈ C·h·m·p-bit message shorter than k) is shaded and the
    INDEX accuracy ceiling for one layer is drawn."""
    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
    ax = fig.subplots()
    xs = np.array([r["hmp_over_n"] for r in rows])
    n_big = max(r["n"] for r in rows)
    edge = (n_big - 1) / (2 * MESSAGE_BITS_PER_HMP * n_big)
    lo, hi = min(xs.min() / 1.5, edge / 3), xs.max() * 1.5
    ax.axvspan(
        lo,
        edge,
        color="0.85",
        zorder=0,
        label=f"proven: no 1-layer model exact ({MESSAGE_BITS_PER_HMP:g}·hmp < k)",
    )
    grid = np.geomspace(lo, hi, 300)
    ax.plot(
        grid,
        index_ceiling(grid, n_big),
        "k--",
        lw=1,
        label="proven 1-layer ceiling (INDEX, message 4·hmp bits)",
    )
    ax.axhline(0.5, color="0.6", ls=":", lw=1, label="chance")
    for (kind, layers), (color, marker, label) in STYLE.items():
        sel = [r for r in rows if r["kind"] == kind and r["n_layer"] == layers]
        if not sel:
            continue
        if kind == "construction" and layers == 1:
            for n in sorted({r["n"] for r in sel}):
                line = sorted((r for r in sel if r["n"] == n), key=lambda r: r["hmp_over_n"])
                ax.plot(
                    [r["hmp_over_n"] for r in line],
                    [r["acc_hard"] for r in line],
                    "-",
                    color=color,
                    alpha=0.4,
                    lw=1,
                )
        hollow = kind == "construction" and layers == 1
        ax.scatter(
            [r["hmp_over_n"] for r in sel],
            [r["acc_hard"] for r in sel],
            marker=marker,
            s=60 if marker == "*" else 30,
            label=label,
            zorder=3,
            facecolors="none" if hollow else color,
            edgecolors=color,
        )
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel("h·m·p / n   (heads × width × bits of precision, per sequence length)")
    ax.set_ylabel("accuracy on INDEX hard instances")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def run_separation_with_figure(cfg: SeparationConfig, out: str | Path) -> list[dict[str, Any]]:
    """`run_separation` and the figure beside its table, `out/separation.png`, under one
    hold of the folder's lock (released on return)."""
    out = Path(out)
    with outdir.claimed(out, CONFIG, cfg.to_dict()):
        rows = run_separation(cfg, out)
        buf = io.BytesIO()
        separation_figure(rows).savefig(buf, format="png", dpi=90)
        atomic_write_bytes(out / "separation.png", buf.getvalue())
    return rows
