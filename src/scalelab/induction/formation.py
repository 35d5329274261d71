"""Induction heads seen forming: attention-only transformers of one and two layers, of
(nearly) equal parameter count, trained on the kit's task mixture, with every head scored
at every evaluation.

Per head and evaluation step, on held-out uniform sequences:

- induction score: the attention from position i to j_i + 1, the token after the rightmost
  earlier occurrence j_i of σ_i (the task's own answer position), averaged over the
  positions that have one;
- previous-token score: the attention from i to i − 1, averaged over i ≥ 2;

plus, from `train.evaluate`, the accuracy on INDEX hard instances (chance 1/2) and the
cross-entropy on held-out uniform sequences. The formation step of a run is the first
evaluation at which some head's induction score reaches `threshold`.

`run_formation` writes one `train_induction` run folder per (depth, seed) under
`out/runs` (metrics.jsonl rows carry the scores; a finished run is reused) and
`formation.json`; `formation_figure` draws it (`formation.png`); `EXPERIMENT` is the
command's record.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.induction.config import InductionConfig, InductionTrainConfig
from scalelab.induction.model import InductionTransformer, loss_fn
from scalelab.induction.task import solve, uniform_instances
from scalelab.induction.train import train_induction
from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.runs import outdir
from scalelab.runs.experiment import Experiment, Table, save_figure, saved_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONFIG = "formation-config.json"


@dataclasses.dataclass(frozen=True)
class FormationConfig(Config):
    """The task, the two-layer model (width `n_embd`, `n_head` heads per layer; the one-layer
    model gets the width that matches its parameter count), training and scoring."""

    n: int = option(32, "Sequence length.")
    alphabet_size: int = option(8, "Alphabet size.")
    n_embd: int = option(32, "Two-layer width (one layer: equal parameters).", flag="--width")
    n_head: int = option(2, "Heads per layer.")
    max_steps: int = option(800, "Training steps per model.")
    eval_interval: int = option(20, "Steps between scorings.")
    batch_size: int = option(64, "Sequences per step.")
    lr: float = option(1e-3, "Peak learning rate.")
    hard_fraction: float = option(0.25, "Share of INDEX hard instances in training.")
    seeds: tuple[int, ...] = option((0, 1, 2), "Seeds (comma-separated).")
    score_samples: int = option(128, "Sequences each head score is measured on.")
    eval_samples: int = option(256, "Instances each accuracy and loss is measured on.")
    threshold: float = option(0.4, "Induction score that marks formation.")

    def validate(self) -> None:
        for name in ("n", "n_embd", "n_head", "max_steps", "eval_interval", "score_samples"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.alphabet_size < 3 or self.n < 3:
            raise ConfigError("the mixture has hard instances: need alphabet_size >= 3, n >= 3")
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_embd {self.n_embd} must be a multiple of n_head {self.n_head}")
        if not self.seeds:
            raise ConfigError("give at least one seed")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"threshold must lie in (0, 1), got {self.threshold}")

    def quick(self) -> FormationConfig:
        """A small version (seconds; for trying it out): one seed, 100 steps, fewer samples
        scored; heads need not form in it."""
        return self.replace(max_steps=100, seeds=(0,), score_samples=32, eval_samples=64)

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in super().to_dict().items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FormationConfig:
        return super().from_dict(
            {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        )

    def model_config(self, layers: int, width: int | None = None) -> InductionConfig:
        """Attention-only (no MLP), LayerNorm, learned positions, BOS."""
        return InductionConfig(
            alphabet_size=self.alphabet_size,
            max_len=self.n,
            n_layer=layers,
            n_head=self.n_head,
            n_embd=width or self.n_embd,
            mlp=False,
        )

    def train_config(self, seed: int) -> InductionTrainConfig:
        """No early stop: every run is scored over the same steps."""
        return InductionTrainConfig(
            n=self.n,
            seed=seed,
            max_steps=self.max_steps,
            batch_size=self.batch_size,
            lr=self.lr,
            hard_fraction=self.hard_fraction,
            eval_interval=self.eval_interval,
            eval_samples=self.eval_samples,
            warmup_steps=min(200, self.max_steps // 10),
        )


def n_params(cfg: InductionConfig) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in InductionTransformer(cfg).parameters())


def matched_width(cfg: FormationConfig) -> int:
    """The one-layer width (a multiple of n_head) whose parameter count is nearest the
    two-layer model's."""
    target = n_params(cfg.model_config(2))
    widths = range(cfg.n_head, 4 * cfg.n_embd + 1, cfg.n_head)
    return min(widths, key=lambda w: abs(n_params(cfg.model_config(1, w)) - target))


def _answer_keys(seqs: np.ndarray) -> np.ndarray:
    """For each position i, j_i + 1 (the position after σ_i's rightmost earlier
    occurrence), or −1 when σ_i has not occurred."""
    n = seqs.shape[1]
    pos = np.arange(n)
    same = (seqs[:, :, None] == seqs[:, None, :]) & (pos[None, :] < pos[:, None])[None]
    last = np.where(same, pos[None, None, :], -1).max(-1)
    return np.where(last >= 0, last + 1, -1)


@torch.no_grad()
def head_scores(model: InductionTransformer, seqs: np.ndarray) -> dict[str, Any]:
    """Induction and previous-token score of every head ([layer][head] lists) on `seqs`."""
    probs = torch.stack(model.attention_probs(torch.from_numpy(seqs)))  # [L, B, H, T, T]
    off = int(model.cfg.bos)
    keys = _answer_keys(seqs)
    b, i = (torch.from_numpy(a) for a in np.nonzero(keys >= 0))
    j = torch.from_numpy(keys)[b, i]
    ind = probs[:, b, :, i + off, j + off].mean(0)  # index dims first: [P, L, H] → [L, H]
    q = torch.arange(2, seqs.shape[1])
    prev = probs[:, :, :, q + off, q - 1 + off].mean((1, 3))  # [L, B, H, Q] → [L, H]
    return {"induction": ind.tolist(), "previous_token": prev.tolist()}


def scorer(cfg: FormationConfig, seed: int):
    """The `on_eval` callback: head scores and held-out loss on fixed uniform sequences."""
    rng = np.random.default_rng([seed, 31])
    seqs = uniform_instances(cfg.score_samples, cfg.n, cfg.alphabet_size, rng)
    target = torch.from_numpy(solve(seqs))

    def on_eval(model: InductionTransformer) -> dict[str, Any]:
        model.eval()
        scores = head_scores(model, seqs)
        with torch.no_grad():
            loss = loss_fn(model(torch.from_numpy(seqs)), target, cfg.alphabet_size)
        ind = np.asarray(scores["induction"])
        return {
            **scores,
            "induction_max": float(ind.max()),
            "previous_token_max": float(np.max(scores["previous_token"])),
            "eval_loss": float(loss),
        }

    return on_eval


def formed_at(rows: list[dict[str, Any]], threshold: float) -> int | None:
    """The first evaluated step at which some head's induction score reaches `threshold`."""
    return next((r["step"] for r in rows if r["induction_max"] >= threshold), None)


def _curve(run: Path, cfg: FormationConfig, layers: int, width: int, seed: int) -> list[dict]:
    """Train one model (or reuse its finished folder) and return its metrics rows."""
    if not (run / "result.json").is_file():
        train_induction(
            cfg.model_config(layers, width), cfg.train_config(seed), run, on_eval=scorer(cfg, seed)
        )
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def run_formation(cfg: FormationConfig, out: str | Path) -> dict[str, Any]:
    """Train every (depth, seed) and write `formation.json` (curves, formation steps,
    parameter counts, config, provenance) into `out`; the folder is locked until return."""
    out = Path(out)
    widths = {2: cfg.n_embd, 1: matched_width(cfg)}
    with outdir.claimed(out, CONFIG, cfg.to_dict()):
        runs = []
        for layers in (1, 2):
            for seed in cfg.seeds:
                run = out / "runs" / f"L{layers}_s{seed}"
                rows = _curve(run, cfg, layers, widths[layers], seed)
                result = read_json(run / "result.json")
                runs.append(
                    {
                        "n_layer": layers,
                        "seed": seed,
                        "width": widths[layers],
                        "params": n_params(cfg.model_config(layers, widths[layers])),
                        "formed_at": formed_at(rows, cfg.threshold),
                        "final_induction_max": rows[-1]["induction_max"],
                        "final_acc_hard": rows[-1].get("acc_hard"),
                        "cpu_time_s": result["cpu_time_s"],
                        "wall_time_s": result["wall_time_s"],
                        "curve": rows,
                    }
                )
        doc = {"config": cfg.to_dict(), "runs": runs, "provenance": provenance()}
        atomic_write_json(out / "formation.json", doc)
    return doc


FORMATION_PANELS = (
    ("induction_max", "induction score (max over heads)"),
    ("previous_token_max", "previous-token score (max over heads)"),
    ("acc_hard", "accuracy, INDEX hard instances"),
    ("eval_loss", "held-out loss (nats)"),
)


def formation_figure(doc: dict[str, Any]) -> Figure:
    """`run_formation`'s curves against the step: one colour per depth, one line per seed,
    each run's formation step (first induction score ≥ threshold) as a dotted line."""
    from matplotlib.figure import Figure

    threshold = doc["config"]["threshold"]
    fig = Figure(figsize=(13.0, 3.4), layout="constrained")
    axes = fig.subplots(1, len(FORMATION_PANELS))
    colors = {1: "C0", 2: "C3"}
    for ax, (key, title) in zip(axes, FORMATION_PANELS, strict=True):
        for run in doc["runs"]:
            rows = run["curve"]
            color = colors[run["n_layer"]]
            label = None
            if run["seed"] == doc["runs"][0]["seed"]:
                label = f"{run['n_layer']} layer{'s' * (run['n_layer'] > 1)} (m={run['width']})"
            ax.plot(
                [r["step"] for r in rows],
                [r.get(key) for r in rows],
                color=color,
                lw=1,
                alpha=0.8,
                label=label,
            )
            if run["formed_at"] is not None:
                ax.axvline(run["formed_at"], color=color, ls=":", lw=0.9)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("training step")
    axes[0].axhline(threshold, color="0.5", ls="--", lw=0.8)
    axes[0].text(0, threshold + 0.02, f"threshold {threshold:g}", color="0.4", fontsize=7)
    axes[2].axhline(0.5, color="0.5", ls="--", lw=0.8)
    axes[2].text(0, 0.52, "chance", color="0.4", fontsize=7)
    for ax in axes[:3]:
        ax.set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=7, loc="center right")
    return fig


def write_formation_figure(doc: dict[str, Any], out: str | Path) -> Path:
    """Draw `run_formation`'s result into `out/formation.png`."""
    return save_figure(formation_figure(doc), Path(out) / "formation.png")


def formation_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per run, its curve left out: the command's table, and what --json prints."""
    keys = ("n_layer", "seed", "width", "params", "formed_at", "final_induction_max")
    return [{k: r[k] for k in (*keys, "final_acc_hard", "cpu_time_s")} for r in doc["runs"]]


def formation_tables(doc: dict[str, Any], cfg: FormationConfig, out: Path) -> list[Table]:
    return [(f"induction heads forming ({out}/formation.png)", formation_rows(doc))]


EXPERIMENT = Experiment(
    config=FormationConfig,
    run=run_formation,
    draw=write_formation_figure,
    tables=formation_tables,
    json=formation_rows,
    out_help="Folder for formation.json/.png and the runs.",
    quick="a small version (seconds; for trying it out)",
    load=saved_json("formation.json"),
)
