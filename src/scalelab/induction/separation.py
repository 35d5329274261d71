"""One figure's data: accuracy on INDEX hard instances against h·m·p / n, for one-layer
models (the gather construction and trained models) and two-layer models (the hand-set
construction and trained models), every model evaluated with p-bit rounding.

What is proven and what is measured:

- Proven (Theorem 1 and the standard distributional bound for INDEX): Alice's message for a
  one-layer model is about C·h·m·p bits (C ≈ 4 at leading order with fixed point: h(m + 1)
  numbers of 3p fractional and p + 1 integer/sign bits). A one-way protocol of M bits
  answers uniformly random INDEX instances of size k with accuracy a only if
  (1 − H₂(1 − a))·k ≤ M (H₂ the binary entropy). With k = (n − 1)/2 this gives the ceiling
  `index_ceiling`; below h·m·p/n = (n − 1)/(2Cn) ≈ 1/8 no one-layer model is exact.
- Measured: every accuracy in the table (the constructions' exactness is also proven by
  their design; the tests check it).

Rows: kind (construction / trained), n_layer, n, h, m, p, hmp_over_n, acc_hard.
`run_separation` computes them into a folder (`separation-config.json`, `separation.csv`,
`separation.json`, trained runs under `runs/`); `separation_figure` draws them
(`separation.png`), also for `trained_separation`; `EXPERIMENT` is the command's record.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.induction.config import MODES, InductionConfig, InductionTrainConfig
from scalelab.induction.construction import CircleConstants, two_layer_construction
from scalelab.induction.one_layer import GatherLayout, one_layer_construction
from scalelab.induction.precision import Precision
from scalelab.induction.protocol import MESSAGE_BITS_PER_HMP
from scalelab.induction.task import hard_instances
from scalelab.induction.train import load_induction_model, train_induction
from scalelab.io import atomic_write_json, atomic_write_text, provenance, read_json
from scalelab.runs import outdir
from scalelab.runs.experiment import Experiment, Table, save_figure, saved_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONFIG = "separation-config.json"  # a separation folder's marker and saved config


def binary_entropy(q: np.ndarray) -> np.ndarray:
    q = np.clip(q, 1e-12, 1 - 1e-12)
    return -(q * np.log2(q) + (1 - q) * np.log2(1 - q))


def index_ceiling(x: np.ndarray, n: int, c: float = MESSAGE_BITS_PER_HMP) -> np.ndarray:
    """Highest hard-instance accuracy a one-layer model with h·m·p = x·n can have, if its
    protocol message is c·h·m·p bits: the largest a with (1 − H₂(1 − a))·k ≤ c·x·n."""
    k = (n - 1) / 2
    ratio = np.minimum(1.0, c * np.asarray(x, dtype=float) * n / k)
    grid = np.linspace(0.5, 1.0, 2001)
    need = 1.0 - binary_entropy(1.0 - grid)  # bits per INDEX bit for accuracy `grid`
    return np.array([grid[need <= r].max() for r in np.atleast_1d(ratio)])


@dataclasses.dataclass(frozen=True)
class SeparationConfig(Config):
    """The grid of the figure. Trained models: hard-only data for one layer (with an MLP so
    the read-out can be nonlinear), the usual mixture for two layers; straight-through
    rounding to `train_bits` while training, evaluated at the same p."""

    mode: str = option("fixed", "Rounding: fixed (the paper's appendix) | float.")
    gather_ns: tuple[int, ...] = option(
        (17, 65, 257), "Lengths n of the one-layer gather construction."
    )
    two_layer_ns: tuple[int, ...] = option(
        (65, 257, 1025, 4097), "Lengths n of the two-layer construction."
    )
    one_layer_ns: tuple[int, ...] = option(
        (9, 17, 33, 65), "Lengths n of the trained one-layer models."
    )
    one_layer_widths: tuple[int, ...] = option(
        (4, 16, 64), "Widths m of the trained one-layer models."
    )
    one_layer_bits: int = option(4, "Precision p of the trained one-layer models.")
    two_layer_ns_trained: tuple[int, ...] = option(
        (17, 65), "Lengths n of the trained two-layer models."
    )
    two_layer_width: int = option(32, "Width of the trained two-layer models.")
    two_layer_bits: int = option(8, "Precision p of the trained two-layer models.")
    steps: int = option(1500, "Training step cap per trained model.")
    eval_instances: int = option(512, "Hard instances each accuracy is measured on.")
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("one_layer_bits", "two_layer_bits", "steps", "eval_instances"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1")
        ns = (*self.gather_ns, *self.two_layer_ns, *self.one_layer_ns, *self.two_layer_ns_trained)
        if any(n < 3 for n in ns):
            raise ConfigError("every n must be >= 3 (hard instances need n = 2k + 1 >= 3)")

    def quick(self) -> SeparationConfig:
        """A small grid of the same kinds of rows (seconds; for trying it out)."""
        return self.replace(
            gather_ns=(17,),
            two_layer_ns=(65,),
            one_layer_ns=(9,),
            one_layer_widths=(4,),
            two_layer_ns_trained=(),
            eval_instances=64,
        )


def acc_hard(model: Any, n: int, precision: Precision, count: int, seed: int) -> float:
    """Last-position accuracy on `count` INDEX hard instances of length n."""
    inst = hard_instances(count, n, np.random.default_rng([seed, n, 7]))
    correct = 0
    for start in range(0, count, 8):
        x = torch.from_numpy(inst.seqs[start : start + 8])
        pred = model.predict(x, precision)[:, -1].numpy()
        correct += int((pred == inst.answers[start : start + 8]).sum())
    return correct / count


def _row(kind: str, layers: int, n: int, h: int, m: int, p: int, acc: float) -> dict[str, Any]:
    return {
        "kind": kind,
        "n_layer": layers,
        "n": n,
        "h": h,
        "m": m,
        "p": p,
        "hmp_over_n": h * m * p / n,
        "acc_hard": acc,
    }


def gather_rows(cfg: SeparationConfig) -> list[dict[str, Any]]:
    """The one-layer construction built for its least p, evaluated at p and at fewer bits."""
    rows = []
    for n in cfg.gather_ns:
        p_build = GatherLayout.least_bits(n, 3, cfg.mode)
        model = one_layer_construction(3, n, p_build, cfg.mode)
        for p in range(1, p_build + 1):
            acc = acc_hard(model, n, Precision(p, cfg.mode), cfg.eval_instances, cfg.seed)
            rows.append(_row("construction", 1, n, 1, model.layout.width, p, acc))
    return rows


def two_layer_rows(cfg: SeparationConfig) -> list[dict[str, Any]]:
    """The constant-width two-layer construction at the smallest p at which every hard
    instance checked is right (from one bit under `CircleConstants.predicted_bits`: down
    while exact, then up); h counts heads per layer (1)."""
    rows = []
    count = min(cfg.eval_instances, 128)  # T² attention at n = 4097: keep the scan cheap
    for n in cfg.two_layer_ns:
        model = two_layer_construction(3, n)

        def exact(p: int, model=model, n=n) -> bool:
            return acc_hard(model, n, Precision(p, cfg.mode), count, cfg.seed) == 1

        p = max(1, CircleConstants.for_task(n, 3).predicted_bits - 1)
        while p > 1 and exact(p - 1):
            p -= 1
        while not exact(p):
            p += 1
        rows.append(_row("construction", 2, n, 1, model.cfg.n_embd, p, 1.0))
        rows[-1]["instances"] = count
    return rows


def train_or_reuse(
    run: Path, layers: int, n: int, h: int, m: int, p: int, *, seed: int, steps: int, mode: str
) -> tuple[Any, dict[str, Any]]:
    """Train (or read back from `run`) one model of the separation's recipe: one layer with an
    MLP on hard instances only, two layers attention-only on the mixture; p-bit training."""
    if (run / "result.json").is_file():
        return load_induction_model(run), read_json(run / "result.json")
    mcfg = InductionConfig(
        alphabet_size=3, max_len=n, n_layer=layers, n_head=h, n_embd=m, mlp=layers == 1
    )
    tcfg = InductionTrainConfig(
        n=n,
        seed=seed,
        max_steps=steps,
        hard_fraction=1.0 if layers == 1 else 0.25,
        train_bits=p,
        precision_mode=mode,
        target_acc=0.99,
    )
    return train_induction(mcfg, tcfg, run)


def trained_rows(cfg: SeparationConfig, out: Path) -> list[dict[str, Any]]:
    """Train (or reuse from `out/runs`) every model of the grid; evaluate at its p."""
    specs = [
        (1, n, 1, m, cfg.one_layer_bits) for n in cfg.one_layer_ns for m in cfg.one_layer_widths
    ]
    specs += [(2, n, 2, cfg.two_layer_width, cfg.two_layer_bits) for n in cfg.two_layer_ns_trained]
    rows = []
    for layers, n, h, m, p in specs:
        run = out / "runs" / f"L{layers}_n{n}_h{h}_m{m}_p{p}"
        model, _ = train_or_reuse(run, layers, n, h, m, p, seed=cfg.seed, steps=cfg.steps,
                                  mode=cfg.mode)  # fmt: skip
        acc = acc_hard(model.double(), n, Precision(p, cfg.mode), cfg.eval_instances, cfg.seed)
        rows.append(_row("trained", layers, n, h, m, p, acc))
        rows[-1]["steps"] = read_json(run / "result.json")["steps"]
    return rows


def separation_table(cfg: SeparationConfig, out: str | Path) -> list[dict[str, Any]]:
    """All rows of the figure; trained runs are kept under `out/runs` and reused."""
    out = Path(out)
    return [*gather_rows(cfg), *two_layer_rows(cfg), *trained_rows(cfg, out)]


def run_separation(cfg: SeparationConfig, out: str | Path) -> list[dict[str, Any]]:
    """Every row of the figure into the folder `out`: `separation.csv` and `separation.json`
    (rows, config, provenance). A folder made with another config is refused; one made with
    this config is resumed (trained runs reused). The folder's lock is held until return."""
    import pandas as pd

    out = Path(out)
    with outdir.claimed(out, CONFIG, cfg.to_dict()):
        rows = separation_table(cfg, out)
        atomic_write_text(out / "separation.csv", pd.DataFrame(rows).to_csv(index=False))
        doc = {"config": cfg.to_dict(), "rows": rows, "provenance": provenance()}
        atomic_write_json(out / "separation.json", doc)
    return rows


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
    from matplotlib.figure import Figure

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


def write_separation_figure(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Draw `run_separation`'s rows into `out/separation.png`."""
    return save_figure(separation_figure(rows), Path(out) / "separation.png")


def separation_tables(rows: list[dict[str, Any]], cfg: SeparationConfig, out: Path) -> list[Table]:
    """The command's table: every row, its size and accuracy."""
    keys = ("kind", "n_layer", "n", "h", "m", "p", "hmp_over_n", "acc_hard")
    return [(f"separation ({cfg.mode} point)", [{k: r[k] for k in keys} for r in rows])]


EXPERIMENT = Experiment(
    config=SeparationConfig,
    run=run_separation,
    draw=write_separation_figure,
    tables=separation_tables,
    out_help="Folder for separation.csv/.png and trained runs.",
    quick="a small grid of the same kinds of rows (seconds; for trying it out)",
    load=saved_json("separation.json", "rows"),
)
