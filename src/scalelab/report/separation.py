"""The separation figure: accuracy on INDEX hard instances against h·m·p / n, one layer vs
two, with the region where the one-layer lower bound forbids exactness shaded."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.induction.protocol import MESSAGE_BITS_PER_HMP
from scalelab.induction.separation import index_ceiling
from scalelab.io import atomic_write_bytes

STYLE = {
    ("construction", 1): ("C0", "o", "1 layer, construction (gather)"),
    ("trained", 1): ("C0", "^", "1 layer, trained (MLP, hard instances)"),
    ("construction", 2): ("C3", "*", "2 layers, construction"),
    ("trained", 2): ("C3", "s", "2 layers, trained"),
    ("trained-relative", 1): ("C2", "v", "1 layer, trained short, tested at n (relative pos.)"),
    ("trained-relative", 2): ("C1", "D", "2 layers, trained short, tested at n (same method)"),
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


def _save(fig: Figure, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    atomic_write_bytes(path, buf.getvalue())
    return path


def write_separation_figure(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Draw `run_separation`'s rows into `out/separation.png`."""
    return _save(separation_figure(rows), Path(out) / "separation.png")


def write_trained_separation_figure(doc: dict[str, Any], out: str | Path) -> Path:
    """The separation figure of `run_trained_separation`'s rows (its trained models, one
    point per seed, beside the constructions and the bound): `out/trained_separation.png`."""
    fig = separation_figure(doc["rows"])
    p = doc["plan"]
    fig.axes[0].set_title(
        f"h = {p['h']}, m = {p['m']}, p = {p['p']} at n = {p['n']}: message "
        f"{p['message_bits']:g} bits vs k = {p['k']:g}; "
        f"1-layer ceiling {p['one_layer_ceiling']:.3f}",
        fontsize=8,
    )
    return _save(fig, Path(out) / "trained_separation.png")


RULE_LABEL = {"3": "|Σ| = 3", "sqrt": "|Σ| = √n", "n": "|Σ| = n"}


def size_figure(rows: list[dict[str, Any]]) -> Figure:
    """h·m·p against n (log–log): the constant-width two-layer construction at its least
    exact p (solid), the one-layer gather construction (dashed) and the one-layer lower
    bound (dotted, shaded below for |Σ| = n), one colour per alphabet rule."""
    fig = Figure(figsize=(7.5, 4.8), layout="constrained")
    ax = fig.subplots()
    rules = [r for r in RULE_LABEL if any(row["alphabet_rule"] == r for row in rows)]
    styles = {"two-layer": ("-", "o"), "gather": ("--", "s"), "bound": (":", None)}
    names = {
        "two-layer": "2 layers, constant width (measured p)",
        "gather": "1 layer, gather construction",
        "bound": "1-layer lower bound (proven)",
    }
    for color, rule in zip(("C0", "C1", "C3"), rules, strict=False):
        for kind, (ls, marker) in styles.items():
            sel = sorted(
                (r for r in rows if r["kind"] == kind and r["alphabet_rule"] == rule),
                key=lambda r: r["n"],
            )
            sel = [r for r in sel if r.get("hmp") is not None]
            if sel:
                ax.plot(
                    [r["n"] for r in sel],
                    [r["hmp"] for r in sel],
                    ls,
                    marker=marker,
                    ms=4,
                    color=color,
                    label=f"{names[kind]}, {RULE_LABEL[rule]}",
                )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("h·m·p  (heads per layer × width × bits)")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="major", alpha=0.3)
    return fig


def write_size_figure(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Draw `run_size`'s rows into `out/size.png`."""
    return _save(size_figure(rows), Path(out) / "size.png")


def bound_figure(rows: list[dict[str, Any]]) -> Figure:
    """Trained models' hard-instance accuracy against (protocol message bits) / n: one
    layer (h = 1, p-bit straight-through training) by width, two layers at the same h, m
    and p = 2·⌈log2 n⌉ + 1; the proven one-layer ceiling from INDEX drawn for the
    smallest and largest n (k = (n − 1)/2 bits must cross the message)."""
    fig = Figure(figsize=(9.5, 4.6), layout="constrained")
    ax = fig.subplots()
    xs = np.array([r["message_over_n"] for r in rows])
    grid = np.geomspace(xs.min() / 1.5, xs.max() * 1.5, 300)
    ns = sorted({r["n"] for r in rows})
    for n, ls in ((ns[0], ":"), (ns[-1], "--")):
        ax.plot(
            grid,
            index_ceiling(grid / MESSAGE_BITS_PER_HMP, n),
            "k" + ls,
            lw=1,
            label=f"proven 1-layer ceiling, n = {n}",
        )
    ax.axhline(0.5, color="0.6", ls=":", lw=1, label="chance")
    widths = sorted({r["m"] for r in rows})
    for layers, marker in ((1, "o"), (2, "s")):
        for i, m in enumerate(widths):
            sel = sorted(
                (r for r in rows if r["n_layer"] == layers and r["m"] == m), key=lambda r: r["n"]
            )
            if not sel:
                continue
            ax.plot(
                [r["message_over_n"] for r in sel],
                [r["acc_hard"] for r in sel],
                "-" if layers == 1 else "--",
                marker=marker,
                color=f"C{i}",
                mfc=f"C{i}" if layers == 1 else "none",
                lw=0.8,
                label=f"{layers} layer{'s' * (layers > 1)}, h = 1, m = {m}, p = "
                + (f"{sel[0]['p']}" if layers == 1 else "2⌈log2 n⌉+1"),
            )
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(f"message bits / n   ({MESSAGE_BITS_PER_HMP:g}·h·m·p / n; n grows to the left)")
    ax.set_ylabel("accuracy on INDEX hard instances")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def write_bound_figure(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Draw `run_bound_trained`'s rows into `out/bound.png`."""
    return _save(bound_figure(rows), Path(out) / "bound.png")
