"""Validation and test losses of a GPT over fixed windows, split over processes."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch

from scalelab.lm.data import windows
from scalelab.lm.distributed import DistContext
from scalelab.lm.model import GPT


@torch.no_grad()
def evaluate(
    model: GPT,
    tokens: np.ndarray,
    starts: np.ndarray,
    batch_size: int,
    ctx: DistContext,
    dtype: torch.dtype,
) -> float:
    """Mean next-token cross-entropy (nats/token) over the windows at `starts`, split over
    the processes and summed."""
    return evaluate_with_se(model, tokens, starts, batch_size, ctx, dtype)[0]


@torch.no_grad()
def evaluate_with_se(
    model: GPT,
    tokens: np.ndarray,
    starts: np.ndarray,
    batch_size: int,
    ctx: DistContext,
    dtype: torch.dtype,
) -> tuple[float, float]:
    """`evaluate`, and the standard error of that mean over the windows (the sampling noise
    of one validation, which the stopping rule measures improvements against)."""
    was_training = model.training
    model.eval()
    block = model.config.block_size
    mine = starts[ctx.rank :: ctx.world_size]
    # token-weighted loss sum, tokens, and per-window mean losses: sum, sum of squares, count
    total = torch.zeros(5, dtype=torch.float64, device=ctx.device)
    for i in range(0, len(mine), batch_size):
        x, y = windows(tokens, mine[i : i + batch_size], block)
        x, y = x.to(ctx.device), y.to(ctx.device)
        with _autocast(ctx.device, dtype):
            logits, loss = model(x, y)
        per_window = torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), y.flatten(), reduction="none"
        )
        per_window = per_window.view(len(x), -1).mean(1).double()
        total[0] += loss.double() * y.numel()
        total[1] += y.numel()
        total[2] += per_window.sum()
        total[3] += per_window.square().sum()
        total[4] += len(x)
    ctx.all_reduce_sum(total)
    model.train(was_training)
    n = total[4].item()
    var = max(total[3].item() / n - (total[2].item() / n) ** 2, 0.0) * n / max(n - 1, 1)
    return (total[0] / total[1]).item(), math.sqrt(var / n)


def _autocast(device: torch.device, dtype: torch.dtype) -> contextlib.AbstractContextManager:
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)
