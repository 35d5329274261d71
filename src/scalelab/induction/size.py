"""How big each solution must be, against n: the data of the h·m·p-vs-n figure.

Three kinds of row, for alphabets |Σ| ∈ {3, √n, n} (the `alphabets` rule):

- ``two-layer``: the constant-width construction (`induction.construction`), h = 1 head per
  layer, m = 12, and p the smallest precision (p significant bits by default) at which it
  was exact on every position of the checked instances (which it must also be at full
  float64 precision, or the row is refused). Measured.
- ``gather``: the one-layer gather construction (`induction.one_layer`) at the p that
  minimises its h·m·p; h·m·p ≈ n·⌈log2|Σ|⌉. Computed from its layout; checked exact on hard
  instances for n ≤ `gather_check_up_to` (its decoder holds an n × n table per sequence).
- ``bound``: the h·m·p below which no one-layer model is exact, k·log2(|Σ| − 1)/C with
  C = `protocol.MESSAGE_BITS_PER_HMP` (|Σ| = 3: the paper's Theorem 1 with the constant of
  the protocol run here; larger |Σ|: scalelab's extension, docs/induction.md). Proven.

`run_size` writes `size.csv` and `size.json` (rows, config, provenance) into a folder;
`size_figure` draws them (`size.png`); `EXPERIMENT` is the command's record.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.induction.config import MODES
from scalelab.induction.construction import CircleConstants, smallest_exact_bits
from scalelab.induction.one_layer import GatherLayout, one_layer_construction
from scalelab.induction.precision import Precision
from scalelab.induction.protocol import least_one_layer_hmp
from scalelab.induction.task import hard_instances
from scalelab.io import atomic_write_json, atomic_write_text, provenance
from scalelab.runs import outdir
from scalelab.runs.experiment import Experiment, Table, save_figure, saved_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONFIG = "size-config.json"
ALPHABETS = ("3", "sqrt", "n")


def alphabet_for(rule: str, n: int) -> int:
    """|Σ| for the rule "3", "sqrt" (⌊√n⌋, at least 3) or "n"."""
    if rule == "3":
        return 3
    if rule == "sqrt":
        return max(3, math.isqrt(n))
    if rule == "n":
        return n
    raise ConfigError(f"unknown alphabet rule {rule!r}; use one of {ALPHABETS}")


@dataclass(frozen=True)
class SizeConfig(Config):
    """The n grid, the alphabet rules, instances checked per (n, |Σ|) and the rounding:
    up to `n_random` uniform and `n_hard` hard instances each, fewer at large n so that at
    most `positions` positions are checked per precision (CPU time grows like n²)."""

    ns: tuple[int, ...] = option((16, 64, 256, 1024, 4096, 16384), "Sequence lengths n.")
    alphabets: tuple[str, ...] = option(ALPHABETS, "Alphabet rules: 3, sqrt, n.")
    n_random: int = option(64, "Uniform instances checked per (n, |Σ|).")
    n_hard: int = option(64, "Hard instances checked per (n, |Σ|).")
    positions: int = option(
        2**17, "Most positions checked per precision (fewer instances at large n)."
    )
    mode: str = option("float", "Rounding: float (p significant bits) | fixed.")
    gather_check_up_to: int = option(1024, "Check the gather construction up to this n.")
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        if not self.ns or min(self.ns) < 4:
            raise ConfigError("ns must be non-empty with every n >= 4")
        for rule in self.alphabets:
            alphabet_for(rule, 16)
        if self.n_random < 1 or self.n_hard < 1 or self.positions < 2:
            raise ConfigError("check at least one instance of each kind, and positions >= 2")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {self.mode!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in super().to_dict().items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SizeConfig:
        return super().from_dict(
            {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        )


def two_layer_row(n: int, s: int, cfg: SizeConfig) -> dict[str, Any]:
    """The constant-width construction at (n, |Σ|): its least exact p, beside the
    predicted p (`CircleConstants.predicted_bits`)."""
    t0 = time.perf_counter()
    each = max(1, min(cfg.n_random, cfg.n_hard, cfg.positions // (2 * n)))
    consts = CircleConstants.for_task(n, s)
    # the scan starts just under the prediction and steps down while exact, so the guess
    # changes the cost, not the answer
    scan = smallest_exact_bits(  # refuses if not exact at full float64 precision
        n, s, cfg.mode, each, each, cfg.seed, start_bits=max(1, consts.predicted_bits - 1)
    )
    p = scan["smallest_exact_bits"]
    return {
        "kind": "two-layer",
        "n": n,
        "alphabet_size": s,
        "h": 1,
        "m": scan["width"],
        "p": p,
        "hmp": None if p is None else scan["width"] * p,
        "p_predicted": consts.predicted_bits,
        "exact_up_to": scan.get("exact_up_to"),
        "instances": 2 * each,
        "positions": 2 * each * n,
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def gather_row(n: int, s: int, cfg: SizeConfig) -> dict[str, Any]:
    """The gather construction at the p minimising h·m·p (p from its least to 52 bits: its
    float64 arithmetic holds integers exactly only below 2^53)."""
    least = GatherLayout.least_bits(n, s, cfg.mode)
    best = min((GatherLayout(n, s, p, cfg.mode) for p in range(least, 53)), key=lambda lay: lay.hmp)
    row = {"kind": "gather", "n": n, "alphabet_size": s, "h": 1, "m": best.width, "p": best.bits}
    row.update(hmp=best.hmp, hmp_over_n_log2s=best.hmp / (n * best.digit_bits))
    if n <= cfg.gather_check_up_to and s >= 3:
        model = one_layer_construction(s, n, best.bits, cfg.mode)
        inst = hard_instances(cfg.n_hard, n, np.random.default_rng([cfg.seed, n]), s)
        pred = model.predict(torch.from_numpy(inst.seqs), Precision(best.bits, cfg.mode))
        row["wrong_hard"] = int((pred[:, -1].numpy() != inst.answers).sum())
    return row


def bound_row(n: int, s: int) -> dict[str, Any]:
    """The proven least h·m·p of an exact one-layer model (see the module doc)."""
    return {"kind": "bound", "n": n, "alphabet_size": s, "hmp": least_one_layer_hmp(n, s)}


def size_table(cfg: SizeConfig) -> list[dict[str, Any]]:
    """Rows for every n and alphabet rule (a rule giving an |Σ| already done at n is skipped)."""
    rows = []
    for n in cfg.ns:
        done: set[int] = set()
        for rule in cfg.alphabets:
            s = alphabet_for(rule, n)
            if s in done:
                continue
            done.add(s)
            for row in (two_layer_row(n, s, cfg), gather_row(n, s, cfg), bound_row(n, s)):
                rows.append({**row, "alphabet_rule": rule})
    return rows


def run_size(cfg: SizeConfig, out: str | Path) -> list[dict[str, Any]]:
    """Every row into the folder `out` (`size.csv`, `size.json`); a folder made with another
    config is refused. Holds the folder's lock until it returns."""
    import pandas as pd

    out = Path(out)
    with outdir.claimed(out, CONFIG, cfg.to_dict()):
        rows = size_table(cfg)
        atomic_write_text(out / "size.csv", pd.DataFrame(rows).to_csv(index=False))
        doc = {"config": cfg.to_dict(), "rows": rows, "provenance": provenance()}
        atomic_write_json(out / "size.json", doc)
    return rows


RULE_LABEL = {"3": "|Σ| = 3", "sqrt": "|Σ| = √n", "n": "|Σ| = n"}


def size_figure(rows: list[dict[str, Any]]) -> Figure:
    """h·m·p against n (log–log): the constant-width two-layer construction at its least
    exact p (solid), the one-layer gather construction (dashed) and the one-layer lower
    bound (dotted, shaded below for |Σ| = n), one colour per alphabet rule."""
    from matplotlib.figure import Figure

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
    return save_figure(size_figure(rows), Path(out) / "size.png")


def size_tables(rows: list[dict[str, Any]], cfg: SizeConfig, out: Path) -> list[Table]:
    """The command's table: each solution's size at each n."""
    keys = ("kind", "n", "alphabet_size", "m", "p", "hmp")
    return [("h·m·p against n", [{k: r.get(k) for k in keys} for r in rows])]


EXPERIMENT = Experiment(
    config=SizeConfig,
    run=run_size,
    draw=write_size_figure,
    tables=size_tables,
    out_help="Folder for size.csv/.json and size.png.",
    load=saved_json("size.json", "rows"),
)
