"""Figures and report pages for induction heads in language models: the heads × layers
heat maps of `scalelab induction heads`, and the training curves of `compare-depth`. The
measurements themselves are `scalelab.probe.heads.run_heads` and
`scalelab.probe.depth.compare_depth`; this module only draws them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.io import atomic_write_bytes, provenance, read_json
from scalelab.report.document import Report


def heads_figure(result: dict[str, Any], title: str = "") -> Figure:
    """Two heat maps (rows: layers, columns: heads): induction and previous-token scores."""
    ind = np.asarray(result["induction"])
    prev = np.asarray(result["previous_token"])
    n_layer, n_head = ind.shape
    height = min(9.0, 1.6 + 0.28 * n_layer)
    width = min(12.0, 3.0 + 0.5 * n_head) * 2
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, data, name in zip(
        axes, (ind, prev), ("induction score", "previous-token score"), strict=True
    ):
        im = ax.imshow(data, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto", origin="lower")
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(name)
        ax.set_xticks(range(n_head))
        ax.set_yticks(range(n_layer) if n_layer <= 16 else range(0, n_layer, 2))
        best = np.unravel_index(np.argmax(data), data.shape)
        ax.text(best[1], best[0], f"{data[best]:.2f}", ha="center", va="center", color="w")
    fig.colorbar(im, ax=axes, shrink=0.9, label="mean attention")
    if title:
        fig.suptitle(title)
    return fig


def write_heads_report(result: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """report.html + report.md for one `induction heads` result."""
    name = Path(result["model"].get("path", "model")).name
    report = Report(f"scalelab induction heads: {name}")
    report.paragraph(
        f"Repeated random tokens: {result['n_sequences']} sequences, two copies of "
        f"{result['half_len']} tokens" + (" after BOS" if result["bos"] else "") + ". "
        "Induction score: mean attention from a second-copy token to the token after its "
        "previous occurrence; previous-token score: mean attention to the token before."
    )
    report.figure(heads_figure(result, name), "Head scores (rows: layers, columns: heads).")
    report.table(result["top_induction"], "Top induction heads")
    report.table(result["top_previous_token"], "Top previous-token heads")
    if "icl_score" in result:
        keys = (
            "icl_score",
            "icl_score_se",
            "loss_early_nats",
            "loss_late_nats",
            "icl_early",
            "icl_late",
        )
        report.table([{k: result[k] for k in (*keys, "icl_windows")}], "In-context learning")
    report.heading("Configuration and provenance")
    report.json({"model": result["model"], "config": result["config"]})
    report.json(result.get("provenance", provenance()))
    return report.write(out_dir)


def write_depth_figure(summary: dict[str, Any], out: str | Path) -> Path:
    """Draw `compare_depth`'s curves into `out/depth.png`."""
    buf = io.BytesIO()
    depth_figure(summary["curves"], summary["threshold"]).savefig(buf, format="png", dpi=90)
    path = Path(out) / "depth.png"
    atomic_write_bytes(path, buf.getvalue())
    return path


def depth_figure(curves: dict[str, list[dict[str, Any]]], threshold: float) -> Figure:
    """Max induction score (solid) and max previous-token score (dashed) over heads, and the
    ICL score, against training step; one colour per model."""
    fig = Figure(figsize=(10.0, 3.8), layout="constrained")
    ax_ind, ax_icl = fig.subplots(1, 2)
    for i, (label, rows) in enumerate(curves.items()):
        steps = [r["step"] for r in rows]
        color = f"C{i}"
        ax_ind.plot(
            steps,
            [r["induction_max"] for r in rows],
            "o-",
            ms=3,
            color=color,
            label=f"{label}: induction",
        )
        ax_ind.plot(
            steps,
            [r["previous_token_max"] for r in rows],
            "--",
            color=color,
            label=f"{label}: previous token",
        )
        ax_icl.plot(steps, [r["icl_score"] for r in rows], "o-", ms=3, color=color, label=label)
    ax_ind.axhline(threshold, color="0.5", ls=":", label=f"threshold {threshold}")
    ax_ind.set(xlabel="training step", ylabel="max score over heads", ylim=(0, 1))
    ax_icl.axhline(0.0, color="0.5", ls=":")
    ax_icl.set(xlabel="training step", ylabel="ICL score (nats; late − early loss)")
    ax_ind.legend(fontsize=7)
    ax_icl.legend(fontsize=7)
    return fig


def draw(analysis: None, report: Report, sweep_dir: Path) -> None:
    """The report section of a compare-depth folder (`sweep.json` kind "depth"; reads its
    depth.json, the kind has no analysis)."""
    summary = read_json(sweep_dir / "depth.json")
    report.paragraph(
        "One-layer and two-layer GPTs of (nearly) equal parameter count trained on the same "
        "token store; at every evaluation the max induction score over heads and the "
        "in-context-learning score are measured."
    )
    report.figure(depth_figure(summary["curves"], summary["threshold"]), "Training curves")
    report.table(summary["models"], "Models and when an induction head formed")
