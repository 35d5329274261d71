"""Trained one-layer models where the lower bound applies: h = 1, small width m, and
straight-through p-bit rounding while training, so that the protocol's message
(`protocol.message_bits` = 4·h·m·p bits) is shorter than the k = (n − 1)/2 bits INDEX needs
at the larger n. Beside each, the two-layer model of the same h and m at
p = 2·⌈log2 n⌉ + 1 bits, which the bound does not constrain.

Rows: n_layer, n, h, m, p, message_bits (one-layer rows also `protocol_bits`, the longest
message `protocol.run_protocol` actually sent on 64 hard instances), message_over_n,
acc_hard (last position of `eval_instances` hard instances, evaluated at the training p),
steps. The proven ceiling (`separation.index_ceiling`) is drawn against message/n.
`run_bound_trained` writes `bound.csv` and `bound.json`; runs are kept under `out/runs`.
`bound_figure` draws them (`bound.png`); `EXPERIMENT` is the command's record.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.induction.config import MODES
from scalelab.induction.precision import Precision
from scalelab.induction.protocol import MESSAGE_BITS_PER_HMP, message_bits, run_protocol
from scalelab.induction.separation import acc_hard, index_ceiling, train_or_reuse
from scalelab.induction.task import hard_instances
from scalelab.io import atomic_write_json, atomic_write_text, provenance
from scalelab.runs import outdir
from scalelab.runs.experiment import Experiment, Table, save_figure, saved_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONFIG = "bound-config.json"


@dataclasses.dataclass(frozen=True)
class BoundTrainedConfig(Config):
    """The grid: lengths, widths, the one-layer training precision and the step cap."""

    ns: tuple[int, ...] = option((17, 33, 65, 129, 257), "Sequence lengths n.")
    widths: tuple[int, ...] = option((2, 4, 8), "Widths m (h = 1).")
    bits: int = option(3, "One-layer training and evaluation precision p.")
    mode: str = option("fixed", "Rounding: fixed (the paper's appendix) | float.")
    steps: int = option(1500, "Training step cap per model.")
    eval_instances: int = option(512, "Hard instances each accuracy is measured on.")
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        if not self.ns or min(self.ns) < 3:
            raise ConfigError("ns must be non-empty with every n >= 3")
        if not self.widths or min(self.widths) < 1:
            raise ConfigError("widths must be non-empty and positive")
        if self.bits < 1 or self.steps < 1 or self.eval_instances < 1:
            raise ConfigError("bits, steps and eval_instances must be >= 1")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {self.mode!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in super().to_dict().items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BoundTrainedConfig:
        fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return super().from_dict(fixed)


def two_layer_bits(n: int) -> int:
    """The two-layer models' precision, 2·⌈log2 n⌉ + 1 bits."""
    return 2 * math.ceil(math.log2(n)) + 1


def _train(cfg: BoundTrainedConfig, out: Path, layers: int, n: int, m: int, p: int) -> Any:
    """Train (or reuse) one model of the separation's recipe with one head."""
    run = out / "runs" / f"L{layers}_n{n}_m{m}_p{p}"
    return train_or_reuse(run, layers, n, 1, m, p, seed=cfg.seed, steps=cfg.steps, mode=cfg.mode)


def bound_rows(cfg: BoundTrainedConfig, out: str | Path) -> list[dict[str, Any]]:
    out = Path(out)
    rows = []
    for n in cfg.ns:
        for m in cfg.widths:
            for layers, p in ((1, cfg.bits), (2, two_layer_bits(n))):
                model, result = _train(cfg, out, layers, n, m, p)
                model = model.double()
                acc = acc_hard(model, n, Precision(p, cfg.mode), cfg.eval_instances, cfg.seed)
                msg = message_bits(1, m, p)
                row = {"n_layer": layers, "n": n, "h": 1, "m": m, "p": p, "message_bits": msg}
                row.update(message_over_n=msg / n, k=(n - 1) // 2, acc_hard=acc)
                row.update(steps=result["steps"], cpu_time_s=result["cpu_time_s"])
                if layers == 1:
                    inst = hard_instances(64, n, np.random.default_rng([cfg.seed, n, 11]))
                    row["protocol_bits"] = run_protocol(model, inst, p, cfg.mode).message_bits
                rows.append(row)
    return rows


def run_bound_trained(cfg: BoundTrainedConfig, out: str | Path) -> list[dict[str, Any]]:
    """Every row into `out` (`bound.csv`, `bound.json`); resumable (finished runs reused);
    a folder made with another config is refused. Holds the folder's lock until return."""
    import pandas as pd

    out = Path(out)
    with outdir.claimed(out, CONFIG, cfg.to_dict()):
        rows = bound_rows(cfg, out)
        atomic_write_text(out / "bound.csv", pd.DataFrame(rows).to_csv(index=False))
        doc = {"config": cfg.to_dict(), "rows": rows, "provenance": provenance()}
        atomic_write_json(out / "bound.json", doc)
    return rows


def bound_figure(rows: list[dict[str, Any]]) -> Figure:
    """Trained models' hard-instance accuracy against (protocol message bits) / n: one
    layer (h = 1, p-bit straight-through training) by width, two layers at the same h, m
    and p = 2·⌈log2 n⌉ + 1; the proven one-layer ceiling from INDEX drawn for the
    smallest and largest n (k = (n − 1)/2 bits must cross the message)."""
    from matplotlib.figure import Figure

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
    return save_figure(bound_figure(rows), Path(out) / "bound.png")


def bound_tables(rows: list[dict[str, Any]], cfg: BoundTrainedConfig, out: Path) -> list[Table]:
    """The command's table: each model's size, message and accuracy."""
    keys = ("n_layer", "n", "m", "p", "message_bits", "k", "acc_hard", "steps")
    return [("trained models against the bound", [{k: r[k] for k in keys} for r in rows])]


EXPERIMENT = Experiment(
    config=BoundTrainedConfig,
    run=run_bound_trained,
    draw=write_bound_figure,
    tables=bound_tables,
    out_help="Folder for bound.csv/.json/.png and trained runs.",
    load=saved_json("bound.json", "rows"),
)
