"""Training and evaluation of induction models on freshly sampled sequences.

Every step draws a new batch (uniform sequences mixed with INDEX hard instances), so there
is no over-fitting to watch for; the loss is cross-entropy over all positions with ⊥ as a
class. Evaluation reports the four metrics of the issue on held-out samples from a separate
seeded generator: accuracy over all positions, over non-⊥ positions and at the last position
(uniform sequences), and at the last position of hard instances (the INDEX answer).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from scalelab import seeds
from scalelab.errors import CheckpointError, ConfigError
from scalelab.induction.config import InductionConfig, InductionTrainConfig
from scalelab.induction.model import InductionTransformer, loss_fn
from scalelab.induction.precision import FULL, Precision
from scalelab.induction.task import (
    accuracy_metrics,
    hard_instances,
    mixture_with_hard_rows,
    solve,
    uniform_instances,
)
from scalelab.io import append_jsonl, atomic_write, atomic_write_json, provenance, read_json
from scalelab.lm.config import warmup_cosine
from scalelab.progress import progress
from scalelab.runs import outdir
from scalelab.runs.migrate import migrate
from scalelab.scalars import Scalars


@torch.no_grad()
def evaluate(
    model: InductionTransformer,
    n: int,
    rng: np.random.Generator,
    samples: int = 512,
    precision: Precision = FULL,
) -> dict[str, float]:
    """acc_all, acc_non_bottom, acc_last on uniform sequences; acc_hard on INDEX instances."""
    model.eval()
    s = model.cfg.alphabet_size
    seqs = uniform_instances(samples, n, s, rng)
    pred = model.predict(torch.from_numpy(seqs), precision).numpy()
    metrics = accuracy_metrics(pred, solve(seqs))
    if s >= 3 and n >= 3:
        hard = hard_instances(samples, n, rng)
        hp = model.predict(torch.from_numpy(hard.seqs), precision).numpy()[:, -1]
        metrics["acc_hard"] = float((hp == hard.answers).mean())
    return metrics


def _target_metric(metrics: dict[str, float]) -> float:
    """The accuracy early stopping watches: the smaller of all-position accuracy and
    hard-instance accuracy (uniform positions alone are passed by short-range shortcuts:
    a 2-layer model at n = 128 reached acc_all 0.99 with acc_hard 0.51).

    Not `lm.stopping`'s rule, on purpose: that rule stops a run whose validation loss has
    stopped improving (patience over noisy validations of a fixed data set). Here every step
    draws fresh data, so there is nothing to over-fit and no plateau to wait for; a run stops
    when it has solved the task (a target accuracy), or at its step cap."""
    return min(metrics["acc_all"], metrics.get("acc_hard", 1.0))


def lr_at(step: int, cfg: InductionTrainConfig) -> float:
    """The shared schedule (`lm.config.warmup_cosine`): linear warm-up over `warmup_steps`,
    then cosine decay to 10% of `lr` at the last step."""
    return warmup_cosine(
        step, lr=cfg.lr, min_lr=cfg.lr / 10, warmup_steps=cfg.warmup_steps, horizon=cfg.max_steps
    )


def train_induction(
    model_cfg: InductionConfig,
    train_cfg: InductionTrainConfig,
    out_dir: str | Path | None = None,
    *,
    quiet: bool = True,
    on_eval: Callable[[InductionTransformer], dict[str, Any]] | None = None,
) -> tuple[InductionTransformer, dict[str, Any]]:
    """Train from scratch; return the model and the result dict (also `result.json`).

    With `out_dir`, writes config.json, metrics.jsonl, model.safetensors and, last,
    result.json. A folder without result.json is unfinished and is trained again.
    `on_eval(model)` adds its entries to every evaluation row (e.g. head scores).
    """
    if train_cfg.n > model_cfg.max_len:
        raise ConfigError(f"n={train_cfg.n} exceeds the model's max_len={model_cfg.max_len}")
    if train_cfg.hard_fraction > 0 and model_cfg.alphabet_size < 3:
        raise ConfigError("hard instances need alphabet_size >= 3; or set hard_fraction 0")
    model, opt = _model_and_optimizer(model_cfg, train_cfg)
    data_rng = np.random.default_rng([train_cfg.seed, seeds.INDUCTION_DATA])
    eval_seed = [train_cfg.seed, seeds.INDUCTION_EVAL]
    train_prec = (
        Precision(train_cfg.train_bits, train_cfg.precision_mode, straight_through=True)
        if train_cfg.train_bits
        else FULL
    )
    t0, c0 = time.perf_counter(), time.process_time()
    metrics: dict[str, float] = {}
    reached: dict[str, float] | None = None
    step = 0
    s = model_cfg.alphabet_size
    with _run_folder(out_dir, model_cfg, train_cfg) as out:
        with (
            Scalars(out) as scalars,
            progress("induction train", train_cfg.max_steps, quiet=quiet) as advance,
        ):
            for step in range(1, train_cfg.max_steps + 1):
                model.train()
                seqs, hard_rows = _batch(train_cfg, s, data_rng)
                x, y = torch.from_numpy(seqs), torch.from_numpy(solve(seqs))
                lr = lr_at(step - 1, train_cfg)
                loss = _step(model, opt, x, y, train_prec, lr, train_cfg, hard_rows)
                if step % train_cfg.eval_interval == 0 or step == train_cfg.max_steps:
                    metrics = evaluate(
                        model, train_cfg.n, np.random.default_rng(eval_seed), train_cfg.eval_samples
                    )
                    row = {
                        "step": step,
                        "loss": float(loss.detach()),
                        **metrics,
                        **(on_eval(model) if on_eval is not None else {}),
                        "wall_s": time.perf_counter() - t0,
                        "cpu_s": time.process_time() - c0,
                    }
                    if out is not None:
                        append_jsonl(out / "metrics.jsonl", row)
                    lr = opt.param_groups[0]["lr"]
                    accs = {f"accuracy/{k}": v for k, v in metrics.items()}
                    scalars.log(step, {"loss/train": row["loss"], "lr": lr, **accs})
                    advance(train_cfg.eval_interval, info=f"loss {float(loss.detach()):.3f}")
                    target = train_cfg.target_acc
                    if target is not None and _target_metric(metrics) >= target:
                        reached = row
                        break
        result = {
            **metrics,
            "steps": step,
            "final_loss": float(loss.detach()),
            "stop_reason": "target" if reached else "max_steps",
            "wall_time_s": time.perf_counter() - t0,
            "cpu_time_s": time.process_time() - c0,
            "params": sum(p.numel() for p in model.parameters()),
        }
        if out is not None:
            _save_run(out, model, result)
    return model.eval(), result


def _model_and_optimizer(
    model_cfg: InductionConfig, train_cfg: InductionTrainConfig
) -> tuple[InductionTransformer, torch.optim.AdamW]:
    """A seeded initialisation (the caller's RNG untouched) and its AdamW."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(train_cfg.seed)
        model = InductionTransformer(model_cfg)
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=train_cfg.lr,
        betas=(train_cfg.beta1, train_cfg.beta2),
        weight_decay=train_cfg.weight_decay,
    )
    return model, opt


@contextlib.contextmanager
def _run_folder(
    out_dir: str | Path | None, model_cfg: InductionConfig, train_cfg: InductionTrainConfig
) -> Iterator[Path | None]:
    """The run folder, claimed for this config, with no metrics yet (None: no folder); its
    lock is released when the block ends, normally or not."""
    if out_dir is None:
        yield None
        return
    run_cfg = {"model": model_cfg.to_dict(), "train": train_cfg.to_dict()}
    # A folder with another config is refused; this one is redone.
    with outdir.claimed(out_dir, "config.json", run_cfg) as out:
        (out / "metrics.jsonl").unlink(missing_ok=True)
        yield out


def _batch(
    cfg: InductionTrainConfig, alphabet_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One training batch and its hard rows: the mixture at n (the stream of earlier runs),
    or with `min_n` at a length drawn uniformly from [min_n, n] (one more draw first)."""
    n = cfg.n if cfg.min_n is None else int(rng.integers(cfg.min_n, cfg.n + 1))
    return mixture_with_hard_rows(cfg.batch_size, n, alphabet_size, rng, cfg.hard_fraction)


def _step(
    model: InductionTransformer,
    opt: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    prec: Precision,
    lr: float,
    cfg: InductionTrainConfig,
    hard_rows: np.ndarray,
) -> torch.Tensor:
    """One optimizer step at learning rate `lr`; returns the loss: cross-entropy over every
    position, plus `last_weight` times that at the last position of the hard rows."""
    for group in opt.param_groups:
        group["lr"] = lr
    logits = model(x, prec)
    loss = loss_fn(logits, y, model.cfg.alphabet_size)
    if cfg.last_weight and len(hard_rows):
        rows = torch.from_numpy(hard_rows)
        last = loss_fn(logits[rows, -1:], y[rows, -1:], model.cfg.alphabet_size)
        loss = loss + cfg.last_weight * last
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    return loss


def _save_run(out: Path, model: InductionTransformer, result: dict[str, Any]) -> None:
    """The weights, provenance and, last, result.json (a folder without it is unfinished)."""
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    atomic_write(out / "model.safetensors", lambda p: save_file(state, str(p)))
    atomic_write_json(out / "provenance.json", provenance())
    atomic_write_json(out / "result.json", result)


def load_induction_model(run_dir: str | Path) -> InductionTransformer:
    """Load a trained model from a run folder (config.json + model.safetensors)."""
    run_dir = Path(run_dir)
    path = run_dir / "config.json"
    try:
        cfg = InductionConfig.from_dict(migrate(read_json(path))["model"])
        path = run_dir / "model.safetensors"
        state = load_file(str(path))
    except (OSError, KeyError, ValueError, TypeError, SafetensorError) as err:
        raise CheckpointError(
            f"cannot load {path} ({type(err).__name__}: {err}); "
            "point at a folder written by `scalelab induction train`"
        ) from err
    model = InductionTransformer(cfg)
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        raise CheckpointError(f"{run_dir}/model.safetensors does not match its config") from err
    return model.eval()
