"""Figure and tables of the constructed Lemma-1 transformer's rate
(`manifold.construction_rate.ConstructResult`): squared L2 error against parameters per d,
with the slope 2β/d and the trained online models of the `theorem` sweep on the same axes;
the rate table, the dense checks and the sizes as Markdown. Draws; computes nothing."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.io import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from scalelab.manifold.construction_rate import ConstructResult, RateRow

FIGURE = "construct.png"
MARKERS = {"field": "o", "multiscale": "s"}


def _mean_curve(rows: list[RateRow]) -> tuple[np.ndarray, np.ndarray]:
    """Params (dense) and the geometric-mean squared error over draws, per G."""
    grid = sorted({r.G for r in rows})
    x = np.array([next(r.params_dense for r in rows if g == r.G) for g in grid], dtype=float)
    y = np.array([math.exp(np.mean([math.log(r.mse) for r in rows if g == r.G])) for g in grid])
    return x, y


def rate_figure(result: ConstructResult) -> Figure:
    """One panel per d: constructed error vs parameters per (β, target), the slope 2β/d
    through each β's first point, and the trained online models at that d (β = 1)."""
    dims = sorted({r.d for r in result.rows})
    fig = Figure(figsize=(4.6 * len(dims), 4.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(dims)))
    for ax, d in zip(axes, dims, strict=True):
        for i, beta in enumerate(sorted({r.beta for r in result.rows if r.d == d})):
            color = f"C{i}"
            for name, marker in MARKERS.items():
                mine = [r for r in result.rows if (r.d, r.beta, r.target) == (d, beta, name)]
                if not mine:
                    continue
                x, y = _mean_curve(mine)
                ax.plot(x, y, marker + "-", color=color, ms=4, lw=1,
                        label=f"constructed, β={beta:g}, {name}")  # fmt: skip
            x0, y0 = x[0], y[0]
            xs = np.geomspace(x0, x[-1], 50)
            ax.plot(xs, y0 * (xs / x0) ** (-2 * beta / d), ":", color=color, lw=1.5,
                    label=f"slope 2β/d = {2 * beta / d:.2f}")  # fmt: skip
        for t in result.trained:
            if t.d == d:
                alpha = "n/a" if t.exponent is None else f"{t.exponent:.2f}"
                ax.plot(t.params, t.errors, "^-", color="k", ms=5, lw=1,
                        label=f"trained online, β={t.beta:g}: α̂_N = {alpha}")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("parameters (dense heads: full Q, K, V each)")
        ax.set_ylabel("squared L2 error on [0, 1]^d")
        ax.set_title(f"d = {d}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def write_figure(result: ConstructResult, out: str | Path) -> Path:
    """`rate_figure` into out/construct.png."""
    buf = io.BytesIO()
    rate_figure(result).savefig(buf, format="png", dpi=90)
    return atomic_write_bytes(Path(out) / FIGURE, buf.getvalue())


def _f(v: float | None, spec: str = ".3f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(none)\n"
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(r[k]) for k in head) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def rate_rows(result: ConstructResult) -> list[dict[str, Any]]:
    """Per (d, β, target): outcome, power, G range and exponent [95%] in both conventions."""
    out = []
    for c in result.checks:
        if c.convention != "dense":
            continue
        b = next(x for x in result.checks if (x.d, x.beta, x.target, x.convention) ==
                 (c.d, c.beta, c.target, "appendix_b"))  # fmt: skip
        ci = "n/a" if c.ci95 is None else f"[{c.ci95[0]:.3f}, {c.ci95[1]:.3f}]"
        ci_b = "n/a" if b.ci95 is None else f"[{b.ci95[0]:.3f}, {b.ci95[1]:.3f}]"
        g = "n/a" if c.G_range is None else f"{c.G_range[0]}–{c.G_range[1]}"
        out.append({
            "d": c.d, "β": f"{c.beta:g}", "target": c.target, "outcome": c.outcome,
            "power": _f(c.power, ".2f"), "G range": g, "decades": f"{c.decades:.1f}",
            "exponent [95%], dense": f"{_f(c.exponent)} {ci}",
            "exponent [95%], App. B": f"{_f(b.exponent)} {ci_b}",
            "2β/d": f"{c.predicted:.3f}",
        })  # fmt: skip
    return out


def error_rows(result: ConstructResult) -> list[dict[str, Any]]:
    """Per (d, β, target, G): mean squared error over draws, the worst sup error over its
    two bounds, and the partition of unity's worst deviation from 1."""
    out = []
    keys = sorted({(r.d, r.beta, r.target, r.G) for r in result.rows})
    for d, beta, name, G in keys:
        mine = [r for r in result.rows if (r.d, r.beta, r.target, r.G) == (d, beta, name, G)]
        out.append({
            "d": d, "β": f"{beta:g}", "target": name, "G": G, "params": mine[0].params_dense,
            "mse": f"{np.mean([r.mse for r in mine]):.3e}",
            "sup/lemma bound": f"{max(r.sup_error / r.lemma_bound for r in mine):.2e}",
            "sup/sharp bound": f"{max(r.sup_error / r.sharp_bound for r in mine):.3f}",
            "max abs(Σφ − 1)": f"{max(r.partition_deviation for r in mine):.1e}",
        })  # fmt: skip
    return out


def dense_rows(result: ConstructResult) -> list[dict[str, Any]]:
    return [{
        "d": c.d, "β": f"{c.beta:g}", "target": c.target, "G": c.G, "tokens": c.tokens,
        "heads": c.heads, "points": c.points, "max abs(dense − closed), float64":
        f"{c.max_diff_float64:.1e}", "float32": f"{c.max_diff_float32:.1e}",
        "max C": f"{c.interaction_constant_max:.3g}", "s/point": f"{c.seconds_per_point:.3f}",
    } for c in result.dense]  # fmt: skip


def size_rows(result: ConstructResult) -> list[dict[str, Any]]:
    return [{
        "d": s["d"], "G": s["G"], "tokens": s["tokens"],
        "heads": s["heads"], "depth": s["depth"], "width": s["width"],
        "params (dense)": s["params_dense"], "params (App. B)": s["params_appendix_b"],
        "κ = max abs θ": f"{s['weight_bound']:.3g}",
        "dense s/point": _f(s["dense_seconds_per_point"]),
    } for s in result.sizes]  # fmt: skip


def formula_rows(result: ConstructResult) -> list[dict[str, Any]]:
    seen, out = set(), []
    for s in result.sizes:
        if s["d"] in seen:
            continue
        seen.add(s["d"])
        out.append({"d": s["d"], "tokens l": s["formula_tokens"], "heads": s["formula_heads"],
                    "depth L_T": s["formula_depth"], "width": "5 (FFN hidden 5)",
                    "params (dense)": s["formula_params_dense"],
                    "params (App. B)": s["formula_params_appendix_b"]})  # fmt: skip
    return out


def markdown(result: ConstructResult) -> str:
    """The result's tables as Markdown (construct.md beside construct.json)."""
    cfg = result.config
    parts = [
        "# The constructed Lemma-1 transformer: error against size\n",
        f"dims {list(cfg.dims)}, β {list(cfg.betas)}, targets {list(cfg.targets)}, "
        f"{cfg.draws} draws, ≈{cfg.n_eval} lattice points, seed {cfg.seed}; "
        f"{result.seconds:.0f} s.\n",
        "## Rate\n", _table(rate_rows(result)),
        "## Errors and bounds\n", _table(error_rows(result)),
        "## Dense pass against the closed form\n", _table(dense_rows(result)),
        "## Sizes as functions of G\n", _table(formula_rows(result)),
        "## Sizes of built models\n", _table(size_rows(result)),
    ]  # fmt: skip
    return "\n".join(parts)


def write_markdown(result: ConstructResult, out: str | Path) -> Path:
    return atomic_write_text(Path(out) / "construct.md", markdown(result))
