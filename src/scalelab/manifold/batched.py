"""Many regressors of one size trained together as one batched model, each as if alone.

Why: the regressors are tiny (10³–10⁵ parameters), so on a CPU much of a step of one of them is
per-operation overhead. E of them stacked (`torch.func.stack_module_state`) and run through one
vmapped forward pass share that overhead (`bench/manifold_batched.py` measures the ratio).

Each member keeps its own training sample, validation set, batch order, learning rate, best
checkpoint and stopping point: the rule of `train.fit_regressor`, applied per member, so a
member ends where it would have alone (`tests/test_manifold_batched.py` checks the losses and
weights against one-at-a-time training). Adam is written out with one learning rate per member
(torch's Adam takes one per tensor, and the members share tensors), in the order of torch's
own arithmetic; a member that has stopped gets learning rate 0, so its weights stay put.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from scalelab.lm.stopping import StopRule, StopState
from scalelab.manifold.config import FitConfig, ScheduleConfig

BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults, as `fit_regressor` uses them
EPS = 1e-8


@dataclass(frozen=True)
class Member:
    """One member's data: training sample, validation set (float32 tensors are made here)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


class Stacked:
    """E models of one architecture as stacked tensors [E, ...] and one vmapped forward."""

    def __init__(self, models: Sequence[nn.Module]) -> None:
        params, buffers = stack_module_state(list(models))
        self.params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        self.buffers = buffers
        self.base = copy.deepcopy(models[0]).to("meta")
        self.size = len(models)

        def one(p: dict, b: dict, x: torch.Tensor) -> torch.Tensor:
            return functional_call(self.base, (p, b), (x,))

        self._forward = vmap(one)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x [E, B, D] (member e reads x[e]) -> [E, B]."""
        return self._forward(self.params, self.buffers, x)

    @torch.no_grad()
    def predict(self, x: torch.Tensor, batch: int = 4096) -> torch.Tensor:
        """Outputs [E, n] for inputs [E, n, D] (or [n, D], shared by every member)."""
        if x.dim() == 2:
            x = x.expand(self.size, *x.shape)
        return torch.cat([self(x[:, i : i + batch]) for i in range(0, x.shape[1], batch)], 1)

    def weights(self, e: int) -> dict[str, torch.Tensor]:
        """A copy of member e's parameters (the names of the model's own)."""
        return {k: v[e].detach().clone() for k, v in self.params.items()}


@torch.no_grad()
def load_weights(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Copy `Stacked.weights(e)` into one model (its buffers are fixed and stay as built)."""
    for name, p in model.named_parameters():
        p.copy_(weights[name])


class MemberAdam:
    """Adam over stacked parameters with one learning rate per member (module docstring)."""

    def __init__(self, params: dict[str, torch.Tensor], weight_decay: float = 0.0) -> None:
        self.params = list(params.values())
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.weight_decay = weight_decay
        self.t = 0

    @torch.no_grad()
    def step(self, lr: torch.Tensor) -> None:
        """One step; lr [E] (0 leaves a member's weights unchanged)."""
        self.t += 1
        b1, b2 = BETAS
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            g = p.grad
            if self.weight_decay:
                g = g.add(p, alpha=self.weight_decay)
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / math.sqrt(c2)).add_(EPS)
            step = (lr / c1).view(-1, *([1] * (p.dim() - 1)))
            p.sub_(step * m / denom)
            p.grad = None


class _Data:
    """The members' samples stacked [E, n, D], and each member's shuffled epochs (the same
    draws from its generator as `train.epoch_batches` makes alone)."""

    def __init__(self, members: Sequence[Member], batch_size: int, generators: Sequence) -> None:
        sizes = {(len(m.x_train), len(m.x_val)) for m in members}
        if len(sizes) != 1 or len(generators) != len(members):
            raise ValueError(
                "members need one training size n, one validation size and a generator each"
            )

        def f32(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(a, dtype=torch.float32)

        self.xt = torch.stack([f32(m.x_train) for m in members])
        self.yt = torch.stack([f32(m.y_train) for m in members])
        self.xv = torch.stack([f32(m.x_val) for m in members])
        self.yv = torch.stack([f32(m.y_val) for m in members])
        self.n = self.xt.shape[1]
        self.batch = min(batch_size, self.n)
        self.generators = generators
        self.orders = [torch.randperm(self.n, generator=g) for g in generators]
        self.pos = 0
        self.rows = torch.arange(len(members))[:, None]

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.pos + self.batch > self.n:
            self.orders = [torch.randperm(self.n, generator=g) for g in self.generators]
            self.pos = 0
        idx = torch.stack([o[self.pos : self.pos + self.batch] for o in self.orders])
        self.pos += self.batch
        return self.xt[self.rows, idx], self.yt[self.rows, idx]


def _step(stacked: Stacked, opt: MemberAdam, data: _Data, lr: torch.Tensor) -> torch.Tensor:
    xb, yb = data.next()
    losses = torch.mean((stacked(xb) - yb) ** 2, dim=1)
    losses.sum().backward()  # member e's gradient is its own loss's
    opt.step(lr)
    return losses.detach()


def _val(stacked: Stacked, data: _Data) -> list[float]:
    return torch.mean((stacked.predict(data.xv) - data.yv) ** 2, dim=1).tolist()


@torch.no_grad()
def _train_mse(model: nn.Module, data: _Data, e: int) -> float:
    model.eval()
    out = float(torch.mean((model(data.xt[e]) - data.yt[e]) ** 2))
    model.train()
    return out


def fit_members(
    models: Sequence[nn.Module],
    members: Sequence[Member],
    cfg: FitConfig,
    generators: Sequence[torch.Generator],
    *,
    log: Callable[[int, list[float]], None] | None = None,
) -> list[dict[str, Any]]:
    """Train every model on its member's data by `fit_regressor`'s rule (plateau LR halving,
    patience), together; each member's best validation weights are restored into its model.
    Members share one training size n and validation size. One summary per member, as
    `fit_regressor` returns; `log(step, val_mses)` at every validation."""
    if len(models) != len(members):
        raise ValueError("fit_members needs one model per member")
    E = len(members)
    data = _Data(members, cfg.batch_size, generators)
    steps_per_epoch = math.ceil(data.n / data.batch)
    eval_every = max(steps_per_epoch, cfg.min_eval_steps)
    stacked = Stacked(models)
    opt = MemberAdam(stacked.params, cfg.weight_decay)
    rule = StopRule(cfg.patience)
    states = [StopState() for _ in range(E)]
    for s, v in zip(states, _val(stacked, data), strict=True):
        s.update(v, 0, 0.0, rule)  # the untrained weights are a candidate
    best = [stacked.weights(e) for e in range(E)]
    lr = [cfg.lr] * E
    active = [True] * E
    stopped_at = [cfg.max_steps] * E
    reason = ["max_steps"] * E
    t0 = time.perf_counter()
    step = 0
    while step < cfg.max_steps and any(active):
        _step(stacked, opt, data, torch.tensor([lr[e] if active[e] else 0.0 for e in range(E)]))
        step += 1
        if step % eval_every:
            continue
        vals = _val(stacked, data)
        if log is not None:
            log(step, vals)
        for e in range(E):
            if not active[e]:
                continue
            if not math.isfinite(vals[e]):
                active[e], stopped_at[e], reason[e] = False, step, "diverged"
                continue
            improved, stopped = states[e].update(vals[e], step, 0.0, rule)
            if improved:
                best[e] = stacked.weights(e)
                continue
            if stopped:
                active[e], stopped_at[e], reason[e] = False, step, "patience"
                continue
            if states[e].bad_evals % cfg.lr_patience == 0:
                lr[e] = max(lr[e] / 2, cfg.min_lr)
    for e in range(E):
        if active[e]:
            stopped_at[e] = step
    elapsed = time.perf_counter() - t0
    out = []
    for e, model in enumerate(models):
        load_weights(model, best[e])
        out.append(
            {
                "val_mse": states[e].best_val,
                "best_step": states[e].best_step,
                "steps": stopped_at[e],
                "epochs": stopped_at[e] / steps_per_epoch,
                "train_mse": _train_mse(model, data, e),
                "stop_reason": reason[e],
                "train_time_s": elapsed / E,
            }
        )
    return out


def fit_members_schedule(
    models: Sequence[nn.Module],
    members: Sequence[Member],
    cfg: ScheduleConfig,
    generators: Sequence[torch.Generator],
    *,
    log: Callable[[int, list[float]], None] | None = None,
) -> list[dict[str, Any]]:
    """Train every model on its member's data by `fit_schedule`'s rule (cosine decay over
    `cfg.max_steps`, the best of `cfg.n_evals` validations restored) on shuffled epochs of its
    sample (`epoch_batches`), together. One summary per member, as `fit_schedule` returns
    (with `train_mse`)."""
    if len(models) != len(members):
        raise ValueError("fit_members_schedule needs one model per member")
    E = len(members)
    data = _Data(members, cfg.batch_size, generators)
    stacked = Stacked(models)
    opt = MemberAdam(stacked.params)
    every = max(1, cfg.max_steps // cfg.n_evals)
    best_val = _val(stacked, data)
    best_step = [0] * E
    best = [stacked.weights(e) for e in range(E)]
    t0 = time.perf_counter()
    for step in range(1, cfg.max_steps + 1):
        cos = 0.5 * (1 + math.cos(math.pi * (step - 1) / cfg.max_steps))
        lr = cfg.lr * (cfg.final_lr_ratio + (1 - cfg.final_lr_ratio) * cos)
        _step(stacked, opt, data, torch.full((E,), lr))
        if step % every and step != cfg.max_steps:
            continue
        vals = _val(stacked, data)
        if log is not None:
            log(step, vals)
        for e in range(E):
            if vals[e] < best_val[e]:  # a non-finite loss never improves
                best_val[e], best_step[e], best[e] = vals[e], step, stacked.weights(e)
    elapsed = time.perf_counter() - t0
    out = []
    for e, model in enumerate(models):
        load_weights(model, best[e])
        out.append(
            {
                "val_mse": best_val[e],
                "best_step": best_step[e],
                "steps": cfg.max_steps,
                "stop_reason": "schedule",
                "train_time_s": elapsed / E,
                "train_mse": _train_mse(model, data, e),
            }
        )
    return out
