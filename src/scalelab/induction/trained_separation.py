"""The depth separation in trained models, at one (h, m, p) and one n where the bound
forbids every one-layer model: two-layer models trained by gradient descent against
one-layer models of the same h, m and p, same data, method and step budget.

The size is fixed first (`plan`): Alice's message for a one-layer model is
`protocol.message_bits(h, m, p)` = 4·h·m·p bits, INDEX on hard instances of length n needs
k = (n − 1)/2, and `separation.index_ceiling` turns the shortfall into the highest accuracy
any one-layer model of that size can have. The defaults (h = 1, m = 16, p = 25 fixed-point
bits, n = 4,097) send 1,600 bits against k = 2,048: ceiling 0.966.

Method (declared; the same for both depths): relative positions (`model`, a learned bias
per distance up to `rel_distances`, one shared beyond), so the model of one size trained at
short lengths runs unchanged at n; lengths drawn per step uniformly from
[min_train_n, train_n]; the task mixture over `alphabet_size` symbols with `hard_fraction`
INDEX rows whose answer (1 of a row's positions) gets `last_weight` extra loss weight;
straight-through rounding to p bits while training. One layer gets an MLP (its read-out may
then be nonlinear, which only helps it), two layers are attention-only. Evaluated at n and
p on the same `eval_instances` hard instances for both depths (a paired comparison), and
`run_protocol` on the one-layer models at n.

`run_trained_separation` writes the rows into a folder, `write_trained_separation_figure`
draws them (`trained_separation.png`); `EXPERIMENT` is the command's record.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.induction.config import MODES, InductionConfig, InductionTrainConfig
from scalelab.induction.precision import Precision
from scalelab.induction.protocol import index_bits, message_bits, run_protocol
from scalelab.induction.separation import (
    SeparationConfig,
    gather_rows,
    index_ceiling,
    separation_figure,
    two_layer_rows,
)
from scalelab.induction.task import hard_instances
from scalelab.induction.train import load_induction_model, train_induction
from scalelab.io import atomic_write_json, atomic_write_text, provenance, read_json
from scalelab.progress import progress
from scalelab.runs import outdir
from scalelab.runs.experiment import Experiment, Table, save_figure, saved_json

CONFIG = "trained-separation-config.json"


@dataclasses.dataclass(frozen=True)
class TrainedSeparationConfig(Config):
    """One size (h, m, p) and target length n; the shared training method; seeds."""

    n: int = option(4097, "Target length n (where the models are tested).")
    n_head: int = option(1, "Heads h (both depths).")
    n_embd: int = option(16, "Width m (both depths).", flag="--width")
    bits: int = option(25, "Precision p (training and test, both depths).")
    mode: str = option("fixed", "Rounding: fixed (the paper's appendix) | float.")
    alphabet_size: int = option(8, "Alphabet size.")
    rel_distances: int = option(16, "Relative distances the position bias covers.")
    rel_scale: float = option(16.0, "Multiplier of the position bias.")
    train_n: int = option(257, "Longest training length.")
    min_train_n: int = option(33, "Shortest training length.")
    max_steps: int = option(1500, "Training steps per model.", flag="--steps")
    batch_size: int = option(64, "Sequences per step.")
    lr: float = option(3e-3, "Peak learning rate.")
    hard_fraction: float = option(0.5, "Share of INDEX rows in training.")
    last_weight: float = option(1.0, "Extra loss weight on their answer.")
    seeds: tuple[int, ...] = option((0, 1, 2), "Seeds (comma-separated).")
    eval_instances: int = option(512, "Hard instances each accuracy is measured on.")
    protocol_instances: int = option(64, "Instances the communication protocol is checked on.")
    gather_ns: tuple[int, ...] = option(
        (17, 65, 257), "Lengths n of the one-layer gather construction shown beside."
    )

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 3 <= self.min_train_n <= self.train_n <= self.n:
            raise ConfigError(
                f"need 3 <= min_train_n <= train_n <= n, got {self.min_train_n}, "
                f"{self.train_n}, {self.n}; change the one out of order"
            )
        for name in ("n_head", "n_embd", "bits", "max_steps", "batch_size", "eval_instances"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.seeds:
            raise ConfigError("seeds must name at least one seed, e.g. --seeds 0,1,2")
        if not 0.0 < self.hard_fraction <= 1.0 or self.last_weight < 0 or self.rel_scale <= 0:
            raise ConfigError(
                f"need 0 < hard_fraction <= 1, last_weight >= 0 and rel_scale > 0, got "
                f"{self.hard_fraction}, {self.last_weight}, {self.rel_scale}"
            )
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in super().to_dict().items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainedSeparationConfig:
        fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return super().from_dict(fixed)

    def quick(self) -> TrainedSeparationConfig:
        """A small version (seconds): n = 33 trained at 9 … 17, 600 steps, one seed; the
        bound does not bite there (message 4·16·11 bits > k = 16)."""
        return self.replace(
            n=33, bits=11, train_n=17, min_train_n=9, max_steps=600, batch_size=32, lr=1e-2,
            rel_distances=4, seeds=(0,), eval_instances=128, protocol_instances=16,
            gather_ns=(9,),
        )  # fmt: skip


def plan(cfg: TrainedSeparationConfig) -> dict[str, Any]:
    """The size and what the bound says about it, before any training."""
    msg = message_bits(cfg.n_head, cfg.n_embd // cfg.n_head, cfg.bits)
    k = index_bits(cfg.n)
    hmp = cfg.n_head * cfg.n_embd * cfg.bits
    return {
        "n": cfg.n,
        "h": cfg.n_head,
        "m": cfg.n_embd,
        "p": cfg.bits,
        "message_bits": msg,
        "k": k,
        "bound_bites": msg < k,
        "one_layer_ceiling": float(index_ceiling(hmp / cfg.n, cfg.n)[0]),
        "hmp_over_n": hmp / cfg.n,
    }


def _configs(
    cfg: TrainedSeparationConfig, layers: int, seed: int
) -> tuple[InductionConfig, InductionTrainConfig]:
    mcfg = InductionConfig(
        alphabet_size=cfg.alphabet_size, max_len=cfg.n, n_layer=layers, n_head=cfg.n_head,
        n_embd=cfg.n_embd, positions="relative", rel_distances=cfg.rel_distances,
        rel_scale=cfg.rel_scale, mlp=layers == 1,
    )  # fmt: skip
    tcfg = InductionTrainConfig(
        n=cfg.train_n, min_n=cfg.min_train_n, seed=seed, max_steps=cfg.max_steps,
        batch_size=cfg.batch_size, lr=cfg.lr, hard_fraction=cfg.hard_fraction,
        last_weight=cfg.last_weight, train_bits=cfg.bits, precision_mode=cfg.mode,
        eval_interval=max(1, cfg.max_steps // 8), eval_samples=256,
    )  # fmt: skip
    return mcfg, tcfg


def hard_correct(model: Any, n: int, precision: Precision, count: int, seed: int) -> np.ndarray:
    """Per instance, whether `model` answers the INDEX question of a hard instance of
    length n; the same instances for every model given the same seed (paired)."""
    inst = hard_instances(count, n, np.random.default_rng([seed, n, 38]))
    out = []
    for start in range(0, count, 8):
        x = torch.from_numpy(inst.seqs[start : start + 8])
        out.append(model.predict(x, precision)[:, -1].numpy() == inst.answers[start : start + 8])
    return np.concatenate(out)


def _train_and_score(
    cfg: TrainedSeparationConfig,
    out: Path,
    layers: int,
    seed: int,
    advance: Callable[..., None],
) -> tuple[dict[str, Any], np.ndarray]:
    """Train (or reuse) one model; its row and per-instance correctness at n. `advance`
    moves the caller's bar by the training steps done."""
    run = out / "runs" / f"L{layers}_seed{seed}"
    if (run / "result.json").is_file():
        model, result = load_induction_model(run), read_json(run / "result.json")
        advance(cfg.max_steps)
    else:
        mcfg, tcfg = _configs(cfg, layers, seed)
        done = [0]

        def on_eval(_: Any) -> dict[str, Any]:
            step = min(done[0] + tcfg.eval_interval, cfg.max_steps)
            advance(step - done[0], info=f"{layers} layer(s), seed {seed}")
            done[0] = step
            return {}

        model, result = train_induction(mcfg, tcfg, run, on_eval=on_eval)
    model = model.double()
    prec = Precision(cfg.bits, cfg.mode)
    correct = hard_correct(model, cfg.n, prec, cfg.eval_instances, seed)
    short = hard_correct(model, cfg.train_n, prec, cfg.eval_instances, seed).mean()
    row = {
        "kind": "trained-relative",
        "n_layer": layers,
        "seed": seed,
        "n": cfg.n,
        "h": cfg.n_head,
        "m": cfg.n_embd,
        "p": cfg.bits,
        "hmp_over_n": cfg.n_head * cfg.n_embd * cfg.bits / cfg.n,
        "acc_hard": float(correct.mean()),
        f"acc_hard_at_train_n_{cfg.train_n}": float(short),
        "steps": result["steps"],
        "cpu_time_s": result["cpu_time_s"],
        "wall_time_s": result["wall_time_s"],
    }
    if layers == 1:
        inst = hard_instances(cfg.protocol_instances, cfg.n, np.random.default_rng([seed, 11]))
        res = run_protocol(model, inst, cfg.bits, cfg.mode)
        row.update(
            protocol_message_bits=res.message_bits,
            protocol_answers_identical=res.answers_identical,
            protocol_bob_acc_hard=res.bob_acc_hard,
            ceiling_from_protocol=float(index_ceiling(res.message_bits / cfg.n, cfg.n, 1.0)[0]),
        )
    return row, correct


def paired_margin(two: np.ndarray, one: np.ndarray) -> dict[str, float]:
    """Mean of (two-layer right) − (one-layer right) over the same instances, with a normal
    95% interval from the per-instance differences."""
    diff = two.astype(float) - one.astype(float)
    half = 1.96 * diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else math.nan
    mean = float(diff.mean())
    return {"margin": mean, "margin_lo": float(mean - half), "margin_hi": float(mean + half)}


def trained_separation_rows(
    cfg: TrainedSeparationConfig, out: str | Path, *, quiet: bool = True
) -> dict[str, Any]:
    """Train every (depth, seed), score them at n, add the constructions' rows."""
    out = Path(out)
    rows, margins = [], []
    total = 2 * len(cfg.seeds) * cfg.max_steps + 1
    with progress("trained separation (steps)", total, quiet=quiet) as advance:
        for seed in cfg.seeds:
            scored = {}
            for layers in (2, 1):
                row, scored[layers] = _train_and_score(cfg, out, layers, seed, advance)
                rows.append(row)
                advance(0, info=f"{layers} layer(s), seed {seed}: acc_hard {row['acc_hard']:.3f}")
            margins.append({"seed": seed, **paired_margin(scored[2], scored[1])})
        sep = SeparationConfig(
            mode=cfg.mode, gather_ns=cfg.gather_ns, two_layer_ns=(cfg.n,), eval_instances=128
        )
        rows += gather_rows(sep) + two_layer_rows(sep)
        advance(info="constructions")
    return {"rows": rows, "margins": margins}


def run_trained_separation(
    cfg: TrainedSeparationConfig, out: str | Path, *, quiet: bool = True
) -> dict[str, Any]:
    """Plan, rows and paired margins into `out` (`trained-separation.csv` and `.json`);
    resumable (finished runs under `out/runs` are reused); a folder made with another config
    is refused. Holds the folder's lock until return."""
    import pandas as pd

    out = Path(out)
    with outdir.claimed(out, CONFIG, cfg.to_dict()):
        doc = {"plan": plan(cfg), **trained_separation_rows(cfg, out, quiet=quiet)}
        doc.update(config=cfg.to_dict(), provenance=provenance())
        atomic_write_text(
            out / "trained-separation.csv", pd.DataFrame(doc["rows"]).to_csv(index=False)
        )
        atomic_write_json(out / "trained-separation.json", doc)
    return doc


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
    return save_figure(fig, Path(out) / "trained_separation.png")


def _before(cfg: TrainedSeparationConfig) -> tuple[str, dict[str, Any]]:
    return "size and bound (before training)", plan(cfg)


def trained_separation_tables(
    doc: dict[str, Any], cfg: TrainedSeparationConfig, out: Path
) -> list[Table]:
    """The command's tables: the trained models at n, then the paired margins."""
    keys = ("n_layer", "seed", "n", "m", "p", "acc_hard", "protocol_message_bits", "steps")
    trained = [r for r in doc["rows"] if r["kind"] == "trained-relative"]
    return [
        ("trained at one size", [{k: r.get(k) for k in keys} for r in trained]),
        ("paired margin (2 layers − 1 layer, 95%)", doc["margins"]),
    ]


def _after(doc: dict[str, Any], out: Path, seconds: float) -> str:
    return f"{seconds:.0f} s wall; figure {out}/trained_separation.png"


EXPERIMENT = Experiment(
    config=TrainedSeparationConfig,
    run=run_trained_separation,
    draw=write_trained_separation_figure,
    tables=trained_separation_tables,
    out_help="Folder for trained-separation.csv/.json/.png and runs.",
    quick="a small version (seconds; for trying it out)",
    quiet=True,
    before=_before,
    after=_after,
    load=saved_json("trained-separation.json"),
)
