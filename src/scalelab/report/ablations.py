"""The seed paper's Figure 4: one figure per ablation of `scalelab.probe.ablate` (drawing
only; `scalelab.probe.ablations` measures and writes the files, with these as its `figure`)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from scalelab.probe import ablate


def _figure(ncols: int = 1) -> tuple[Figure, Any]:
    fig = Figure(figsize=(5.2 * ncols, 3.8), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _errorbar(ax: Any, x: list, rows: list[dict[str, Any]], *, joined: bool = True) -> None:
    """d ± SE against `x`; `joined=False` for points that are not a series (other models)."""
    d = [r["dimension"] for r in rows]
    se = [r["dimension_se"] if r["dimension_se"] is not None else 0.0 for r in rows]
    ax.errorbar(x, d, yerr=se, marker="o", capsize=3, linestyle="-" if joined else "none")
    ax.set_ylabel("estimated intrinsic dimension d")
    ax.grid(alpha=0.3)


def layers_figure(result: ablate.Ablation) -> Figure:
    rows, lab = result.rows, result.labels
    fig, (ax,) = _figure()
    _errorbar(ax, [r["layer"] for r in rows], rows)
    ax.set_xlabel(f"hidden state (0 = embeddings, {lab['n_states'] - 1} = after final LN)")
    ax.set_title(f"d vs layer: {lab['model']} on {lab['corpus']}")
    return fig


def positions_figure(result: ablate.Ablation) -> Figure:
    lab = result.labels
    shown = [r for r in result.rows if r["dimension"] is not None]
    fig, (ax,) = _figure()
    _errorbar(ax, [(r["position_from"] + r["position_to"]) / 2 for r in shown], shown)
    ax.set_xlabel(f"position in the window (centre of each of {lab['groups']} ranges)")
    ax.set_title(f"d vs position: {lab['model']}, {lab['layer_name']}")
    return fig


def models_figure(result: ablate.Ablation) -> Figure:
    rows = result.rows
    fig, (ax_n, ax_w) = _figure(2)
    for ax, key in ((ax_n, "params_non_embedding"), (ax_w, "width")):
        _errorbar(ax, [r[key] for r in rows], rows, joined=False)
        for r in rows:
            ax.annotate(
                r["run"],
                (r[key], r["dimension"]),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
            )
    ax_n.set_xscale("log")
    ax_n.set_xlabel("non-embedding parameters")
    ax_w.set_xlabel("width (embedding dimension)")
    fig.suptitle("d vs model size and width")
    return fig


def batch_size_figure(result: ablate.Ablation) -> Figure:
    rows, lab = result.rows, result.labels
    fig, (ax,) = _figure()
    _errorbar(ax, [r["batch_size"] for r in rows], rows)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("points per MLE batch")
    ax.set_title(f"d vs batch size ({lab['n_points']} points, K = {lab['k']})")
    return fig
