"""Squared-loss training of the regressor with early stopping on a validation set.

Adam on shuffled mini-batches; the validation MSE is checked about once per epoch (at
least every `min_eval_steps` steps); the learning rate halves after `lr_patience` checks
without improvement, training stops after `patience` such checks (or at `max_steps`), and
the best weights are restored. The counting is the language models' stopping rule
(`scalelab.lm.stopping`, fraction 0: a fixed patience). The learning rate is not the
warm-up-cosine schedule of the other loops: it halves on the same plateau counter, which is
what the regressor's error floor was measured with (docs/benchmarks/manifold.md). Stopping
by patience, not by the cap, is what "trained to convergence" means here: the result records
which one happened.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from scalelab.lm.stopping import StopRule, StopState
from scalelab.manifold.config import FitConfig, ScheduleConfig


@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    """Model outputs for every row of x, in batches (eval mode)."""
    model.eval()
    out = torch.cat([model(x[i : i + batch]) for i in range(0, len(x), batch)])
    model.train()
    return out


def mse(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return float(torch.mean((predict(model, x) - y) ** 2))


def fit_regressor(
    model: nn.Module,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    cfg: FitConfig,
    *,
    generator: torch.Generator,
    log: Callable[[int, dict[str, float | None]], None] | None = None,
) -> dict[str, Any]:
    """Train in place (best validation weights restored) and return a summary dict; `log`
    (e.g. `Scalars.log`) gets the losses and learning rate at every validation."""
    xt, yt = torch.as_tensor(x_train, dtype=torch.float32), torch.as_tensor(y_train).float()
    xv, yv = torch.as_tensor(x_val, dtype=torch.float32), torch.as_tensor(y_val).float()
    n = len(xt)
    batch = min(cfg.batch_size, n)
    steps_per_epoch = math.ceil(n / batch)
    eval_every = max(steps_per_epoch, cfg.min_eval_steps)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rule, state = StopRule(cfg.patience), StopState()
    state.update(mse(model, xv, yv), 0, 0.0, rule)  # the untrained weights are a candidate
    best_weights = {k: v.clone() for k, v in model.state_dict().items()}
    lr, step, stop_reason = cfg.lr, 0, "max_steps"
    t0 = time.perf_counter()
    order = torch.randperm(n, generator=generator)
    pos = 0
    while step < cfg.max_steps:
        if pos + batch > n:
            order, pos = torch.randperm(n, generator=generator), 0
        idx = order[pos : pos + batch]
        pos += batch
        loss = torch.mean((model(xt[idx]) - yt[idx]) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % eval_every:
            continue
        val = mse(model, xv, yv)
        if log is not None:
            log(step, {"loss/train_mse": float(loss.detach()), "loss/val_mse": val, "lr": lr})
        if not math.isfinite(val):
            stop_reason = "diverged"
            break
        improved, stopped = state.update(val, step, 0.0, rule)
        if improved:
            best_weights = {k: v.clone() for k, v in model.state_dict().items()}
            continue
        if stopped:
            stop_reason = "patience"
            break
        if state.bad_evals % cfg.lr_patience == 0:
            lr = max(lr / 2, cfg.min_lr)
            for group in opt.param_groups:
                group["lr"] = lr
    model.load_state_dict(best_weights)
    return {
        "val_mse": state.best_val,
        "best_step": state.best_step,
        "steps": step,
        "epochs": step / steps_per_epoch,
        "train_mse": mse(model, xt, yt),
        "stop_reason": stop_reason,
        "train_time_s": time.perf_counter() - t0,
    }


def fit_schedule(
    model: nn.Module,
    batches: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
    x_val: np.ndarray,
    y_val: np.ndarray,
    cfg: ScheduleConfig,
    *,
    log: Callable[[int, dict[str, float | None]], None] | None = None,
) -> dict[str, Any]:
    """Train in place on `batches(step)` (a mini-batch per call: shuffled epochs of a fixed
    sample, or fresh draws for the infinite-data runs); restore the best validated weights."""
    xv, yv = torch.as_tensor(x_val, dtype=torch.float32), torch.as_tensor(y_val).float()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    every = max(1, cfg.max_steps // cfg.n_evals)
    best_val, best_step = mse(model, xv, yv), 0
    best_weights = {k: v.clone() for k, v in model.state_dict().items()}
    t0 = time.perf_counter()
    loss = torch.zeros(())
    for step in range(1, cfg.max_steps + 1):
        cos = 0.5 * (1 + math.cos(math.pi * (step - 1) / cfg.max_steps))
        for group in opt.param_groups:
            group["lr"] = cfg.lr * (cfg.final_lr_ratio + (1 - cfg.final_lr_ratio) * cos)
        xb, yb = batches(step)
        loss = torch.mean((model(xb) - yb) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % every and step != cfg.max_steps:
            continue
        val = mse(model, xv, yv)
        if log is not None:
            log(step, {"loss/train_mse": float(loss.detach()), "loss/val_mse": val})
        if not math.isfinite(val):
            break
        if val < best_val:
            best_val, best_step = val, step
            best_weights = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_weights)
    return {
        "val_mse": best_val,
        "best_step": best_step,
        "steps": cfg.max_steps,
        "stop_reason": "schedule",
        "train_time_s": time.perf_counter() - t0,
    }


def epoch_batches(
    x: np.ndarray, y: np.ndarray, batch_size: int, generator: torch.Generator
) -> Callable[[int], tuple[torch.Tensor, torch.Tensor]]:
    """Mini-batches of a fixed sample, reshuffled every epoch."""
    xt, yt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y).float()
    n, batch = len(xt), min(batch_size, len(xt))
    state = {"order": torch.randperm(n, generator=generator), "pos": 0}

    def next_batch(_step: int) -> tuple[torch.Tensor, torch.Tensor]:
        if state["pos"] + batch > n:
            state["order"], state["pos"] = torch.randperm(n, generator=generator), 0
        idx = state["order"][state["pos"] : state["pos"] + batch]
        state["pos"] += batch
        return xt[idx], yt[idx]

    return next_batch
