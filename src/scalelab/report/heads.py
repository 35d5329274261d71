"""The figure and report page of `scalelab induction heads`: heads × layers heat maps of a
language model's induction and previous-token scores. The measurement itself is
`scalelab.probe.heads.run_heads`; this module only draws it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.io import provenance
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
