"""`scalelab induction compare-depth`, the experiment whole: the depth separation in real
training. A one-layer and a two-layer GPT of equal non-embedding parameter count are trained
on the same token store, with the induction score, previous-token score and in-context-learning
score measured at every evaluation.

A folder made by `compare_depth` holds `runs/L1` and `runs/L2` (ordinary, resumable
`scalelab train` run folders whose metrics.jsonl rows carry the head scores), `depth.json`
(the curves and the step at which an induction head formed), `sweep.json` (kind "depth": the
config a resume must match), `experiment.json` (the marker `scalelab report` reads) and
`depth.png`. `EXPERIMENT` makes it a command and a report section
(`induction.experiments.EXPERIMENTS`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scalelab.config import FLAT, Config, option
from scalelab.errors import ConfigError, InputError
from scalelab.io import atomic_write_json, provenance
from scalelab.probe.heads import HeadScoreConfig, from_gpt, head_scores, icl_score
from scalelab.runs import outdir
from scalelab.runs.experiment import (
    MARKER,
    Experiment,
    Table,
    mark,
    read_marker,
    save_figure,
    saved_json,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The command's name, as `induction.experiments.EXPERIMENTS` lists it.
NAME = "compare-depth"


@dataclasses.dataclass(frozen=True)
class DepthConfig(Config):
    """Two models of equal non-embedding parameters (12·m² per layer): the two-layer one has
    width `n_embd`, the one-layer one ≈ √2·n_embd (a multiple of `n_head`)."""

    block_size: int = option(128, "Context length.")
    n_embd: int = option(64, "Width of the two-layer model (one layer: ≈ √2×).", flag="--width")
    n_head: int = option(4, "Heads per layer.")
    max_steps: int = option(1500, "Training steps per model.", flag="--steps")
    eval_interval: int = option(100, "Steps between evaluations (and scores).")
    batch_size: int = option(16, "Windows per step.")
    lr: float = option(2e-3, "Peak learning rate (cosine to lr/10).")
    seed: int = option(0, "Random seed (recorded with the results).")
    threshold: float = option(0.3, "Induction score that counts as a head formed.")
    n_sequences: int = option(16, "Repeated random sequences per evaluation.", flag="--sequences")
    icl_windows: int = option(32, "Validation windows for the ICL score.")

    def validate(self) -> None:
        for name in (
            "block_size",
            "n_embd",
            "n_head",
            "max_steps",
            "eval_interval",
            "batch_size",
            "n_sequences",
            "icl_windows",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_embd {self.n_embd} must be a multiple of n_head {self.n_head}")
        if self.block_size < 8:
            raise ConfigError("block_size must be >= 8 (two copies of >= 4 tokens)")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"threshold must be in (0, 1), got {self.threshold}")

    @property
    def one_layer_n_embd(self) -> int:
        return self.n_head * max(1, round(math.sqrt(2) * self.n_embd / self.n_head))


@dataclasses.dataclass(frozen=True)
class CompareDepthConfig(Config):
    """The command's config: the token store and the two models' settings. The store is not
    part of `DepthConfig`, which a resumed folder's sweep.json must match."""

    data: str = option("", "Token store (scalelab corpus prepare); required.")
    depth: DepthConfig = dataclasses.field(default_factory=DepthConfig, metadata=FLAT)


def _scorer(cfg: DepthConfig, val_tokens: np.ndarray):
    """The on_eval callback: head scores on repeated random tokens, ICL on validation text.
    It uses its own seeded generator, so training's RNG streams are untouched."""
    from scalelab.probe.sample import TokenDocuments

    docs = TokenDocuments.from_list([np.asarray(val_tokens, dtype=np.int64)])
    score_cfg = HeadScoreConfig(
        half_len=cfg.block_size // 2,
        n_sequences=cfg.n_sequences,
        icl_windows=cfg.icl_windows,
        icl_windows_from="stream",  # the validation stream (with EOT), cut as in training
        seed=cfg.seed,
    )

    def on_eval(model: Any) -> dict[str, Any]:
        scored = from_gpt(model)
        heads = head_scores(scored, score_cfg)
        icl = icl_score(scored, docs, score_cfg)
        ind, prev = np.asarray(heads["induction"]), np.asarray(heads["previous_token"])
        return {
            "induction_max": float(ind.max()),
            "previous_token_max": float(prev.max()),
            "induction": heads["induction"],
            "previous_token": heads["previous_token"],
            "icl_score": icl["icl_score"],
            "icl_score_se": icl["icl_score_se"],
            "loss_early_nats": icl["loss_early_nats"],
            "loss_late_nats": icl["loss_late_nats"],
        }

    return on_eval


def _formed(rows: list[dict[str, Any]], threshold: float) -> int | None:
    """The first evaluated step whose max induction score reaches the threshold."""
    return next((r["step"] for r in rows if r["induction_max"] >= threshold), None)


def compare_depth(
    data_dir: str | Path, out: str | Path, cfg: DepthConfig, *, quiet: bool = False
) -> dict[str, Any]:
    """Train (or resume) both models and write depth.json and sweep.json; the folder is
    locked until return."""
    from scalelab.lm.config import TrainConfig
    from scalelab.text.store import TokenStore

    data_dir, out = Path(data_dir), Path(out)
    if not (data_dir / "meta.json").is_file():
        raise InputError(f"{data_dir} is not a token store; run `scalelab corpus prepare` first")
    outdir.check(out, "sweep.json", cfg.to_dict(), kind="depth")
    vocab = TokenStore(data_dir, "train").vocab_size
    val = TokenStore(data_dir, "val").tokens
    train_cfg = TrainConfig(
        seed=cfg.seed,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        min_lr=cfg.lr / 10,
        warmup_steps=min(100, cfg.max_steps // 10),
        max_steps=cfg.max_steps,
        eval_interval=cfg.eval_interval,
        dtype="float32",
    )
    extra = {"provenance": provenance()}
    with outdir.claimed(out, "sweep.json", cfg.to_dict(), kind="depth", extra=extra):
        models, curves = _train_both(data_dir, out, cfg, train_cfg, vocab, val, quiet)
        summary = {
            "config": cfg.to_dict(),
            "threshold": cfg.threshold,
            "models": models,
            "curves": curves,
            "data_dir": str(data_dir.resolve()),
        }
        atomic_write_json(out / "depth.json", summary)
        mark(out, NAME, CompareDepthConfig(data=str(data_dir), depth=cfg))
    return summary


def run(cfg: CompareDepthConfig, out: Path, *, quiet: bool = False) -> dict[str, Any]:
    """The experiment's run: `compare_depth` on the config's store, refused where the folder
    was trained on another store (its marker says which)."""
    if not cfg.data:
        raise ConfigError(
            "no token store given: give --data STORE (`scalelab corpus prepare` makes one)"
        )
    before = read_marker(out).get("config", {}).get("data") if (out / MARKER).is_file() else None
    if before and Path(before).resolve() != Path(cfg.data).resolve():
        raise ConfigError(
            f"the token store {cfg.data} is not the one {out} was trained on ({before}); give "
            "that store, or a new output folder"
        )
    return compare_depth(cfg.data, out, cfg.depth, quiet=quiet)


def _train_both(
    data_dir: Path,
    out: Path,
    cfg: DepthConfig,
    train_cfg: Any,
    vocab: int,
    val: np.ndarray,
    quiet: bool,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Train (or resume) the two-layer, then the one-layer model: per-model summary rows and
    the metric curves by label."""
    from scalelab.lm.config import GPTConfig
    from scalelab.lm.train import train

    on_eval = _scorer(cfg, val)
    models, curves = [], {}
    for layers, width in ((2, cfg.n_embd), (1, cfg.one_layer_n_embd)):
        model_cfg = GPTConfig(
            vocab_size=vocab,
            block_size=cfg.block_size,
            n_layer=layers,
            n_head=cfg.n_head,
            n_embd=width,
        )
        run = out / "runs" / f"L{layers}"
        result = train(model_cfg, train_cfg, data_dir, run, quiet=quiet, on_eval=on_eval)
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        label = f"{layers} layer{'s' if layers > 1 else ''}, width {width}"
        curves[label] = rows
        models.append(
            {
                "model": label,
                "params_non_embedding": result.params_non_embedding,
                "params": result.params,
                "test_loss_nats": round(result.test_loss_nats, 4),
                "final_induction_max": round(rows[-1]["induction_max"], 3),
                "final_previous_token_max": round(rows[-1]["previous_token_max"], 3),
                "final_icl_score": round(rows[-1]["icl_score"], 4),
                "head_formed_at_step": _formed(rows, cfg.threshold),
                "train_cpu_s": round(result.train_cpu_time_s, 1),
            }
        )
    return models, curves


def depth_figure(curves: dict[str, list[dict[str, Any]]], threshold: float) -> Figure:
    """Max induction score (solid) and max previous-token score (dashed) over heads, and the
    ICL score, against training step; one colour per model."""
    from matplotlib.figure import Figure

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


def write_depth_figure(summary: dict[str, Any], out: str | Path) -> Path:
    """Draw `compare_depth`'s curves into `out/depth.png`."""
    return save_figure(
        depth_figure(summary["curves"], summary["threshold"]), Path(out) / "depth.png"
    )


#: The table's columns: summary key -> heading.
_COLUMNS = {
    "model": "model",
    "params_non_embedding": "N (non-emb.)",
    "test_loss_nats": "test loss",
    "final_induction_max": "induction",
    "final_previous_token_max": "prev-token",
    "final_icl_score": "ICL",
    "head_formed_at_step": "head formed at",
}


def depth_tables(summary: dict[str, Any], cfg: CompareDepthConfig, out: Path) -> list[Table]:
    """The two models' final scores and the step an induction head formed."""
    rows = [{v: m[k] for k, v in _COLUMNS.items()} for m in summary["models"]]
    return [(f"depth comparison in {out} (final scores: max over heads)", rows)]


EXPERIMENT = Experiment(
    config=CompareDepthConfig,
    run=run,
    draw=write_depth_figure,
    tables=depth_tables,
    json=lambda summary: summary["models"],
    out_help="Output folder (resumable: rerun to continue).",
    quiet=True,
    load=saved_json("depth.json"),
)
